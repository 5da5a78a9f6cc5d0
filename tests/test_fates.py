"""Fates come from receipts and links, never from the journal.

A process SIGKILLed after its move and before its journal line leaves the move done
and the line missing (the red team's chaos run lost 59 consume and 74 expiry lines).
`status` must still say what became of the message, from its receipt or its expired
link; the repair that breaks the dead claim adds the missing line once, marked
`repaired`, and never a second one when the line was written after all.
"""

import json
import os

import pytest

from helpers import run_cli
from test_crash import S1, assert_killed, box_dir, clean, crash_env, drain, journal_events, make_expired, send
from git_korus_mail.store import journal
from git_korus_mail.store.files import MailRoot


def _fate(c, msg_id):
    proc = run_cli("status", "--json", cwd=c.main)
    assert proc.returncode == 0, proc.stderr
    [rec] = [r for r in json.loads(proc.stdout)["sent"] if r["id"] == msg_id]
    return rec["fate"]


def test_a_consume_killed_before_its_journal_line_is_consumed_in_status_and_journaled_once(clone):
    c = clone
    msg_id = send(c)
    assert msg_id in json.dumps(clean("SessionStart", c.web, S1))
    assert_killed(drain("Stop", c.web, S1, env=crash_env("consume:unlinked-inbox")), "consume:unlinked-inbox")
    assert journal_events(c, "consumed", msg_id) == []  # the line is lost with the process
    fate = _fate(c, msg_id)  # status also settles the box: the dead claim is broken and repaired
    assert fate["state"] == "consumed" and fate["session"] == S1, fate
    [line] = journal_events(c, "consumed", msg_id)
    assert line["repaired"] is True and line["session"] == S1
    run_cli("list", cwd=c.main, check=True)
    clean("Stop", c.web, S1)
    assert len(journal_events(c, "consumed", msg_id)) == 1


def test_an_expiry_killed_before_its_journal_line_is_expired_in_status_and_journaled_once(clone):
    c = clone
    msg_id = send(c, ttl=1)
    make_expired(c, msg_id)
    assert_killed(drain("SessionStart", c.web, S1, env=crash_env("expire:unlinked-inbox")),
                  "expire:unlinked-inbox")
    assert journal_events(c, "expired", msg_id) == []
    assert _fate(c, msg_id)["state"] == "expired"
    [line] = journal_events(c, "expired", msg_id)
    assert line["repaired"] is True
    run_cli("list", cwd=c.main, check=True)
    assert len(journal_events(c, "expired", msg_id)) == 1


@pytest.mark.parametrize("rotated", [False, True])
def test_a_line_written_before_the_kill_is_not_added_again(clone, rotated):
    """Died after its journal line, before releasing its claim: the repair finds the line
    (in either half of the journal) and adds none."""
    c = clone
    msg_id = send(c)
    clean("SessionStart", c.web, S1)
    assert_killed(drain("Stop", c.web, S1, env=crash_env("consume:unlinked-inbox")), "consume:unlinked-inbox")
    root = MailRoot.open(str(c.common_dir))
    journal.append(root.dir, "consumed", id=msg_id, box=box_dir(c).name, session=S1)
    if rotated:
        (c.mail_root / journal.NAME).rename(c.mail_root / journal.ROTATED)
    assert _fate(c, msg_id)["state"] == "consumed"
    lines = journal_events(c, "consumed", msg_id)
    assert len(lines) == 1 and "repaired" not in lines[0]


def test_a_claim_broken_by_a_live_breaker_is_repaired_by_it_alone(clone):
    """A breaker renames a dead owner's claim aside, then repairs. While it runs, another
    reader that finds the aside file must leave it alone: both would find the journal line
    missing and both add it (the chaos run on 3.9 saw one consume journaled twice). Once the
    breaker is dead too, exactly one later reader finishes for it."""
    import subprocess
    import sys

    c = clone
    msg_id = send(c)
    clean("SessionStart", c.web, S1)
    assert_killed(drain("Stop", c.web, S1, env=crash_env("consume:unlinked-inbox")), "consume:unlinked-inbox")
    claiming = box_dir(c) / "claiming"
    breaker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        aside = claiming / f"{msg_id}.claim.broken-{breaker.pid}-0badf00d"
        (claiming / f"{msg_id}.claim").rename(aside)
        run_cli("status", "--json", cwd=c.main, check=True)
        run_cli("list", cwd=c.main, check=True)
        assert aside.exists(), "a live breaker's aside file was taken from it"
        assert journal_events(c, "consumed", msg_id) == [], "repaired for a breaker that is still at work"
    finally:
        breaker.kill()
        breaker.wait()
    run_cli("status", "--json", cwd=c.main, check=True)
    run_cli("list", cwd=c.main, check=True)
    assert not aside.exists()
    [line] = journal_events(c, "consumed", msg_id)
    assert line["repaired"] is True


def test_a_repair_adds_no_line_while_a_live_process_holds_the_message(clone):
    """A dead breaker's aside file is repaired by another reader while a live consumer holds
    the message's claim, between its unlink and its journal line. The repair must not add
    the line the live one is about to write (the chaos test saw one consume journaled twice,
    once repaired and once by its consumer): repairs take the claim like every other move."""
    import subprocess
    import sys

    c = clone
    msg_id = send(c)
    clean("SessionStart", c.web, S1)
    assert_killed(drain("Stop", c.web, S1, env=crash_env("consume:unlinked-inbox")), "consume:unlinked-inbox")
    claiming = box_dir(c) / "claiming"
    claim = claiming / f"{msg_id}.claim"
    dead_breaker = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                                  capture_output=True, text=True, check=True)
    claim.rename(claiming / f"{msg_id}.claim.broken-{dead_breaker.stdout.strip()}-0badf00d")
    live = subprocess.Popen([sys.executable, "-c",
                             "import json, sys, time; from git_korus_mail.store import claims; "
                             "print(json.dumps(claims.me('consume', 'live')), flush=True); time.sleep(60)"],
                            stdout=subprocess.PIPE, text=True)
    try:
        claim.write_text(live.stdout.readline())
        os.chmod(claim, 0o600)
        run_cli("status", "--json", cwd=c.main, check=True)
        assert journal_events(c, "consumed", msg_id) == [], "a line added for a move a live process holds"
    finally:
        live.kill()
        live.wait()
    run_cli("status", "--json", cwd=c.main, check=True)
    run_cli("list", cwd=c.main, check=True)
    [line] = journal_events(c, "consumed", msg_id)
    assert line["repaired"] is True
