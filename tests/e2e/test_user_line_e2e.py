"""End-to-end: the person at the terminal is told which mail the model was shown.

The real Claude Code terminal UI, in a pty: the drain's systemMessage is drawn as
`<event> says: korus-mail: 1 message from ../a (note, id …xxxxxxxx) shown to the model`, at
SessionStart and at a prompt's UserPromptSubmit; the mail itself reaches the model once, and
the line never does (docs/HOOKS.md, "The user line").
"""

from __future__ import annotations

import pytest

from test_scenarios import _uid, mail, runners, session_requests  # noqa: F401 - fixtures

pytestmark = pytest.mark.e2e


def _said(t, text: str) -> bool:
    # the UI draws blanks as cursor moves: compare without spaces
    return text.replace(" ", "") in t.screen_text().replace(" ", "")


def test_the_terminal_ui_shows_the_line_and_the_model_gets_the_mail_once(mail, mockapi, runners):  # noqa: F811
    from mockapi import text

    acct = runners()
    uid = _uid()
    first = mail.send(mail.a, "../b", f"FIRST-{uid}")
    mockapi.set_script([text(f"ANSWER-{uid}")])
    with acct.terminal(cwd=mail.b) as t:
        t.wait_until(lambda: _said(t, f"SessionStart:startup says: korus-mail: 1 message from ../a "
                                      f"(note, id …{first[-8:]}) shown to the model"), 40, "the SessionStart line")
        t.wait_until(lambda: "shift+tab" in t.screen_text(), 30, "the prompt")
        second = mail.send(mail.a, "../b", f"SECOND-{uid}", "--kind", "handoff")
        t.type("anything new?")
        t.type("\r")
        t.wait_until(lambda: _said(t, f"UserPromptSubmit says: korus-mail: 1 message from ../a "
                                      f"(handoff, id …{second[-8:]}) shown to the model"), 40,
                     "the UserPromptSubmit line")
        t.wait_until(lambda: f"ANSWER-{uid}" in t.screen_text(), 40, "the model's answer")
        t.wait_until(lambda: mail.box_b.ids("inbox") == [], 20, "the Stop consuming both")
        t.kill()
    texts = [x for r in mockapi.agent_requests() for x in r.texts("system")]
    assert texts, mockapi.summary()
    last = mockapi.agent_requests()[-1]
    body = "\n".join(last.texts("system"))
    assert body.count(f"| FIRST-{uid}") == 1 and body.count(f"| SECOND-{uid}") == 1, body[:3000]
    assert not any("shown to the model" in x for x in texts)  # the person's line, never the model's
    assert sorted(mail.box_b.receipts()) == sorted([first, second])
