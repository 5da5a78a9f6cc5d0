"""The stub's fast-path key (KORUS_MAIL_FAST_KEY, handed by hooks/hook.sh to one drain run for
Codex: docs/HOOKS.md, "Codex's key: the payload's head") is never passed on to a process the
drain starts (commands/drain.own_environ). Real processes: a `codex` launch runs the installed
stub, the drain behind it runs retention's `git config` at an opening show, and that `git` is a
script first on PATH that writes down the environment it got and the one its parent (the
drain) was started with (/proc/<ppid>/environ: the environment at exec, before any unsetenv)."""

import os
import shutil

import invariants
import pytest

from helpers import context_of, run_cli
from stubworld import CodexLaunch, inbox_of

KEY = "KORUS_MAIL_FAST_KEY"


@pytest.fixture
def launch(clone, tmp_path):
    s = CodexLaunch(clone, clone.web, tmp=tmp_path)
    yield s
    s.close()


def test_the_drain_hands_the_stubs_key_to_no_process_it_starts(launch, clone, tmp_path):
    run_cli("send", "--to", "web", "--", "first", cwd=clone.main, check=True)
    answer, started = launch.run("SessionStart")
    assert started and "first" in context_of(answer)
    launch.run("UserPromptSubmit", prompt="hi")
    launch.run("Stop")  # consumes it: seen/ now holds a final state, so retention is due (store/files.prune_due)
    assert os.listdir(inbox_of(clone, clone.web).parent / "seen")

    log = tmp_path / "git-env.log"
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    git = bindir / "git"
    git.write_text("#!/bin/sh\n"
                   f"printf 'child %s\\n' \"${{{KEY}-unset}}\" >> '{log}'\n"
                   f"tr '\\0' '\\n' < /proc/$PPID/environ | grep '^{KEY}=' | sed 's/^/parent /' >> '{log}'\n"
                   f"printf 'args %s\\n' \"$*\" >> '{log}'\n"
                   f"exec '{shutil.which('git')}' \"$@\"\n")
    git.chmod(0o700)
    assert launch.sh(f"export PATH='{bindir}':\"$PATH\"") == "rc=0\n"

    answer, started = launch.run("SessionStart", source="resume")  # an opening show: retention runs git config
    assert started
    lines = log.read_text().splitlines()
    assert any(x.startswith("args -C ") and "config --get korus-mail." in x for x in lines), lines
    # the drain was handed the key (its environment at exec), and git, its child, was not
    assert f"parent {KEY}={launch.key}" in lines, lines
    children = [x for x in lines if x.startswith("child ")]
    assert children and all(x == "child unset" for x in children), lines
    invariants.check(clone.mail_root)
