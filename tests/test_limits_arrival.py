"""Limits of relayed mail judged by its arrival here, not by its id (the sending machine's clock):
store/arrivals.py, core/limits.py, docs/STORE.md "Arrivals", docs/RELAY.md. Relayed mail is
forged as the relay leaves it (from.path prefixed with the clone's label, from.clone set, an
arrival record made before the inbox link) and judged by the real drain in its own process.
The relay itself, with a server and a sender clock days off, is tests/test_relay_arrival.py."""

import json
import os
import time

import pytest

import invariants
from install_fixtures import box_dir, mkdir700
from test_limits import show_all, shown_ids, state_of

from git_korus_mail.core import keys
from git_korus_mail.store import arrivals, message
from git_korus_mail.store.files import MailRoot

DAY = 86400.0
NOW = time.time() - 600  # arrivals ten minutes ago: well inside the TTL, well past any clock jitter


def relayed(clone, body, sent, arrived, label="vm", session="s-vm"):
    """Mail from another clone as its relay queues it here: the id and sent_at by the sender's
    clock (`sent`), the arrival by this one's (`arrived`), recorded before the link."""
    k = keys.key_of_root(os.path.realpath(clone.web))
    sender = {"path": f"{label}:/home/u/proj/web", "branch": None, "session": session,
              "clone": f"{label}:0123456789abcdef"}
    msg = message.build(body, k.path, k.name, sender, now=sent, ttl_minutes=30 * 24 * 60)
    box = MailRoot.open(str(clone.common_dir), create=True).box(k.name, create=True, path=k.path)
    inbox = mkdir700(box_dir(clone, clone.web) / "inbox")
    arrivals.record(box, msg["id"], arrived)
    tmp = inbox / f".{msg['id']}.tmp"
    tmp.write_bytes(message.encode(msg))
    tmp.chmod(0o600)
    os.rename(tmp, inbox / f"{msg['id']}.json")
    return msg["id"]


# -- the record's bytes ------------------------------------------------------------------
def test_an_arrival_is_an_empty_file_named_by_its_time_and_id(clone):
    k = keys.key_of_root(os.path.realpath(clone.web))
    root = MailRoot.open(str(clone.common_dir), create=True)
    box = root.box(k.name, create=True, path=k.path)
    msg_id = "20261202T065416.123456Z-p4242-0123456789abcdef"
    t = 1796194800.25  # 2026-12-02T07:00:00.250000Z
    assert arrivals.name_of(t, msg_id) == "20261202T070000.250000Z+20261202T065416.123456Z-p4242-0123456789abcdef"
    arrivals.record(box, msg_id, t)
    arrivals.record(box, msg_id, t + 3)  # a relay killed before the link delivers again: a later second record
    d = box_dir(clone, clone.web) / "arrived"
    assert sorted(os.listdir(d)) == ["20261202T070000.250000Z+20261202T065416.123456Z-p4242-0123456789abcdef",
                                     "20261202T070003.250000Z+20261202T065416.123456Z-p4242-0123456789abcdef"]
    assert [(d / n).read_bytes() for n in os.listdir(d)] == [b"", b""]
    assert oct((d / os.listdir(d)[0]).stat().st_mode & 0o777) == "0o600"
    (d / "junk").write_bytes(b"x")
    (d / "20261202T070000.250000Z+not-an-id").write_bytes(b"")
    seen = arrivals.Arrivals(box)
    assert seen.when == {msg_id: t}  # the earliest of the two; junk is no record
    assert arrivals.parse_name("20261302T070000.250000Z+" + msg_id) is None  # month 13


# -- the rules by arrival ------------------------------------------------------------------
def test_a_clock_stepped_back_days_between_two_sends_is_still_a_loop(clone):
    """A sender days ahead sends "ping", its clock is corrected, and it sends "ping" again: by the
    ids three days apart (never a loop), by arrival two seconds apart: the second is dropped."""
    ahead = relayed(clone, "ping", sent=NOW + 3 * DAY, arrived=NOW)
    again = relayed(clone, "ping", sent=NOW + 2, arrived=NOW + 2)
    show_all(clone)
    assert shown_ids(clone) == {ahead}
    assert state_of(clone, again) == "dropped"
    why = json.loads((box_dir(clone, clone.web) / "drops" / f"{again}.json").read_text())
    assert why["rule"] == "loop" and ahead in why["detail"] and "arrived 2.0 s before it" in why["detail"], why
    invariants.check(clone.mail_root)


def test_a_burst_written_over_hours_on_a_slow_clock_is_judged_by_its_arrival(clone):
    """Nine messages written an hour apart by a clock two days behind, held in an outbox, arrive
    here within seconds: the 9th in 30 s from one sender is dropped (korus-mail.rate 8/30)."""
    burst = [relayed(clone, f"step {n}", sent=NOW - 2 * DAY + n * 3600, arrived=NOW + n * 0.5) for n in range(9)]
    show_all(clone)
    assert shown_ids(clone) == set(burst[:8])
    assert state_of(clone, burst[8]) == "dropped"
    why = json.loads((box_dir(clone, clone.web) / "drops" / f"{burst[8]}.json").read_text())
    assert why["rule"] == "rate" and "9 messages within 30 s" in why["detail"], why
    invariants.check(clone.mail_root)


