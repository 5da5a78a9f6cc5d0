"""Both install scopes with the real Claude Code (issue 21 item 7): `install` and
`install --scope user` wire two hook commands for every event, and Claude Code runs them in
parallel. The model must get each message once per event (docs/HOOKS.md, "One answer per event").
The user scope's settings file is the runner's own CLAUDE_CONFIG_DIR (hermetic)."""

from __future__ import annotations

import json

import pytest

import invariants
from mockapi import bash, text
from test_scenarios import PTU_PREFIX, SS_PREFIX, _uid, cli, mail, runners, session_requests  # noqa: F401,F811

pytestmark = pytest.mark.e2e


def _copies(api, sid, needle):
    """How many times `needle` sits in the hook context of the last request of `sid`."""
    last = session_requests(api, sid)[-1]
    return sum(t.count(needle) for t in last.texts("system"))


def test_both_scopes_show_each_message_once(mail, mockapi, runners):  # noqa: F811
    acct = runners()
    proc = cli("install", "--scope", "user", cwd=mail.clone.main, env={"CLAUDE_CONFIG_DIR": acct.config_dir})
    assert "both scopes" in proc.stdout, proc.stdout
    for scope_file in (mail.b / ".claude" / "settings.local.json", f"{acct.config_dir}/settings.json"):
        settings = json.loads(open(scope_file).read())
        assert any("claude-hook" in h["command"] for g in settings["hooks"]["PostToolUse"] for h in g["hooks"])

    at_start = f"TWICE-START-{_uid()}"
    m1 = mail.send(mail.a, "../b", at_start)
    mid_tag = f"TWICE-MID-{_uid()}"
    mockapi.set_script([
        bash(f'git korus-mail send --to . "{mid_tag}-$((6*7))"', "mail myself"),
        bash("echo second-call", "another call"),
        text("finished"),
    ])
    with acct.stream(cwd=mail.b) as s:
        s.send("work")
        r = s.read_result()
        assert r["result"] == "finished", r
        s.close()
    sid = r["session_id"]
    # before the fix: 2 and 2 (each wiring's drain showed it)
    assert _copies(mockapi, sid, at_start) == 1
    assert _copies(mockapi, sid, f"{mid_tag}-42") == 1
    assert any(SS_PREFIX in t and at_start in t for t in session_requests(mockapi, sid)[0].texts("system"))
    assert any(PTU_PREFIX in t and f"{mid_tag}-42" in t for t in session_requests(mockapi, sid)[-1].texts("system"))
    # both wirings did run: Claude Code reports a hook_response per command for SessionStart
    responses = [m for m in s.messages if m.get("subtype") == "hook_response"
                 and m.get("hook_event") == "SessionStart"]
    assert len(responses) == 2, [{k: m.get(k) for k in ("subtype", "hook_name", "hook_event")} for m in s.messages]
    # consumed once each, at the Stop; nothing told the user of a claim held by the twin
    seen = mail.box_b.ids("seen")
    assert m1 in seen and len(seen) == 2 and mail.box_b.ids("inbox") == [], mail.box_b.state()
    notices = [m.get("content", "") for m in s.messages if m.get("subtype") == "informational"]
    assert not [n for n in notices if "claimed by" in n], notices
    invariants.check(mail.root)
