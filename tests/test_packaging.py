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

import pytest

from helpers import REPO_ROOT

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
            pytest.skip("pipx 1.16 (the test extra's) needs Python 3.10; tests/run.sh runs this test on 3.10+")
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
