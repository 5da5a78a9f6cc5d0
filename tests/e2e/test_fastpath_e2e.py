"""End-to-end: the stub's fast path under the real Claude Code (docs/HOOKS.md, "The fast path").

A `claude -p` turn makes tool calls in a worktree whose inbox last changed long ago: after the
prompt's drain stamps the launch, the stub answers tool calls without starting the drain; a
message sent by one of those tool calls reaches the model at that very call's PostToolUse, and
is consumed once at Stop. The stub's helper is wrapped to log each start, so which events
started Python is counted, not timed.
"""

from __future__ import annotations

import os
import time

import pytest

from test_scenarios import (PTU_PREFIX, _uid, assert_delivered, log_helper_starts, mail, runners,  # noqa: F401
                            session_requests)

pytestmark = pytest.mark.e2e


def test_tool_calls_with_nothing_new_start_no_drain_and_new_mail_still_arrives(mail, mockapi, runners, tmp_path):  # noqa: F811
    from mockapi import bash, text

    logged = log_helper_starts(mail.root / "hooks" / "claude-hook", tmp_path)
    mail.send(mail.a, "../b", "an old message")  # the inbox exists; shown at SessionStart
    inbox = mail.box_b.dir / "inbox"
    then = time.time_ns() - 10 * 1_000_000_000
    os.utime(inbox, ns=(then, then))
    uid = _uid()
    needle = f"FAST-{uid}-42"
    mockapi.set_script([bash("echo one", "a"), bash("echo two", "b"),
                        bash(f'git korus-mail send --to . "FAST-{uid}-$((6*7)) mid-turn"', "mail myself"),
                        bash("echo four", "d"), text("finished")])
    run = runners().run("work", cwd=mail.b).check()
    sid = run.session_id
    starts = logged()
    # Of the four tool calls, Python ran for the one that sent the mail and for the next one (the
    # inbox had just changed: too recent to stamp); the first two were answered by the stub alone.
    assert starts.count("PostToolUse") == 2, starts
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= set(starts), starts
    reqs = session_requests(mockapi, sid)
    assert len(reqs) == 5, mockapi.summary()
    assert not any(r.contains(needle) for r in reqs[:3])
    assert reqs[3].contains(needle)  # right after the tool call that sent it
    assert_delivered(mockapi, sid, needle, prefix=PTU_PREFIX)
    (msg_id,) = [i for i in mail.box_b.ids("seen") if needle in str(mail.box_b.read("seen", i))]
    assert mail.box_b.receipts()[msg_id]["observed"]["event"] == "PostToolUse"
    assert mail.box_b.ids("inbox") == []


def test_a_worktree_that_never_got_mail_starts_no_drain_at_its_tool_calls(mail, mockapi, runners, tmp_path):  # noqa: F811
    """issue 26: b's box has no inbox (no mail ever came); the prompt's drain stamps that, and the
    tool calls before the first mail are answered by the stub alone. The first message, sent by a
    tool call, makes the inbox and reaches the model at that call's PostToolUse."""
    from mockapi import bash, text

    logged = log_helper_starts(mail.root / "hooks" / "claude-hook", tmp_path)
    assert mail.box_b.dir is None  # no box yet, so no inbox: the first drain makes the box alone
    uid = _uid()
    needle = f"FIRST-{uid}-42"
    mockapi.set_script([bash("echo one", "a"), bash("echo two", "b"), bash("echo three", "c"),
                        bash(f'git korus-mail send --to . "FIRST-{uid}-$((6*7)) the first ever"', "mail myself"),
                        bash("echo five", "e"), text("finished")])
    run = runners().run("work", cwd=mail.b).check()
    sid = run.session_id
    starts = logged()
    # Of the five tool calls, Python ran for the one that sent the first mail (the inbox now
    # exists) and the next one (too recent to stamp); the first three were answered by the stub.
    assert starts.count("PostToolUse") == 2, starts
    assert {"SessionStart", "UserPromptSubmit", "Stop"} <= set(starts), starts
    reqs = session_requests(mockapi, sid)
    assert len(reqs) == 6, mockapi.summary()
    assert not any(r.contains(needle) for r in reqs[:4])
    assert reqs[4].contains(needle)  # right after the tool call that sent it
    assert_delivered(mockapi, sid, needle, prefix=PTU_PREFIX)
    assert mail.box_b.ids("inbox") == []
