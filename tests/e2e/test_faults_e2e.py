"""End-to-end: faults that must cost only themselves, with the real Claude Code CLI.

- An unwritable journal: every hook exits 0 once its output is written, the mail is shown
  and then consumed once, and the user is told about the journal (docs/HOOKS.md).
- Emoji-heavy mail: each event's context stays inline (under Claude Code's 10,000 UTF-16
  units), never "Output too large" with a 2 KB preview.
"""

from __future__ import annotations

import pytest

from mockapi import bash, text
from driver import Claude
from test_scenarios import (Mail, _path_with_helper, _uid, assert_answers_valid, assert_delivered,
                            assert_hooks_healthy, session_requests, user_notices)

pytestmark = pytest.mark.e2e


@pytest.fixture
def wired(clone) -> Mail:
    """test_scenarios' `mail`: a clone with worktrees a/ and b/, installed."""
    m = Mail(clone)
    m.install()
    return m


@pytest.fixture
def account(claude_bin, mockapi, tmp_path):
    """One Claude Code "account" reaching this git-korus-mail (as test_scenarios' `runners`)."""
    r = Claude(claude_bin, mockapi, tmp_path / "claude-config", env={"PATH": _path_with_helper()}, skip_permissions=True)
    yield r
    r.cleanup()


def test_unwritable_journal_every_hook_exits_0_and_the_mail_is_consumed_once(wired, mockapi, account):
    mail, acct = wired, account
    needle = f"JOURNAL-{_uid()}"
    warm = mail.send(mail.a, "../b", "warm up " + needle)  # the mail root and box exist
    journal = mail.root / "journal.jsonl"
    journal.unlink()
    journal.mkdir(mode=0o700)  # O_WRONLY on a directory: EISDIR at every append
    msg_id = mail.send(mail.a, "../b", needle + " while the journal is broken")

    mockapi.set_script([bash("echo tool-ran", "run a tool"), text("done")])
    log = mail.clone.base / "claude-debug.log"
    run = acct.run("anything new?", cwd=mail.b, args=["--debug-file", str(log)]).check()
    sid = run.session_id
    block = assert_delivered(mockapi, sid, needle + " while the journal is broken")
    assert "drain failed" not in block
    assert_answers_valid(acct, sid)                      # every answer of ours: exit 0, valid JSON
    assert_hooks_healthy(log, said=("journal line not written",))
    receipts = mail.box_b.receipts()
    assert sorted(receipts) == sorted([warm, msg_id]) and all(r["session"] == sid for r in receipts.values())
    assert mail.box_b.ids("inbox") == []
    notices = [t for ev, t in user_notices(acct, sid) if ev == "Stop"]
    assert any("journal" in t for t in notices), user_notices(acct, sid)
    assert not any("stays queued" in t for t in notices), notices


def test_emoji_heavy_mail_stays_inline(wired, mockapi, account):
    mail, acct = wired, account
    uid = _uid()
    emoji = "\U0001F600"
    bodies = [f"EMOJI-{uid}-{i} " + "\n".join(emoji * 150 for _ in range(20)) for i in range(4)]
    ids = [mail.send(mail.a, "../b", b) for b in bodies]
    mockapi.set_script([bash("echo one", "t1"), bash("echo two", "t2"), bash("echo three", "t3"), text("ok")])
    run = acct.run("read", cwd=mail.b).check()
    sid = run.session_id
    texts = [t for r in session_requests(mockapi, sid) for t in r.texts("system")]
    assert not any("Output too large" in t for t in texts), [t[:300] for t in texts if "Output too large" in t]
    assert_delivered(mockapi, sid, f"EMOJI-{uid}-0")
    for i in range(1, 4):
        assert any(f"EMOJI-{uid}-{i}" in t for t in texts), i
    assert sorted(mail.box_b.receipts()) == sorted(ids)
