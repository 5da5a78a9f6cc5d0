"""The stubs start the drain as `python -S` (docs/HOOKS.md, "Starting Python"): site.py's start-up
work is skipped, and the package and its libraries are found where install found them. Every
doubt (another interpreter in the helper's #! line, a script without the fast start, directories
that moved) starts the helper as it is. Real stubs rendered by install's own code around the
real console script, run by sh and dash with the real drain behind them; what Python imported
is read from its own -X importtime report (PYTHONPROFILEIMPORTTIME)."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import hermetic
from helpers import context_of, run_cli
from install_fixtures import CONSOLE_SCRIPT
from git_korus_mail.wiring import stub as hookstub

SHELLS = [s for s in ("sh", "dash") if shutil.which(s)]
CLIENTS = {"claude": [], "codex": ["--client=codex"]}


def render(client, helper):
    if client == "claude":
        from git_korus_mail.clients.claude import stub
    else:
        from git_korus_mail.clients.codex import stub
    return stub.render_stub(str(helper))


def write_stub(clone, client, helper=CONSOLE_SCRIPT, edit=None):
    text = render(client, helper)
    if edit is not None:
        text = edit(text)
    path = clone.base / f"{client}-hook"
    path.write_text(text)
    path.chmod(0o700)
    return path


def run(stub, event, cwd, shell="sh", session="s-start"):
    """(parsed answer or None, the modules Python imported) for one event through `stub`."""
    payload = hermetic.payload(event, session, cwd)
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    proc = subprocess.run([shell, str(stub), event], input=json.dumps(payload), capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "git_korus_mail.core.drain" in imported, proc.stderr[-2000:]  # the drain ran, and was seen
    out = proc.stdout.strip()
    return (json.loads(out) if out else None), imported


def send(clone, text):
    run_cli("send", "--to", "web", "--", text, cwd=clone.main, check=True)


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("shell", SHELLS)
def test_the_stub_starts_the_drain_without_site_and_delivers(clone, client, shell):
    stub = write_stub(clone, client)
    send(clone, "through the fast start")
    answer, imported = run(stub, "UserPromptSubmit", clone.web, shell)
    assert "through the fast start" in context_of(answer)
    assert "site" not in imported and "_distutils_hack" not in imported, sorted(imported)


def test_a_consume_under_the_fast_start_finds_the_libraries_too(clone):
    """Stop journals the consume; the journal's rotation lock is portalocker's: the directory of
    the package's libraries is on the path as well as the package's own."""
    stub = write_stub(clone, "claude")
    send(clone, "consumed under -S")
    answer, _ = run(stub, "UserPromptSubmit", clone.web)
    assert "consumed under -S" in context_of(answer)
    _, imported = run(stub, "Stop", clone.web)
    assert "site" not in imported
    code = "import portalocker, sys; print(portalocker.__file__)"
    where = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    python, dirs = hookstub.fast_start(str(CONSOLE_SCRIPT))
    assert os.path.dirname(os.path.dirname(where.strip())) in dirs
    receipts = list((clone.mail_root / "box").glob("*/receipts/*.json"))
    assert len(receipts) == 1 and json.loads(receipts[0].read_text())["session"] == "s-start"


def _moved(text):
    """The stub as after a reinstall moved the package: its directories are gone."""
    return re.sub(r"^pypath=.*$", "pypath='/nonexistent/korus-moved:/nonexistent/site-packages'",
                  text, count=1, flags=re.M)


def test_directories_that_moved_get_sites_own_start(clone):
    stub = write_stub(clone, "claude", edit=_moved)
    send(clone, "after a move")
    answer, imported = run(stub, "UserPromptSubmit", clone.web)
    assert "after a move" in context_of(answer)
    assert "site" in imported  # started -S, found the directories wrong, and ran site itself


def test_a_helper_on_another_interpreter_is_started_as_it_is(clone, tmp_path):
    """The helper's #! line no longer names the interpreter install saw (a reinstall onto
    another Python): the stub does not start that interpreter with -S."""
    helper = tmp_path / "bin" / "git-korus-mail"
    helper.parent.mkdir()
    shutil.copy2(CONSOLE_SCRIPT, helper)
    stub = write_stub(clone, "claude", helper)
    assert "python=''" not in stub.read_text()  # install's view: this helper starts fast
    lines = helper.read_text().split("\n", 1)
    venv_bin = os.path.dirname(lines[0][2:])
    other = next(os.path.join(venv_bin, n) for n in ("python", "python3") if os.path.join(venv_bin, n) != lines[0][2:])
    assert os.path.exists(other)  # the venv's other name for its interpreter: another #! line, same venv
    helper.write_text(f"#!{other}\n{lines[1]}")
    send(clone, "another interpreter")
    answer, imported = run(stub, "UserPromptSubmit", clone.web)
    assert "another interpreter" in context_of(answer)
    assert "site" in imported


def test_a_helper_without_the_fast_start_line_is_started_as_it_is(clone, tmp_path):
    """An older script (no `fast-start` line) would not know the stub's variable: install bakes
    no interpreter for it, and the stub, reading the line itself, would not use one either."""
    helper = tmp_path / "bin" / "git-korus-mail"
    helper.parent.mkdir()
    first, _marker, rest = CONSOLE_SCRIPT.read_text().split("\n", 2)
    helper.write_text(f"{first}\n{rest}")
    helper.chmod(0o755)
    assert hookstub.fast_start(str(helper)) == ("", [])
    stub = write_stub(clone, "claude", CONSOLE_SCRIPT)  # rendered for the current script ...
    stub.write_text(stub.read_text().replace(f"helper={_q(CONSOLE_SCRIPT)}", f"helper={_q(helper)}"))
    send(clone, "older script")
    answer, imported = run(stub, "UserPromptSubmit", clone.web)  # ... run with the older one
    assert "older script" in context_of(answer)
    assert "site" in imported


def _q(path):
    from git_korus_mail.shell import sh_quote
    return sh_quote(str(path))


def test_fast_start_refuses_what_the_stub_could_not_run_as_python(tmp_path):
    """pip writes a /bin/sh trampoline for a long or spaced interpreter path; a #! line with
    arguments; an interpreter other than install's own: none is started with -S."""
    marker = hookstub.FAST_START_LINE.decode() + "\n"
    cases = {
        "trampoline": "#!/bin/sh\n'''exec' \"/a b/python\" \"$0\" \"$@\"\n' '''\n",
        "arguments": f"#!{sys.executable} -E\n{marker}",
        "other": f"#!{shutil.which('true')}\n{marker}",
        "no-newline": f"#!{sys.executable}",
    }
    for name, text in cases.items():
        p = tmp_path / name
        p.write_text(text)
        assert hookstub.fast_start(str(p)) == ("", []), name
    python, dirs = hookstub.fast_start(str(CONSOLE_SCRIPT))
    assert os.path.samefile(python, sys.executable)
    assert os.path.isfile(os.path.join(dirs[0], "git_korus_mail", "__init__.py"))