def test_mail_sent_within_seconds_that_arrived_minutes_apart_is_no_loop(clone):
    """The other way round: ids 1 s apart (the sender's clock) but arrivals a minute apart, and
    another clone's mail at the same instants: nothing is dropped."""
    first = relayed(clone, "ping", sent=NOW - 5 * DAY, arrived=NOW)
    later = relayed(clone, "ping", sent=NOW - 5 * DAY + 1, arrived=NOW + 60)
    other = relayed(clone, "ping", sent=NOW + 61, arrived=NOW + 61, label="ci", session="s-ci")
    show_all(clone)
    assert shown_ids(clone) == {first, later, other}
    invariants.check(clone.mail_root)


def test_local_mail_is_still_judged_by_its_ids_beside_relayed_mail(clone):
    """A box with relayed mail judges its local senders as before: the same text 2 s later from a
    local sender is a loop, whatever arrived from elsewhere in between."""
    from test_limits import forge
    relayed(clone, "ping", sent=NOW + 3 * DAY, arrived=NOW + 1)
    a1 = forge(clone, "ping", NOW)
    a2 = forge(clone, "ping", NOW + 2)
    show_all(clone)
    assert state_of(clone, a2) == "dropped" and a1 in shown_ids(clone)
    invariants.check(clone.mail_root)


def test_retention_prunes_old_arrival_records_but_never_a_queued_messages(clone):
    old_queued = relayed(clone, "still queued", sent=NOW - 40 * DAY, arrived=NOW - 40 * DAY)
    old_consumed = relayed(clone, "consumed long ago", sent=NOW - 40 * DAY + 1, arrived=NOW - 40 * DAY + 1)
    fresh = relayed(clone, "new", sent=NOW, arrived=NOW)
    box_path = box_dir(clone, clone.web)
    # consumed: moved out of the inbox (the prune looks only at whether it is queued)
    mkdir700(box_path / "expired")
    os.rename(box_path / "inbox" / f"{old_consumed}.json", box_path / "expired" / f"{old_consumed}.json")
    k = keys.key_of_root(os.path.realpath(clone.web))
    from git_korus_mail.store import retention
    box = MailRoot.open(str(clone.common_dir)).box(k.name)
    removed = retention.prune_records(box, 30 * DAY, time.time())
    assert removed.get("arrived") == 1, removed
    assert set(arrivals.Arrivals(box).when) == {old_queued, fresh}


def test_the_invariants_refuse_queued_relayed_mail_without_its_arrival(clone):
    msg_id = relayed(clone, "ping", sent=NOW, arrived=NOW)
    invariants.check(clone.mail_root)
    arrived = box_dir(clone, clone.web) / "arrived"
    [name] = os.listdir(arrived)
    os.unlink(arrived / name)
    with pytest.raises(AssertionError, match="relayed mail queued with no arrival record"):
        invariants.check(clone.mail_root)
    (arrived / name).write_bytes(b"{}")
    with pytest.raises(AssertionError, match="not empty"):
        invariants.check(clone.mail_root)
    os.unlink(arrived / name)
    (arrived / f"{name}.tmp").write_bytes(b"")
    with pytest.raises(AssertionError, match="stray file"):
        invariants.check(clone.mail_root)
    assert msg_id in name


def test_a_forwarded_relayed_message_takes_its_arrival_along(clone):
    """`forward` (or the adoption of a moved worktree's box) moves queued mail to another box:
    relayed mail keeps its arrival there, so it is judged by it and the invariants hold."""
    from git_korus_mail.store import moves
    first = relayed(clone, "ping", sent=NOW + 3 * DAY, arrived=NOW)
    again = relayed(clone, "ping", sent=NOW + 2, arrived=NOW + 2)
    root = MailRoot.open(str(clone.common_dir))
    src = root.box(keys.key_of_root(os.path.realpath(clone.web)).name)
    k = keys.key_of_root(os.path.realpath(clone.main))
    dst = root.box(k.name, create=True, path=k.path)
    assert [moves.forward(src, dst, i, "forwarded") for i in (first, again)] == ["moved", "moved"]
    assert set(arrivals.Arrivals(dst).when) == {first, again}
    invariants.check(clone.mail_root)
    from test_limits import hook
    hook("SessionStart", clone.main, "s-api")
    assert (box_dir(clone, clone.main) / "dropped" / f"{again}.json").exists()  # the loop, by arrival, there
    invariants.check(clone.mail_root)


def test_the_oldest_unread_age_of_relayed_mail_is_from_its_arrival(clone):
    """`list` and `status` say how long mail has waited: relayed mail by when it came here."""
    from git_korus_mail.store import records
    relayed(clone, "from a clock three days ahead", sent=NOW + 3 * DAY, arrived=NOW)
    relayed(clone, "from a clock three days behind", sent=NOW - 3 * DAY, arrived=NOW + 60)
    box = MailRoot.open(str(clone.common_dir)).box(keys.key_of_root(os.path.realpath(clone.web)).name)
    assert abs(records.oldest_unread_age(box, now=NOW + 600) - 600) < 0.01  # to the microsecond of the names
    from test_limits import forge
    forge(clone, "local, an hour before", NOW - 3600)
    assert abs(records.oldest_unread_age(box, now=NOW + 600) - 4200) < 0.01
