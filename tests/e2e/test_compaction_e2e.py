"""Compaction with the real Claude Code (issue 21 item 5): mail shown before a compaction, and
not consumed yet, is shown again in the context that replaces the old one, and consumed only
after that (docs/HOOKS.md, "A new context under the same launch").

2.1.332 fires PreCompact, SessionStart(source compact) and PostCompact for `/compact` and for
an auto-compaction alike; only SessionStart's context reaches the new context in both.
"""

from __future__ import annotations

import pytest

import invariants
import mockapi as mockmod
from mockapi import bash, text
from test_scenarios import SS_PREFIX, _uid, mail, runners, session_requests  # noqa: F401,F811 (fixtures)

pytestmark = pytest.mark.e2e

SUMMARY = "<analysis>a</analysis>\n<summary>COMPACTED-SUMMARY</summary>"


def _after_compaction(api, sid):
    reqs = session_requests(api, sid)
    i = next((n for n, r in enumerate(reqs) if r.contains("COMPACTED-SUMMARY")), None)
    assert i is not None, f"no request after a compaction:\n{api.summary()}"
    return reqs[i]


def _shown_in(req, needle):
    return sum(t.count(needle) for t in req.texts("system"))


def test_manual_compact_shows_unconsumed_mail_again(mail, mockapi, runners):  # noqa: F811
    acct = runners()
    mockapi.set_script([text("hello back")])
    sid = acct.run("hello", cwd=mail.b).check().session_id  # a conversation to compact
    needle = f"COMPACT-{_uid()}"
    mid = mail.send(mail.a, "../b", needle)
    with acct.stream(cwd=mail.b, resume=sid) as s:
        # SessionStart(resume) shows it; no turn has ended, so it is not consumed
        s.wait_until(lambda: any((p / mid).exists() for p in _launch_dirs(mail)), 30, "the opening show")
        mockapi.set_script([text(SUMMARY), text("after compaction")])
        s.send("/compact")
        assert s.read_result(timeout=90)["session_id"] == sid
        assert mail.box_b.ids("inbox") == [mid]  # /compact fires no Stop
        s.send("go on")
        r = s.read_result()
        assert r["result"] == "after compaction", r
        s.close()
    req = _after_compaction(mockapi, sid)
    # before the fix: SessionStart(compact) said "1 already shown to this session"
    assert _shown_in(req, needle) == 1, [t[:400] for t in req.texts("system")]
    assert any(SS_PREFIX in t and needle in t for t in req.texts("system"))
    assert mail.box_b.ids("seen") == [mid] and mail.box_b.ids("inbox") == []
    assert mail.box_b.receipts()[mid]["session"] == sid
    invariants.check(mail.root)


def test_auto_compaction_mid_turn_shows_unconsumed_mail_again(mail, mockapi, runners, monkeypatch):  # noqa: F811
    acct = runners()
    needle = f"AUTOCOMPACT-{_uid()}"
    mid = mail.send(mail.a, "../b", needle)
    usage = {"input": 10}
    real = mockmod._usage

    def fake_usage(output_tokens=1):
        u = real(output_tokens)
        u["input_tokens"] = usage["input"]
        return u
    monkeypatch.setattr(mockmod, "_usage", fake_usage)

    def compacting(req):
        usage["input"] = 10  # the summary and everything after it: a small context again
        return text(SUMMARY)

    def first(req):
        usage["input"] = 995_000  # a context at the window's edge: the next request compacts first
        return bash("echo working", "work")
    mockapi.set_script([first, compacting, text("finished")])
    run = acct.run("work", cwd=mail.b).check()
    sid = run.session_id
    assert run.result == "finished", run.describe()
    req = _after_compaction(mockapi, sid)
    assert _shown_in(req, needle) == 1, [t[:400] for t in req.texts("system")]
    assert mail.box_b.ids("seen") == [mid] and mail.box_b.ids("inbox") == []
    receipt = mail.box_b.receipts()[mid]
    assert receipt["session"] == sid and receipt["observed"]["event"] == "SessionStart"
    invariants.check(mail.root)


def _launch_dirs(m):
    d = m.box_b.dir
    return [p for p in (d / "shown").iterdir()] if d is not None and (d / "shown").is_dir() else []
