"""Breaking a dead owner's claim never frees the name of a live one (issue 22, item 1).

Three real processes, held still at named points (tests/pausing.py) so the race the red team
forced with strace delays plays out in the same order every run:
  A, a `cancel`, judges the planted dead claim dead and stops before breaking it;
  B, the shown session's Stop, breaks that claim itself, claims the message, and stops there;
  A goes on with its stale judgement; C, a second `cancel`, then tries the message.
Before the fix A renamed B's live claim aside, C claimed the free name and cancelled, and B then
wrote its receipt: "cancelled" told to the sender, a receipt with no seen/ copy (I1, I2).
"""

import json
import os

from helpers import run_cli
from pausing import Paused
from test_crash import S1, box_dir, clean, plant_dead_claim, send

import invariants


def _stop_payload(c, session):
    return json.dumps({"session_id": session, "transcript_path": "", "cwd": str(c.web), "hook_event_name": "Stop",
                       "last_assistant_message": "done", "stop_hook_active": False})


def test_a_stale_breaker_never_frees_a_live_claim_for_a_third_process(clone, tmp_path):
    c = clone
    msg_id = send(c)
    assert msg_id in json.dumps(clean("SessionStart", c.web, S1))
    plant_dead_claim(c, msg_id)

    a = Paused(tmp_path, ["cancel", msg_id], c.main, {"before-break": "a-judged", "break:renamed": "a-aside"})
    assert a.reach("before-break")  # A read the dead claim and judged it dead
    b = Paused(tmp_path, ["drain"], c.web, {"staging:receipt": "b-deciding"}, stdin=_stop_payload(c, S1))
    assert b.reach("staging:receipt")  # B broke the dead claim, claimed the message, found it queued
    a.go("before-break")
    a.reach("break:renamed")  # the old protocol stops here with B's claim aside; the lock never does
    third = run_cli("cancel", msg_id, cwd=c.main)  # B holds the claim: C must be refused
    assert b.finish() == 0, b.err
    a.finish()

    proc = run_cli("list", "--json", cwd=c.main)  # repairs every box, then the invariants
    assert proc.returncode == 0, proc.stderr
    invariants.check(c.mail_root)  # before the fix: I2, a receipt with the message in cancelled/
    bx = box_dir(c)
    assert (bx / "receipts" / (msg_id + ".json")).exists() and (bx / "seen" / (msg_id + ".json")).exists()
    assert "cancelled " not in third.stdout, third.stdout  # B held the claim, B consumed it
    assert not (bx / "cancelled" / (msg_id + ".json")).exists()
    assert "cancelled " not in a.out, a.out
    assert os.listdir(bx / "claiming") == []