def test_the_stub_variable_does_not_reach_the_drains_children(clone, tmp_path):
    """KORUS_MAIL_PYPATH is for the script's start only: a process the drain starts (git, a
    helper) must see the environment as the hook gave it."""
    python, dirs = hookstub.fast_start(str(CONSOLE_SCRIPT))
    code = ("import os, runpy, sys; runpy.run_path(sys.argv[1], run_name='not-main'); "  # its start, no command
            "print(repr(os.environ.get('KORUS_MAIL_PYPATH')), 'git_korus_mail' in sys.modules)")
    env = dict(os.environ, KORUS_MAIL_PYPATH=os.pathsep.join(dirs))
    out = subprocess.run([python, "-S", "-c", code, str(CONSOLE_SCRIPT)], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    assert out == ["None", "False"]  # popped at the start; the script's import comes only under __main__


def test_the_scripts_second_line_is_the_one_marker_install_bakes():
    """The marker lives in one constant (wiring/stub.FAST_START_LINE), baked into the stub as its
    `fast_start` value; the script's second line is what it names (docs/HOOKS.md, "Starting Python")."""
    from pathlib import Path
    script = Path(__file__).resolve().parent.parent / "scripts" / "git-korus-mail"
    assert script.read_bytes().split(b"\n")[1] == hookstub.FAST_START_LINE
    assert "fast_start=" + _q(hookstub.FAST_START_LINE.decode()) + "\n" in hookstub.values(
        "claude", str(CONSOLE_SCRIPT), opening_event="SessionStart", end_event="Stop")
    assert "fast-start=1" not in open(hookstub.template_path(hookstub.TEMPLATE)).read()
