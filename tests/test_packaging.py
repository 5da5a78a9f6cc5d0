"""The product as users meet it: the built wheel, installed with pipx, run through git.

Builds the wheel from this tree, installs it with pipx into temporary PIPX_HOME,
PIPX_BIN_DIR, PIPX_MAN_DIR and completion dir, and checks that the command, the
man page and the completions are linked and work. Needs the package registry
(pipx installs pygit2 and friends into the app's venv).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO_ROOT

# slow tier, main Python only (docs/TESTING.md): a pure-Python wheel; each .venv-3.X is itself an install of this tree
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipx_install(tmp_path_factory):
    base = tmp_path_factory.mktemp("pipx")
    wheels = base / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                            str(REPO_ROOT)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    [wheel] = wheels.glob("git_korus_mail-*.whl")
    env = dict(os.environ)
    env.update(PIPX_HOME=str(base / "home"), PIPX_BIN_DIR=str(base / "bin"), PIPX_MAN_DIR=str(base / "man"),
               PIPX_COMPLETION_DIR=str(base / "share"), PIPX_DEFAULT_PYTHON=sys.executable)
    pipx = [sys.executable, "-m", "pipx"]
    if subprocess.run(pipx + ["--version"], capture_output=True).returncode != 0:
        if sys.version_info < (3, 10):
            pytest.skip("pipx 1.16 (the test extra's) needs Python 3.10; tests/run.sh runs this test on the main Python")
        pytest.fail("pipx is not installed: it is part of the test extra (pip install -e '.[test]')")
    proc = subprocess.run(pipx + ["install", str(wheel)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return base


def test_command_is_linked_and_runs_through_git(pipx_install, tmp_path):
    exe = pipx_install / "bin" / "git-korus-mail"
    assert exe.exists() and os.access(exe, os.X_OK)
    # our shipped script, not a generated entry-point wrapper (which imports re on every hook)
    script = exe.resolve().read_text()
    assert "import re" not in script and "from git_korus_mail.cli import main" in script
    env = dict(os.environ, PATH=f"{pipx_install / 'bin'}:/usr/bin:/bin")
    proc = subprocess.run(["git", "korus-mail", "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    from git_korus_mail import __version__
    assert proc.returncode == 0 and proc.stdout.strip() == f"git-korus-mail {__version__}", proc.stderr


def test_man_page_and_completions_are_linked(pipx_install):
    man = pipx_install / "man" / "man1" / "git-korus-mail.1"
    assert man.exists() and ".TH" in man.read_text()
    share = pipx_install / "share"
    for rel in ("bash-completion/completions/git-korus-mail", "zsh/site-functions/_git-korus-mail",
                "fish/vendor_completions.d/git-korus-mail.fish"):
        assert (share / rel).exists(), rel
    assert "_git_korus_mail" in (share / "bash-completion/completions/git-korus-mail").read_text()


def test_git_help_opens_our_man_page(pipx_install, tmp_path):
    if shutil.which("man") is None:
        pytest.skip("man is not installed (Debian: man-db); tests/run.sh installs it in CI")
    env = dict(os.environ, PATH=f"{pipx_install / 'bin'}:/usr/bin:/bin", MANPATH=f"{pipx_install / 'man'}:",
               MANPAGER="cat", PAGER="cat", MANWIDTH="80", GIT_PAGER="cat")
    for args in (["help", "korus-mail"], ["korus-mail", "--help"]):
        proc = subprocess.run(["git", *args], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "GIT-KORUS-MAIL(1)" in proc.stdout and "git korus-mail send" in proc.stdout.replace("\u2010", "-")


def test_completion_command_prints_the_shipped_scripts(pipx_install, tmp_path):
    exe = pipx_install / "bin" / "git-korus-mail"
    for shell, needle in (("bash", "_git_korus_mail"), ("zsh", "#compdef git-korus-mail"),
                          ("fish", "__git_korus_mail_in_cmd")):
        proc = subprocess.run([str(exe), "completion", shell], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0 and needle in proc.stdout, (shell, proc.stderr)


def _setup_lines(stdout):
    """{shell: line} from install's "completion  <shell>: ...; set it up once with:" blocks."""
    lines = stdout.splitlines()
    out = {}
    for i, ln in enumerate(lines):
        if ln.startswith("completion  ") and ln.endswith("set it up once with:"):
            out[ln.split()[1].rstrip(":")] = lines[i + 1].strip()
    return out


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_after_a_plain_pipx_install_the_printed_setup_line_makes_git_korus_mail_complete(
        pipx_install, tmp_path, clone, shell):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (Debian: {shell}); tests/run.sh installs it in CI")
    from types import SimpleNamespace
    home = tmp_path / "user-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "ZDOTDIR")}
    env.update(HOME=str(home), PIPX_COMPLETION_DIR=str(pipx_install / "share"),
               PATH=f"{pipx_install / 'bin'}:/usr/bin:/bin")
    if shell == "zsh":
        (home / ".zshrc").write_text("# a user's own zshrc, completion set up the usual way\n"
                                     "autoload -Uz compinit && compinit\n")
    proc = subprocess.run(["git", "korus-mail", "install"], cwd=clone.main, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = _setup_lines(proc.stdout)
    assert shell in lines, proc.stdout
    share = pipx_install / "share"
    if shell == "zsh":
        assert lines["zsh"] == (f"echo 'fpath=({share}/zsh/site-functions $fpath); autoload -Uz compinit "
                                f"&& compinit' >> ~/.zshrc")
    else:
        assert lines["fish"] == (f"mkdir -p ~/.config/fish/conf.d && ln -sf {share}/fish/vendor_completions.d/"
                                 f"git-korus-mail.fish ~/.config/fish/conf.d/git-korus-mail.fish")
    def completes():
        if shell == "zsh":
            from test_completions import zsh_complete, zsh_has_git
            repo = SimpleNamespace(env=env, main=clone.main)
            if not zsh_has_git(repo):
                pytest.skip("zsh's own _git completion is not installed")
            return zsh_complete(repo, "git korus-mail s", mode="rc", tmp_path=tmp_path, env=env)
        p = subprocess.run(["fish", "-c", "complete -C $argv[1]", "git korus-mail s"], cwd=clone.main, env=env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return sorted({c.split("\t")[0] for c in p.stdout.splitlines()})

    assert completes() != ["send", "status"]  # what a plain pipx install leaves: no completion
    # the user runs the line once, as printed
    ran = subprocess.run(["sh", "-c", lines[shell]], cwd=home, env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    again = subprocess.run(["git", "korus-mail", "install"], cwd=clone.main, env=env, capture_output=True, text=True)
    assert shell not in _setup_lines(again.stdout), again.stdout  # once set up, not printed again
    # and the real shell now completes `git korus-mail <TAB>`
    assert completes() == ["send", "status"]


def test_the_stubs_advice_reinstalls_a_pipx_install_whose_python_is_gone(pipx_install, tmp_path, clone):
    """The README's install, then the venv's interpreter disappears (a Python upgrade): the hook
    says so, and the command it gives, run as printed, makes mail flow again."""
    import json
    home = tmp_path / "user-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env.update(HOME=str(home), PIPX_HOME=str(pipx_install / "home"), PIPX_BIN_DIR=str(pipx_install / "bin"),
               PIPX_MAN_DIR=str(pipx_install / "man"), PIPX_COMPLETION_DIR=str(pipx_install / "share"),
               PATH=f"{pipx_install / 'bin'}:/usr/local/bin:/usr/bin:/bin")
    env.pop("PIPX_DEFAULT_PYTHON", None)
    if shutil.which("pipx", path=env["PATH"]) or not shutil.which("python3", path=env["PATH"]):
        pytest.skip("needs a python3 and no pipx on the system PATH")
    exe = pipx_install / "bin" / "git-korus-mail"
    proc = subprocess.run([str(exe), "install"], cwd=clone.main, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stub = clone.mail_root / "hooks" / "claude-hook"

    def session_start():
        payload = json.dumps({"session_id": "s-adv-1", "transcript_path": "", "cwd": str(clone.main),
                              "hook_event_name": "SessionStart", "source": "startup"})
        res = subprocess.run(["/bin/sh", "-c", f"'{stub}' SessionStart"], cwd=clone.main, env=env, input=payload,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    venv_bin = Path(os.path.realpath(exe)).parent
    for p in venv_bin.glob("python*"):  # every interpreter link dangles once the base Python is gone
        p.unlink()
    answer = session_start()
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "its Python interpreter" in text and "is gone" in text, text
    advice = text.split("Fix: reinstall it: ", 1)[1]
    assert advice.startswith("python3 -m venv ~/.cache/korus-pipx && "), advice
    assert "pipx install git-korus-mail" not in advice
    fixed = subprocess.run(["sh", "-c", advice], cwd=home, env=env, capture_output=True, text=True, timeout=900)
    assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr[-2000:]
    text = session_start()["hookSpecificOutput"]["additionalContext"]
    assert "is empty" in text and "not being delivered" not in text, text
