"""End-to-end: file reservations under the real Claude Code (issue 29; docs/HOOKS.md, "Before an
edit"). A reservation made in worktree a; a `claude -p` session in worktree b then edits a
reserved file. Its model is told at the edit's PreToolUse (who, why, until when, how to reach
them), and a `--block` reservation refuses the edit through permissionDecision "deny". Run in the
permission mode a person gives an editing agent (acceptEdits: file edits without asking), not
bypassPermissions; the block case also in Claude Code's default mode, where the refusal comes
before any permission question.
"""

from __future__ import annotations

import json

import pytest

from driver import ClaudeProcess
from test_scenarios import _uid, cli, mail, runners, session_requests  # noqa: F401

pytestmark = pytest.mark.e2e

TELL_PREFIX = "PreToolUse:Write hook additional context: "
REFUSED_PREFIX = "PreToolUse:Write hook error: "


def run_in_mode(runner, prompt, cwd, mode):
    """`claude -p` in permission mode `mode` (the driver's own runs bypass permissions)."""
    argv = [a for a in runner.argv(prompt) if a != "--dangerously-skip-permissions"] + ["--permission-mode", mode]
    proc = ClaudeProcess(argv, str(cwd), runner.env(), runner.config_dir)
    runner._procs.append(proc)
    try:
        return proc.finish(runner.timeout)
    finally:
        proc.cleanup()


def test_the_model_is_told_of_a_reservation_at_its_edit_and_a_block_refuses_it(mail, mockapi, runners):  # noqa: F811
    from mockapi import text, tool_use

    uid = _uid()
    made = cli("reserve", "src/db", f"--note=NOTE-{uid} moving the schema", cwd=mail.a)
    assert "reserved src/db" in made.stdout
    target = mail.b / "src" / "db" / "schema.sql"
    mockapi.set_script([tool_use("Write", {"file_path": str(target), "content": f"create table t{uid};\n"}),
                        text("finished")])
    run = run_in_mode(runners(), "edit the schema", mail.b, "acceptEdits").check()
    reqs = session_requests(mockapi, run.session_id)
    assert len(reqs) == 2, mockapi.summary()
    assert not reqs[0].contains(f"NOTE-{uid}")
    # the request after the Write carries the tell, as Claude Code places PreToolUse context
    told = [t for t in reqs[1].texts() if TELL_PREFIX in t]
    assert len(told) == 1, reqs[1].texts()
    tell = told[0]
    assert "src/db/schema.sql is reserved by" in tell and "in worktree ../a on branch a" in tell
    assert f"NOTE-{uid} moving the schema" in tell and "until " in tell
    assert f"git korus-mail ask --to={mail.a} -- '<your question>'" in tell
    assert target.read_text() == f"create table t{uid};\n"  # advisory: the edit went through

    # --block: the edit is refused, with the reason and the person's way round it
    blocked = cli("reserve", "migrations", "--block", f"--note=BLOCK-{uid}", cwd=mail.a)
    assert "(blocks edits)" in blocked.stdout
    for mode in ("acceptEdits", "default"):
        locked = mail.b / "migrations" / f"0001-{mode}.sql"
        mockapi.set_script([tool_use("Write", {"file_path": str(locked), "content": "drop table t;\n"}),
                            text("finished")])
        run = run_in_mode(runners(), "add a migration", mail.b, mode).check()
        reqs = session_requests(mockapi, run.session_id)
        refused = [t for r in reqs[1:] for t in r.texts() if REFUSED_PREFIX in t]
        assert len(refused) == 1, (mode, [r.texts() for r in reqs])
        assert f"BLOCK-{uid}" in refused[0] and "git korus-mail reserve --drop " in refused[0]
        assert "--force" in refused[0]
        assert not locked.exists(), mode


def test_a_session_reserves_from_its_shell_another_is_told_and_it_lapses_when_the_first_ends(
        mail, mockapi, runners):  # noqa: F811
    """The holder is the session whose Bash tool ran `reserve` (found as `send` finds its
    sender); the reservation holds while that Claude Code runs, and lapses when it exits."""
    from mockapi import bash, text, tool_use

    uid = _uid()
    a = runners("a")
    with a.stream(cwd=mail.a) as s:
        mockapi.set_script([bash(f"git korus-mail reserve 'api/*.py' --note=NOTE-{uid}", "reserve"),
                            text("reserved")])
        s.send("reserve the api files")
        first = s.read_result()
        sid_a = first["session_id"]
        listed = cli("reserve", "--list", "--json", cwd=mail.b)
        [rec] = json.loads(listed.stdout)
        assert rec["holder"]["session"] == sid_a and rec["holder"]["client"] == "claude"
        target = mail.b / "api" / "handlers.py"
        mockapi.set_script([tool_use("Write", {"file_path": str(target), "content": "pass\n"}), text("finished")])
        run = run_in_mode(runners("b"), "edit the handlers", mail.b, "acceptEdits").check()
        reqs = session_requests(mockapi, run.session_id)
        told = [t for t in reqs[1].texts() if TELL_PREFIX in t]
        assert len(told) == 1 and f"reserved by session {sid_a} in worktree ../a" in told[0], reqs[1].texts()
        assert f"git korus-mail send --to={mail.a} --session={sid_a} -- '<your message>'" in told[0]
    # session a's Claude Code has exited: its reservation no longer holds, and nobody is told
    assert "no reservations in this clone" in cli("reserve", "--list", cwd=mail.b).stdout
    mockapi.set_script([tool_use("Write", {"file_path": str(mail.b / "api" / "more.py"), "content": "pass\n"}),
                        text("finished")])
    run = run_in_mode(runners("b"), "edit more", mail.b, "acceptEdits").check()
    assert not any(r.contains(f"NOTE-{uid}") for r in session_requests(mockapi, run.session_id))
