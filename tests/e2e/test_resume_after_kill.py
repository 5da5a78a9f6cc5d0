"""Mail shown to a launch that was SIGKILLed is shown again to the next launch of the session.

Claude Code keeps the session id across `--resume`, so the display markers of a killed
launch must not pass for the next one's. The issue's sequence, with the real CLI:
1. `claude -p "first"` in worktree b creates session X;
2. mail M is sent to b;
3. `claude --resume X` starts (stream-json, or the terminal UI in a pty); its SessionStart
   shows M and marks it; the process is killed with SIGKILL before any prompt;
4. `claude -p --resume X "carry on"`: its model's request must hold M before M is consumed,
   and the receipt names this launch.
"""

from __future__ import annotations

import calendar
import json
import re
import uuid

import pytest

from test_scenarios import (SS_PREFIX, _assert_status_consumed, mail, runners,  # noqa: F401 - fixtures
                            never_reached, session_requests, transcript)

pytestmark = pytest.mark.e2e


def _epoch(stamp: str) -> float:
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{6})Z$", stamp)
    assert m, stamp
    y, mo, d, h, mi, s, us = (int(x) for x in m.groups())
    return calendar.timegm((y, mo, d, h, mi, s)) + us / 1e6


def _tags(box, sid: str) -> list[str]:
    return [p.name.rpartition("@")[2] for p in box.launch_dirs(sid)]


def _resume_after_kill(mail, mockapi, acct, start_doomed, ready=lambda launch: None):  # noqa: F811
    """Steps 1-4; `start_doomed(sid)` starts step 3's launch and returns it; `ready(launch)`
    waits, once M is marked, for whatever else must be up before the kill."""
    from mockapi import text

    mockapi.set_script([text("first done")])
    sid = acct.run("first", cwd=mail.b).check().session_id
    assert mail.box_b.ids("inbox") == []

    needle = f"RESUMEKILL-{uuid.uuid4().hex[:10]}"
    msg_id = mail.send(mail.a, "../b", f"{needle} for b")

    mockapi.set_script([text("never asked", delay=30)])  # the doomed launch makes no request
    doomed = start_doomed(sid)
    doomed.wait_until(lambda: msg_id in mail.box_b.shown(sid), 30, "a display marker from the resumed launch")
    ready(doomed)
    killed_pid = doomed.pid
    assert doomed.kill() == -9
    # shown and marked by the killed launch, not consumed; no model saw it, the transcript lacks it
    assert mail.box_b.state()["inbox"] == [msg_id] and mail.box_b.receipts() == {}
    assert [t.split("-")[0] for t in _tags(mail.box_b, sid)] == [str(killed_pid)]
    never_reached(mockapi, needle)
    assert needle not in json.dumps(transcript(acct, sid))

    mockapi.clear_log()
    mockapi.set_script([text("carrying on")])
    proc = acct.start("carry on", cwd=mail.b, resume=sid)
    resumed_pid = proc.pid
    run = proc.finish().check()
    assert run.session_id == sid

    # the resumed model was shown M at its SessionStart, in its first request...
    reqs = session_requests(mockapi, sid)
    assert reqs, mockapi.summary()
    shown_in = [r for r in reqs if any(needle in t and SS_PREFIX in t for t in r.texts("system"))]
    assert shown_in and shown_in[0] is reqs[0], (
        f"{needle!r} did not reach the resumed launch's model:\n{mockapi.summary()}\n"
        + "\n---\n".join(t[:1500] for r in reqs for t in r.texts("system")))
    assert "already shown" not in "\n".join(reqs[0].texts("system"))
    # ...before M was consumed, by that launch
    receipts = mail.box_b.receipts()
    assert list(receipts) == [msg_id], receipts
    r = receipts[msg_id]
    assert r["session"] == sid and r["launch"]["pid"] == resumed_pid, r
    assert r["launch"]["client"] == "claude" and not r["launch"]["tag"].startswith(f"{killed_pid}-")
    assert r["observed"]["launch"] == r["launch"]["tag"] and r["observed"]["event"] == "SessionStart"
    assert shown_in[0].time < _epoch(r["consumed_at"]), (shown_in[0].time, r["consumed_at"])
    assert mail.box_b.state()["inbox"] == [] and mail.box_b.state()["seen"] == [msg_id]
    _assert_status_consumed(mail, msg_id, sid)
    # the killed launch's markers were swept, and the resumed one's cleared at its SessionEnd
    assert mail.box_b.launch_dirs(sid) == [], mail.box_b.launch_dirs(sid)
    return msg_id


def test_stream_json_launch_killed_before_any_prompt(mail, mockapi, runners):  # noqa: F811
    acct = runners()
    _resume_after_kill(mail, mockapi, acct, lambda sid: acct.stream(cwd=mail.b, resume=sid))


def test_terminal_ui_launch_killed_before_any_prompt(mail, mockapi, runners):  # noqa: F811
    acct = runners()
    terminals = []

    def start(sid):
        terminals.append(acct.terminal(cwd=mail.b, resume=sid))
        return terminals[-1]

    def drawn(t):
        # the terminal UI is up, waiting for a prompt (no dialog in the way), when it is killed
        t.wait_until(lambda: "Claude Code" in t.screen_text() and "shift+tab" in t.screen_text(), 30,
                     "the terminal UI's prompt")

    _resume_after_kill(mail, mockapi, acct, start, ready=drawn)
    assert "trust this folder" not in terminals[0].screen_text()
