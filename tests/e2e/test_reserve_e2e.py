"""End-to-end: file reservations under the real Claude Code (issue 29; docs/HOOKS.md, "Before an
edit"). A reservation made in worktree a; a `claude -p` session in worktree b then edits a
reserved file. Its first edit is refused at PreToolUse through permissionDecision "deny", the
reason being the tell (who, why, until when, how to reach them): Claude Code 2.1.332 places a
PreToolUse additionalContext only after the tool's result, a refusal before the tool runs. The
same edit again lands (told once); a `--block` reservation refuses every time. Run in the
permission mode a person gives an editing agent (acceptEdits: file edits without asking) and in
Claude Code's default mode, not bypassPermissions.
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


def test_the_models_first_edit_of_a_reservation_is_refused_with_the_tell_its_retry_lands_a_block_refuses(
        mail, mockapi, runners):  # noqa: F811
    from mockapi import text, tool_use

    uid = _uid()
    made = cli("reserve", "src/db", f"--note=NOTE-{uid} moving the schema", cwd=mail.a)
    assert "reserved src/db" in made.stdout
    target = mail.b / "src" / "db" / "schema.sql"
    write = tool_use("Write", {"file_path": str(target), "content": f"create table t{uid};\n"})
    seen = []

    def retry(_request):
        seen.append(target.exists())  # the file as the model reads the refusal: not written
        return write

    for mode in ("acceptEdits", "default"):
        if target.exists():
            target.unlink()
        if mode == "default":  # a new reservation (a new id): told again
            assert cli("reserve", "--drop", "src/db", cwd=mail.a).returncode == 0
            assert "reserved src/db" in cli("reserve", "src/db", f"--note=NOTE-{uid} again", cwd=mail.a).stdout
        mockapi.set_script([write, retry, text("finished")])
        run = run_in_mode(runners(), "edit the schema", mail.b, mode).check()
        reqs = session_requests(mockapi, run.session_id)
        assert len(reqs) == 3, (mode, mockapi.summary())
        assert not reqs[0].contains(f"NOTE-{uid}")
        # the first Write was refused before it ran, the reason being the tell
        refused = [t for t in reqs[1].texts() if REFUSED_PREFIX in t]
        assert len(refused) == 1, (mode, reqs[1].texts())
        tell = refused[0]
        assert "src/db/schema.sql is reserved by" in tell and "in worktree ../a on branch a" in tell
        assert f"NOTE-{uid}" in tell and "until " in tell
        assert f"git korus-mail ask --to={mail.a} -- '<your question>'" in tell
        assert "is advisory" in tell and "repeat the same edit and it will go through" in tell
        assert seen[-1] is False, mode
        # its retry goes through our hook in silence (no context after it, no second refusal) and,
        # where the person lets edits through (acceptEdits), lands; in the default mode `-p` has
        # no one to grant the write, which is Claude Code's own question, not ours
        if mode == "acceptEdits":
            assert target.read_text() == f"create table t{uid};\n", mode
        assert sum(REFUSED_PREFIX in t for t in reqs[2].texts()) == 1
        assert not any(TELL_PREFIX in t for t in reqs[2].texts()), reqs[2].texts()

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
        told = [t for t in reqs[1].texts() if REFUSED_PREFIX in t]  # its first edit: refused with the tell
        assert len(told) == 1 and f"reserved by session {sid_a} in worktree ../a" in told[0], reqs[1].texts()
        assert not target.exists()
        assert f"git korus-mail send --to={mail.a} --session={sid_a} -- '<your message>'" in told[0]
    # session a's Claude Code has exited: its reservation no longer holds, and nobody is told
    assert "no reservations in this clone" in cli("reserve", "--list", cwd=mail.b).stdout
    mockapi.set_script([tool_use("Write", {"file_path": str(mail.b / "api" / "more.py"), "content": "pass\n"}),
                        text("finished")])
    run = run_in_mode(runners("b"), "edit more", mail.b, "acceptEdits").check()
    assert not any(r.contains(f"NOTE-{uid}") for r in session_requests(mockapi, run.session_id))
