"""End-to-end: a turn with nothing new under the real Claude Code (docs/HOOKS.md, "A turn with
nothing new"). A live stream-json session in a worktree that never got mail: after the launch's
first prompt stamps it, its tool calls, its Stops and its later prompts are answered by the stub
alone, the session's presence (as `who` reads it) goes working and idle with its turns, and a
message sent between two turns is shown at the next prompt and consumed at that turn's Stop. The
stub's helper is wrapped to log each start, so which events started Python is counted, not timed.
"""

from __future__ import annotations

import invariants
import pytest

from test_scenarios import (UPS_PREFIX, _uid, assert_delivered, cli, log_helper_starts, mail, runners,  # noqa: F401
                            session_requests)

pytestmark = pytest.mark.e2e


def _state(world, sid):
    from git_korus_mail.store import presence
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(str(world.root.parent), create=False)
    box = root.box(world.box_b.dir.name, create=False)
    return presence.load(box, sid)["state"]


def test_turns_with_nothing_new_start_no_drain_and_presence_follows_them(mail, mockapi, runners, tmp_path):  # noqa: F811
    from mockapi import bash, text

    starts = log_helper_starts(mail.root / "hooks" / "claude-hook", tmp_path)

    needle = f"BETWEEN-{_uid()}"
    script = []
    for n in range(3):
        script += [bash(f"echo turn-{n}-a", "a"), bash(f"echo turn-{n}-b", "b"), text(f"done {n}")]
    mockapi.set_script(script)
    with runners().stream(cwd=mail.b) as s:
        for n in range(2):
            s.send("work")
            r = s.read_result()
            assert r["result"] == f"done {n}", r
            sid = r["session_id"]
            assert _state(mail, sid) == "idle"
            assert "idle" in cli("who", cwd=mail.a).stdout
        # the launch's first prompt ran the drain (it stamped the launch); nothing else did
        assert starts() == ["SessionStart", "UserPromptSubmit"], starts()
        mail.send(mail.a, "../b", needle)
        s.send("work")
        r = s.read_result()
        assert r["result"] == "done 2", r
        s.close()
    # the third turn: its prompt showed the mail and its Stop consumed it, both in the drain (its
    # tool calls may too: the inbox had just changed, too recent to stamp)
    later = [e for e in starts()[2:] if e != "SessionEnd"]  # (the session closing)
    assert later[0] == "UserPromptSubmit" and later[-1] == "Stop" and set(later[1:-1]) <= {"PostToolUse"}, later
    reqs = session_requests(mockapi, sid)
    assert len(reqs) == 9, mockapi.summary()
    assert not any(r.contains(needle) for r in reqs[:6])
    assert reqs[6].contains(needle)  # the third turn's first request: shown at its prompt
    assert_delivered(mockapi, sid, needle, prefix=UPS_PREFIX)
    assert mail.box_b.ids("inbox") == [] and len(mail.box_b.ids("seen")) == 1
    invariants.check(mail.root)
