"""Issue 25 with the real Codex CLI: doctor's fix lines, once run, make their problem go away,
with Codex's own home where a person has it (~/.codex, no CODEX_HOME)."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

HELPER = os.path.join(os.path.dirname(sys.executable), "git-korus-mail")


def cli(*args, cwd, env):
    path = "/usr/bin:/bin"  # no codex on it: only $KORUS_MAIL_CODEX names one, where set
    full = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "KORUS_MAIL_CODEX")}
    full.update(PATH=path, **env)
    return subprocess.run([HELPER, *args], cwd=str(cwd), env=full, capture_output=True, text=True, timeout=120)


def problems(cwd, env):
    proc = cli("doctor", "--json", cwd=cwd, env=env)
    return [f for f in json.loads(proc.stdout)["findings"] if not f["ok"]]


def test_codex_wiring_in_the_default_home_and_doctor_without_codex(clone, codex_bin):
    home_file = os.path.join(os.environ["HOME"], ".codex", "hooks.json")
    with_codex = {"KORUS_MAIL_CODEX": codex_bin}
    proc = cli("install", "--client", "codex", cwd=clone.main, env=with_codex)
    # ~/.codex/hooks.json, the user's own file, was once taken for an old project file and deleted
    assert proc.returncode == 0 and "deleted" not in proc.stdout, proc.stdout + proc.stderr
    assert os.path.isfile(home_file)
    assert problems(clone.main, with_codex) == []
    # codex gone from PATH: one problem, whose fix is codex itself, not `install` once per file
    found = problems(clone.main, {})
    assert [(f["where"], f["fix"]) for f in found] == [
        ("codex", "put codex on PATH, or set KORUS_MAIL_CODEX=<path to codex>, so its app-server can be asked")], found
    assert problems(clone.main, with_codex) == []  # the fix, done: the problem is gone
