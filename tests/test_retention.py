"""Retention: consumed, expired and cancelled mail is kept `korus-mail.retention-days` (30 by
default), then pruned with its receipt, notice and display markers; queued mail never is.

The drain prunes at an opening show, at most once a day per box (the box's `pruned` stamp).
Ages are set from outside: a receipt's mtime is its consume time (os.utime backdates it);
otherwise the store's own prune is called with a `now` in the future.
"""

import json
import os
import subprocess
import sys
import time

from drainmodules import drain_modules
from helpers import context_of, git, hook, run_cli
from git_korus_mail.core import keys
from git_korus_mail.core.retention import check
from git_korus_mail.store import message, moves
from git_korus_mail.store.files import MailRoot

import invariants

DAY = 86400
S1 = "5f0c3f4e-1111-4c4c-9d9d-0000000000c1"
S2 = "5f0c3f4e-1111-4c4c-9d9d-0000000000c2"
S3 = "5f0c3f4e-1111-4c4c-9d9d-0000000000c3"


def box_dir(clone):
    return clone.mail_root / "box" / keys.key_for(str(clone.web)).name


def names(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def send(clone, body, *extra):
    proc = run_cli("send", "--to", "../web", "--json", *extra, "--", body, cwd=clone.main, check=True)
    return json.loads(proc.stdout)["results"][0]["id"]


def sent_ago(clone, body, days):
    """A message queued as a sender `days` ago would have queued it (its id encodes the time),
    expiring far ahead; the drain consumes it now, and the test backdates its receipt."""
    k = keys.key_for(str(clone.web))
    msg = message.build(body, k.path, k.name, {"path": str(clone.main), "branch": None, "session": None},
                        ttl_minutes=1000 * DAY / 60, now=time.time() - days * DAY)
    d = box_dir(clone) / "inbox"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    p = d / (msg["id"] + ".json")
    p.write_bytes(message.encode(msg))
    os.chmod(p, 0o600)
    return msg["id"]


def consume_all(clone, session=S1):
    hook("SessionStart", clone.web, session)
    hook("Stop", clone.web, session)


def backdate_receipt(clone, msg_id, days):
    p = box_dir(clone) / "receipts" / (msg_id + ".json")
    t = time.time() - days * DAY
    os.utime(p, (t, t))


def plant_ancient_queued(clone):
    """A queued message sent in 2001 that expires in 2100: its bytes, to compare after."""
    k = keys.key_for(str(clone.web))
    msg = message.build("ancient but queued", k.path, k.name, {"path": str(clone.main), "branch": None,
                                                               "session": None}, now=1_000_000_000.0)
    msg["expires_at"] = "2100-01-01T00:00:00.000000Z"
    data = message.encode(msg)
    p = box_dir(clone) / "inbox" / (msg["id"] + ".json")
    p.write_bytes(data)
    os.chmod(p, 0o600)
    return msg["id"], data


def pruned_lines(clone):
    return [r for r in invariants.journal(clone.mail_root) if r.get("event") == "pruned"]


def test_an_opening_show_prunes_old_consumed_mail_with_its_receipt_and_keeps_the_young(clone):
    young = send(clone, "young")  # the sender's record of it: status follows it
    old = sent_ago(clone, "old", 40)
    consume_all(clone)
    backdate_receipt(clone, old, 31)
    backdate_receipt(clone, young, 29)
    b = box_dir(clone)
    hook("SessionStart", clone.web, S2)
    assert names(b / "seen") == [young + ".json"] and names(b / "receipts") == [young + ".json"]
    [line] = pruned_lines(clone)
    assert line["count"] == 1 and line["states"] == {"seen": 1} and line["ids"] == [old]
    assert (b / "pruned").is_file() and names(b / "pruning") == []
    s = invariants.check(clone.mail_root)  # I2: the pair went together; I5: its sent record is accounted for
    assert old in s.pruned
    fate = {r["id"]: r["fate"] for r in json.loads(run_cli("status", "--json", cwd=clone.main).stdout)["sent"]}
    assert fate[young]["state"] == "consumed"


def test_status_says_a_sent_message_gone_after_the_retention_was_most_likely_pruned(clone):
    msg_id = send(clone, "old")
    consume_all(clone)
    sent = clone.mail_root / "box" / keys.key_for(str(clone.main)).name / "sent" / (msg_id + ".json")
    rec = json.loads(sent.read_text())
    rec["sent_at"] = "2001-09-09T01:46:40.000000Z"  # as if sent long ago
    sent.write_text(json.dumps(rec))
    root = MailRoot.open(str(clone.common_dir))
    from git_korus_mail.store import retention
    retention.prune(root.box(keys.key_for(str(clone.web)).name), 0, now=time.time() + DAY)
    [rec] = json.loads(run_cli("status", "--json", cwd=clone.main).stdout)["sent"]
    assert rec["fate"]["state"] == "missing" and rec["fate"]["detail"].endswith(
        "; most likely pruned (consumed, expired and cancelled mail is kept 30 days, then pruned)")


def test_at_most_once_a_day_per_box(clone):
    maker = send(clone, "makes the box")
    first, second = sent_ago(clone, "first", 50), sent_ago(clone, "second", 50)
    consume_all(clone)
    backdate_receipt(clone, first, 40)
    hook("SessionStart", clone.web, S2)
    backdate_receipt(clone, second, 40)
    hook("SessionStart", clone.web, S3)  # the stamp is fresh: nothing is examined
    assert names(box_dir(clone) / "seen") == sorted([second + ".json", maker + ".json"])
    assert len(pruned_lines(clone)) == 1


def test_pruning_keeps_every_queued_message_even_one_sent_long_ago(clone):
    send(clone, "consumed long ago")
    consume_all(clone)
    queued_id, data = plant_ancient_queued(clone)
    later = send(clone, "queued now", "--ttl", str(10 * 365 * 24 * 60))
    root = MailRoot.open(str(clone.common_dir))
    box = root.box(keys.key_for(str(clone.web)).name)
    from git_korus_mail.store import retention
    done = retention.prune(box, 0, now=time.time() + 400 * DAY)  # everything final is "old"
    assert sum(len(v) for v in done.values()) == 1
    b = box_dir(clone)
    assert names(b / "inbox") == sorted([queued_id + ".json", later + ".json"])
    assert (b / "inbox" / (queued_id + ".json")).read_bytes() == data
    assert names(b / "seen") == [] and names(b / "receipts") == []
    invariants.check(clone.mail_root)


def test_expired_and_cancelled_mail_go_after_their_retention_with_the_notice(clone):
    expiring = send(clone, "will expire", "--ttl", "1")
    cancelled = send(clone, "withdrawn")
    root = MailRoot.open(str(clone.common_dir))
    box = root.box(keys.key_for(str(clone.web)).name)
    assert moves.cancel(box, cancelled, by="test") == "cancelled"
    assert moves.expire_due(box, now=time.time() + 120) == [expiring]
    b = box_dir(clone)
    assert names(b / "notices") == [expiring + ".json"]
    from git_korus_mail.store import retention
    assert retention.prune(box, 30 * DAY, now=time.time() + 29 * DAY) == {}
    done = retention.prune(box, 30 * DAY, now=time.time() + 31 * DAY)
    assert done == {"expired": [expiring], "cancelled": [cancelled]}
    assert names(b / "expired") == [] and names(b / "cancelled") == [] and names(b / "notices") == []
    invariants.check(clone.mail_root)


def test_another_launchs_display_marker_of_a_pruned_message_goes_too(clone):
    send(clone, "makes the box")
    msg_id = sent_ago(clone, "seen by two", 40)
    hook("SessionStart", clone.web, S2)  # shown to S2, which never reaches Stop
    consume_all(clone, S1)
    b = box_dir(clone)
    assert any((d / msg_id).exists() for d in (b / "shown").iterdir())
    backdate_receipt(clone, msg_id, 31)
    hook("SessionStart", clone.web, S3)
    assert not any((d / msg_id).exists() for d in (b / "shown").iterdir())


def test_the_retention_setting_is_validated(clone):
    assert check("30") == (30, None) and check("0") == (0, None) and check(" 7\n") == (7, None)
    for bad in ("abc", "-1", "3.5", "36501", "١٢", ""):
        days, problem = check(bad)
        assert days == 30 and problem and "\n" not in problem, bad
    send(clone, "makes the store")
    git("config", "korus-mail.retention-days", "forever", cwd=clone.main)
    doc = json.loads(run_cli("doctor", "--json", cwd=clone.main).stdout)
    [f] = [f for f in doc["findings"] if f["check"] == "retention"]
    assert not f["ok"] and f["detail"] == ("korus-mail.retention-days 'forever' is not a whole number of days "
                                           "from 0 to 36500; the default, 30, is used")
    text = run_cli("status", cwd=clone.main).stdout
    assert "problem: korus-mail.retention-days 'forever' is not a whole number" in text
    assert json.loads(run_cli("status", "--json", cwd=clone.main).stdout)["retention"]["days"] == 30
    # the drain keeps the default meanwhile: 31 days old goes, 29 stays
    old, young = sent_ago(clone, "old", 40), sent_ago(clone, "young", 40)
    consume_all(clone)
    backdate_receipt(clone, old, 31)
    backdate_receipt(clone, young, 29)
    hook("SessionStart", clone.web, S2)
    seen = names(box_dir(clone) / "seen")
    assert young + ".json" in seen and old + ".json" not in seen


def test_a_configured_retention_is_used(clone):
    git("config", "korus-mail.retention-days", "3", cwd=clone.main)
    send(clone, "makes the box")
    msg_id = sent_ago(clone, "four days old", 5)
    consume_all(clone)
    backdate_receipt(clone, msg_id, 4)
    hook("SessionStart", clone.web, S2)
    assert msg_id + ".json" not in names(box_dir(clone) / "seen")
    assert pruned_lines(clone)[0]["kept_days"] == 3


def test_doctor_reports_the_store_size_per_state(clone):
    ids = [send(clone, "x" * 100 + str(n)) for n in range(3)]  # three texts: the same one thrice is a loop
    consume_all(clone)
    send(clone, "queued")
    doc = json.loads(run_cli("doctor", "--json", cwd=clone.main).stdout)
    [f] = [f for f in doc["findings"] if f["check"] == "size"]
    sizes = f["sizes"]
    b = box_dir(clone)
    seen_bytes = sum((b / "seen" / (i + ".json")).stat().st_size for i in ids)
    assert sizes["seen"] == {"files": 3, "bytes": seen_bytes}
    assert sizes["receipts"]["files"] == 3 and sizes["inbox"]["files"] == 1
    assert sizes["journal"]["files"] == 1
    assert sizes["total"]["files"] == sum(v["files"] for k, v in sizes.items() if k != "total")
    text = run_cli("doctor", cwd=clone.main).stdout
    assert "size" in text and "seen 3 (" in text and "inbox 1 (" in text


def _modules_an_opening_show_adds(clone, session):
    return drain_modules(clone.web, "SessionStart", session, source="startup")[1]


def test_an_opening_show_asks_git_only_when_a_prune_is_due(clone):
    hook("SessionStart", clone.web, S1)  # the box exists, empty: nothing to prune, no stamp needed
    added = _modules_an_opening_show_adds(clone, S2)
    assert "git_korus_mail.core.drain_show" in added  # the measurement works
    assert "subprocess" not in added and "git_korus_mail.core.retention" not in added
    send(clone, "consumed")
    consume_all(clone)
    assert "git_korus_mail.core.retention" in _modules_an_opening_show_adds(clone, S2)  # due: it asks
    added = _modules_an_opening_show_adds(clone, S3)  # stamped today: not again
    assert "subprocess" not in added and "git_korus_mail.core.retention" not in added


def test_a_run_prunes_a_bounded_number_and_the_next_goes_on(clone):
    ids = [send(clone, f"m{i}") for i in range(3)]
    consume_all(clone)
    root = MailRoot.open(str(clone.common_dir))
    box = root.box(keys.key_for(str(clone.web)).name)
    from git_korus_mail.store import retention
    later = time.time() + 40 * DAY
    assert retention.prune(box, 30 * DAY, now=later, limit=2) == {"seen": ids[:2]}
    assert not (box_dir(clone) / "pruned").exists()  # work left: no stamp, so it is due again
    assert box.prune_due(later)
    assert retention.prune(box, 30 * DAY, now=later, limit=2) == {"seen": ids[2:]}
    assert (box_dir(clone) / "pruned").exists() and not box.prune_due(time.time() + 60)
    assert [r["count"] for r in pruned_lines(clone)] == [2, 1]


def test_a_file_beside_the_messages_is_never_taken_for_one(clone):
    msg_id = send(clone, "consumed")
    consume_all(clone)
    seen = box_dir(clone) / "seen"
    (seen / (msg_id + ".why.json")).write_text("{}")  # a record another state might keep beside mail
    root = MailRoot.open(str(clone.common_dir))
    from git_korus_mail.store import retention
    done = retention.prune(root.box(keys.key_for(str(clone.web)).name), 0, now=time.time() + DAY)
    assert done == {"seen": [msg_id]} and names(seen) == [msg_id + ".why.json"]


def test_records_outliving_their_use_go_after_the_retention_and_live_ones_stay(clone):
    """sent/ records of mail long expired, quarantined junk set aside long ago, and the presence of
    sessions whose client is gone go; a young sent record and a live session's presence stay."""
    from git_korus_mail.store import retention
    short = send(clone, "expires in 3 days")
    long_lived = send(clone, "expires in 100 days", "--ttl", str(100 * 24 * 60))
    consume_all(clone)  # S1's launch is this pytest process (conftest): live
    web = box_dir(clone)
    (web / "inbox" / "junk.txt").write_text("not mail")
    hook("UserPromptSubmit", clone.web, S1)  # quarantines the junk
    assert len(names(web / "quarantine")) == 2  # the entry and its .why.json
    ended = "5f0c3f4e-1111-4c4c-9d9d-0000000000e9"
    hook("SessionStart", clone.web, ended)
    hook("SessionEnd", clone.web, ended)  # closed: its client ended it
    assert f"{ended}.json" in names(web / "sessions")
    root = MailRoot.open(str(clone.common_dir))
    main_box = root.box(keys.key_for(str(clone.main)).name)
    web_box = root.box(keys.key_for(str(clone.web)).name)
    later = time.time() + 3 * DAY + 31 * DAY  # the short one expired 31 days before
    assert retention.prune_records(main_box, 30 * DAY, later) == {"sent": 1}
    assert names(clone.mail_root / "box" / keys.key_for(str(clone.main)).name / "sent") == [long_lived + ".json"]
    assert short not in json.dumps(json.loads(run_cli("status", "--json", cwd=clone.main).stdout)["sent"])
    assert retention.prune_records(web_box, 30 * DAY, later) == {"quarantine": 1, "sessions": 1}
    assert names(web / "quarantine") == []
    left = names(web / "sessions")
    assert f"{S1}.json" in left and not any(n.startswith(ended) for n in left)
    assert retention.prune_records(web_box, 30 * DAY, time.time() + 29 * DAY) == {}  # nothing else is old
    invariants.check(clone.mail_root)


def test_a_box_holding_only_records_is_pruned_at_an_opening_show_once_a_day_old(clone):
    """A sender's box keeps no final state of its own, only sent records: its opening show prunes
    them too, once the box is a day old (a box made today has none to prune: no git is asked)."""
    git("config", "korus-mail.retention-days", "0", cwd=clone.main)  # kept no longer than until it expires
    send(clone, "from main", "--ttl", "1")
    sent = clone.mail_root / "box" / keys.key_for(str(clone.main)).name / "sent"
    [name] = names(sent)
    rec = json.loads((sent / name).read_text())
    rec["expires_at"] = "2001-09-12T01:46:40.000000Z"  # as if its minute were long over
    (sent / name).write_text(json.dumps(rec))
    hook("SessionStart", clone.main, S1)
    assert names(sent) == [name] and pruned_lines(clone) == []  # the box is new today
    made = clone.mail_root / "box" / keys.key_for(str(clone.main)).name / "worktree"
    t = time.time() - 2 * DAY
    os.utime(made, (t, t))
    hook("SessionStart", clone.main, S2)
    assert names(sent) == []
    [line] = pruned_lines(clone)
    assert line["records"] == {"sent": 1} and line["count"] == 0


# -- a clock stepped forward or back never costs queued mail (issue 22, item 4) ----------------
def _plant(clone, body, sent_days_ago, expired_days_ago):
    """A queued message sent `sent_days_ago` whose expiry passed `expired_days_ago`, as a box
    nobody opened for that long holds it (or one whose clock was then stepped forward)."""
    k = keys.key_for(str(clone.web))
    msg = message.build(body, k.path, k.name, {"path": str(clone.main), "branch": None, "session": None},
                        now=time.time() - sent_days_ago * DAY)
    msg["expires_at"] = utc(time.time() - expired_days_ago * DAY)
    d = box_dir(clone) / "inbox"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    p = d / (msg["id"] + ".json")
    p.write_bytes(message.encode(msg))
    os.chmod(p, 0o600)
    return msg["id"]


def utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000000Z"


def test_mail_expired_long_after_its_expiry_is_kept_its_days_from_that_move(clone):
    """The opening show that expires mail tells "their bodies are kept": the same run's prune
    must not take them, however long ago their expiry was. Kept 30 days from the move."""
    send(clone, "makes the box")
    late = _plant(clone, "expired 40 days ago, unread", 43, 40)
    ans, _ = hook("SessionStart", clone.web, S1)
    b = box_dir(clone)
    assert names(b / "expired") == [late + ".json"], "expired and pruned in the same run"
    assert pruned_lines(clone) == [] and (b / "pruned").is_file()  # the prune ran, and kept it
    from git_korus_mail.store import retention
    box = MailRoot.open(str(clone.common_dir)).box(keys.key_for(str(clone.web)).name)
    assert retention.prune(box, 30 * DAY, now=time.time() + 29 * DAY) == {}
    assert retention.prune(box, 30 * DAY, now=time.time() + 31 * DAY) == {"expired": [late]}
    invariants.check(clone.mail_root)


def test_a_prune_whose_clock_reads_earlier_than_the_stores_stamps_prunes_nothing(clone):
    """A clock stepped back: against the box's last prune (its `pruned` stamp), or against a
    move's stamp (a receipt's mtime), the run prunes nothing, not even mail old by every clock."""
    from git_korus_mail.store import retention
    maker = send(clone, "makes the box")
    old = sent_ago(clone, "old by every clock", 50)
    ahead = sent_ago(clone, "consumed while the clock was 40 days ahead", 45)
    consume_all(clone)
    backdate_receipt(clone, old, 40)
    backdate_receipt(clone, ahead, -40)  # its consume stamped by a clock 40 days ahead
    box = MailRoot.open(str(clone.common_dir)).box(keys.key_for(str(clone.web)).name)
    b = box_dir(clone)
    assert retention.prune(box, 30 * DAY, now=time.time()) == {}
    assert (b / "seen" / (old + ".json")).exists() and (b / "receipts" / (old + ".json")).exists()
    # the clock put right (the receipt stamped as now), a prune ran 40 days ahead, then the clock went back
    backdate_receipt(clone, ahead, 0)
    assert retention.prune(box, 30 * DAY, now=time.time() + 40 * DAY) == {"seen": [old, ahead, maker]}
    again = sent_ago(clone, "old by every clock too", 50)
    consume_all(clone, S2)
    backdate_receipt(clone, again, 40)
    stamp = (b / "pruned").read_text()
    assert retention.prune(box, 30 * DAY, now=time.time()) == {}
    assert (b / "seen" / (again + ".json")).exists() and (b / "pruned").read_text() == stamp
    assert [line["ids"] for line in pruned_lines(clone)] == [sorted([old, ahead, maker])]
    invariants.check(clone.mail_root)


def _faketime_env(offset):
    """The environment that runs a process (and its children) with its clock `offset` from the
    system's, as `faketime` does; the file system's times stay the kernel's."""
    import glob
    libs = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1") + glob.glob("/usr/local/lib/faketime/libfaketime.so.1")
                  + glob.glob("/usr/lib/faketime/libfaketime.so.1"))
    if not libs:
        import pytest
        pytest.skip("libfaketime is not installed (Debian: apt-get install faketime)")
    return {"LD_PRELOAD": libs[0], "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "DONT_FAKE_MONOTONIC": "1"}


def test_a_clock_stepped_forward_then_back_loses_no_mail(clone):
    """The red team's run: under `faketime +40d` one opening show expires every queued message
    (a TTL means that) and must keep them; mail consumed then stays its 30 days from that
    consume; once the clock is put right, a prune prunes nothing, even mail old by any clock."""
    ahead = _faketime_env("+40d")
    probe = subprocess.run([sys.executable, "-c", "import time; print(time.time())"], env={**os.environ, **ahead},
                           capture_output=True, text=True, check=True)
    assert float(probe.stdout) - time.time() > 39 * DAY, "the faked clock is not ahead"
    queued = [send(clone, f"queued {n}") for n in range(3)]  # expire in 3 days, by the true clock
    fresh_id = send(clone, "kept 100 days", "--ttl", str(100 * 24 * 60))
    ans, _ = hook("SessionStart", clone.web, S1, env=ahead)
    b = box_dir(clone)
    assert names(b / "expired") == sorted(i + ".json" for i in queued), "expired, then pruned in the same run"
    assert "expired" in context_of(ans) and "kept 100 days" in context_of(ans)
    hook("Stop", clone.web, S1, env=ahead)  # consumed with the clock ahead
    assert names(b / "seen") == [fresh_id + ".json"]
    (b / "pruned").unlink()  # a day passed, with the clock still ahead: the next opening show prunes
    hook("SessionStart", clone.web, S2, env=ahead)
    assert names(b / "seen") == [fresh_id + ".json"] and names(b / "receipts") == [fresh_id + ".json"], \
        "consumed a moment ago by its clock, pruned as 40 days old"
    assert len(names(b / "expired")) == 3 and pruned_lines(clone) == []
    stamp = (b / "pruned").read_text()

    # the clock put right; a day later (the stamp's mtime), with mail there old by any clock
    old = sent_ago(clone, "old by every clock", 50)
    consume_all(clone, S3)
    backdate_receipt(clone, old, 40)
    t = time.time() - 2 * DAY
    os.utime(b / "pruned", (t, t))
    hook("SessionStart", clone.web, "5f0c3f4e-1111-4c4c-9d9d-0000000000c4")
    assert names(b / "seen") == sorted([fresh_id + ".json", old + ".json"]), "pruned with the clock gone back"
    assert len(names(b / "expired")) == 3 and pruned_lines(clone) == [] and (b / "pruned").read_text() == stamp
    invariants.check(clone.mail_root)
