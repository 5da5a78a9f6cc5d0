"""The relay process: one per clone, started by `remote add` (and by a send that queued remote
mail while none ran). `python -m git_korus_mail.core.relayhost <common dir>` runs it: it hands the
relay what only the core knows of this clone (relay/directory.Facts), as the relay imports
nothing of the core (docs/RELAY.md, "Layers").

This module and relay/server.py are the ones that import nats (docs/RELAY.md, "Cost"). Its loop:
  - the outbox: publish each entry with Nats-Msg-Id = the message id, remove it on the ack;
  - incoming: a durable pull consumer on this clone's subject; each message is put into its
    inbox through the store's publish, guarded by relay/received/<id>.json and the box's fate
    so that a redelivery (the relay killed before its ack) never doubles it; then the ack;
  - fates: once a message received here is consumed (the local receipt decides) or otherwise
    final, that fate goes back to the sender's clone, which records it in relay/sent/;
  - the directory: this clone's worktrees into the namespace's KV bucket, every clone's into
    relay/peers.json (what send resolves `<label>:<worktree>` with, offline);
  - relay/state.json: the link, the lag (mail waiting for us on the server), the last error.
"""

import asyncio
import json
import os
import signal
import sys
import time

import nats
from nats.errors import NoServersError, TimeoutError as NatsTimeout
from nats.js import api
from nats.js.errors import KeyNotFoundError

from git_korus_mail import crash
from git_korus_mail.stamps import parse_stamp, utc_stamp
from git_korus_mail.relay import asking, decisions, directory, local, names, returns
from git_korus_mail.relay.server import (LegacyConsumer, bind_inbox, close, connect, directory_keys, ensure_bucket,
                                         ensure_stream, put_legacy_entry, refused)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional

POLL = 0.02          # the outbox's poll: a send waits at most this long for the relay to see it
FATE_POLL = 0.25     # how often received mail's fate is looked at
DIRECTORY_EVERY = 1.0  # a new clone or worktree reaches the others within about this
STATE_EVERY = 1.0
PRUNE_EVERY = 3600.0   # relay/sent and relay/received are pruned at start and then hourly
SESSIONS_EVERY = 3.0   # this clone's named sessions (the roster) are read again at most this often
ACK_WAIT = 3.0       # a message this relay took but never acked (killed) is redelivered after this


class Relay:
    def __init__(self, common_dir: str, conf: "Dict[str, Any]", facts: "directory.Facts") -> None:
        self.common_dir = common_dir
        self.conf = conf
        self.facts = facts
        self.ns = conf["namespace"]
        self.nc: "Any" = None
        self.js: "Any" = None
        self.kv: "Any" = None
        self.sub: "Any" = None
        self.error: "Optional[str]" = None
        self.pending: "Optional[int]" = None
        self.connected_since: "Optional[float]" = None
        self.last_ok: "Optional[float]" = None
        self.stopping = False
        self.named: "list[Dict[str, Any]]" = []
        self.sessions_at = -SESSIONS_EVERY
        self.owners: "Dict[str, str]" = {}         # label -> the clone id its claim names (owns_label)
        self.refused_entries: "set[str]" = set()   # directory entries journaled as refused once
        self.legacy_writes = True                  # its entry under the older key too, until refused
        from git_korus_mail.store.files import MailRoot
        root = MailRoot.open(common_dir, create=True)
        assert root is not None  # for mypy: create=True makes the root or raises
        self.root = root

    # -- the loop ---------------------------------------------------------------------
    async def run(self) -> None:
        tasks = [asyncio.ensure_future(self.supervised(t)) for t in (
            self.keep_connected, self.pump_outbox, self.take_incoming, self.send_fates, self.keep_directory,
            self.keep_state, self.keep_pruned)]
        try:
            while not self.stopping:
                await asyncio.sleep(0.1)
        finally:
            for t in tasks:
                t.cancel()
            self.save_state()

    async def supervised(self, loop: "Any") -> None:
        """One of the relay's loops, started again after an error it did not expect (a store that
        refused a box, a full disk): a dead task would stop that work while the link looked up.
        A message being taken when it failed was not acked: the server gives it again."""
        while not self.stopping:
            try:
                await loop()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - reported in state.json and relay.log, then retried
                import traceback
                self.error = f"{loop.__name__}: {exc or type(exc).__name__}"
                traceback.print_exc()
                sys.stderr.flush()
                await asyncio.sleep(1)

    def link_up(self) -> bool:
        return self.nc is not None and self.nc.is_connected and self.sub is not None

    async def keep_connected(self) -> None:
        while not self.stopping:
            if self.nc is None:
                try:
                    self.nc = await connect(self.conf)
                    self.js = self.nc.jetstream(timeout=3)
                    await ensure_stream(self.js, self.ns)
                    self.kv = await ensure_bucket(self.js, self.ns)
                    cfg = api.ConsumerConfig(ack_wait=ACK_WAIT, max_ack_pending=256)
                    self.sub = await bind_inbox(self.js, self.ns, self.conf, cfg)
                    self.connected_since = time.time()
                    self.error = None
                except LegacyConsumer as exc:
                    self.error = str(exc)
                    await self._drop()
                    await asyncio.sleep(5)
                    continue
                except (OSError, NoServersError, NatsTimeout, asyncio.TimeoutError, nats.errors.Error) as exc:
                    self.error = refused() or f"cannot reach {self.conf['url']}: {exc or type(exc).__name__}"
                    await self._drop()
                    await asyncio.sleep(0.5)
                    continue
            if not self.nc.is_connected:
                self.connected_since = None
            await asyncio.sleep(0.2)

    async def _drop(self) -> None:
        nc, self.nc, self.sub, self.js, self.kv = self.nc, None, None, None, None
        if nc is not None:
            await close(nc)  # a dead link closes however it can

    # -- outgoing ------------------------------------------------------------------------
    async def pump_outbox(self) -> None:
        """The outbox and the cancels, in one task: a cancel is decided before its mail is
        published in the same round, never while that publish is under way."""
        while not self.stopping:
            cancels = local.cancel_ids(self.common_dir)
            ids = local.outbox_ids(self.common_dir)
            if not (ids or cancels) or not self.link_up():
                await asyncio.sleep(POLL)
                continue
            for msg_id in cancels:
                if not await decisions.decide_cancel(self, msg_id):
                    break
            waiting = set(local.cancel_ids(self.common_dir))
            for msg_id in ids:
                if msg_id in waiting:
                    continue  # its cancel is not decided yet: never published meanwhile
                if not await self.publish_one(msg_id):
                    break
            await asyncio.sleep(POLL)

    async def publish_one(self, msg_id: str) -> bool:
        env = local.read_entry(self.common_dir, local.OUTBOX, msg_id)
        if env is None:
            local.remove_entry(self.common_dir, local.OUTBOX, msg_id)  # damaged: never publishable
            self.root.journal("relay-dropped", id=msg_id, why="unreadable outbox entry")
            return True
        try:
            ack = await self.js.publish(names.subject_to(self.ns, env["to_clone"], self.conf["label"]), local.encode(env),
                                        timeout=3, headers={"Nats-Msg-Id": msg_id})
        except Exception as exc:  # noqa: BLE001 - a timeout, a refused publish, a lost link: it stays queued
            self.error = f"publish {msg_id}: {exc or type(exc).__name__}; it waits in the outbox"
            return False
        crash.point("relay:published")
        self.last_ok = time.time()
        local.mark(self.common_dir, local.SENT, msg_id, local.sent_entry(env, seq=ack.seq, duplicate=bool(ack.duplicate)))
        crash.point("relay:sent-recorded")
        local.remove_entry(self.common_dir, local.OUTBOX, msg_id)
        self.root.journal("relay-published", id=msg_id, to=f"{env['to_label']}:{env['msg']['to']['path']}")
        return True

    # -- incoming ------------------------------------------------------------------------
    async def take_incoming(self) -> None:
        while not self.stopping:
            if not self.link_up():
                await asyncio.sleep(0.1)
                continue
            try:
                msgs = await self.sub.fetch(16, timeout=1)
            except (NatsTimeout, asyncio.TimeoutError):
                continue
            except Exception as exc:  # noqa: BLE001 - the link went: keep_connected mends it
                self.error = f"fetch: {exc or type(exc).__name__}"
                await asyncio.sleep(0.2)
                continue
            for m in msgs:
                self.last_ok = time.time()
                if await self.take_one(m.data, m.subject):
                    await m.ack()

    async def take_one(self, data: bytes, subject: str = "") -> bool:
        """Put one incoming envelope where it belongs; True when it may be acked."""
        try:
            env = json.loads(data.decode("utf-8"))
            kind = env.get("type")
        except (ValueError, AttributeError):
            self.root.journal("relay-refused", why="not JSON")
            return True
        # the subject's last token is the sender's label, the one thing the server checks against
        # the sender's credentials (docs/RELAY.md, "Trust"): an envelope that claims another is forged
        sender = names.sender_of(subject)
        if sender is None or env.get("from_label") != sender:
            self.root.journal("relay-refused", id=str(env.get("id"))[:64],
                              why=f"sent as {sender!r} but claims {str(env.get('from_label'))[:40]!r}")
            return True
        if kind == "fate":
            return returns.take_fate(self.common_dir, env, refuse=lambda msg_id, why: self.root.journal(
                "relay-refused", id=msg_id[:64], why=why))
        if kind == "cancel":
            return await decisions.take_cancel(self, env)
        if kind != "mail":
            self.root.journal("relay-refused", why=f"unknown type {str(kind)[:20]!r}")
            return True
        return await self.deliver(env)

    async def deliver(self, env: "Dict[str, Any]") -> bool:
        from git_korus_mail.errors import MailError
        from git_korus_mail.store import message
        raw = env.get("msg")
        try:
            msg = message.parse(local.encode(raw), expected_id=env.get("id"))
        except message.Invalid as exc:
            self.root.journal("relay-refused", id=str(env.get("id"))[:64], why=str(exc))
            return True
        msg_id = msg["id"]
        if local.read_entry(self.common_dir, local.RECEIVED, msg_id) is not None:
            return True  # a redelivery of mail put in its inbox already
        key, path = msg["to"]["key"], msg["to"].get("path")
        if not isinstance(path, str):
            path = None
        # the receiver's clock decides expiry (docs/RELAY.md): the sender's TTL, from arrival
        now = time.time()
        ttl = max(60.0, message.expires_at(msg) - parse_stamp(msg["sent_at"]))
        msg["expires_at"] = utc_stamp(now + ttl)
        # the sender's path names a directory on another machine: prefixed with its clone's label,
        # it can never be taken for a worktree here (the same layout on two machines is common),
        # so a `reply` to it is refused rather than misrouted (replies across: docs/RELAY.md, not built)
        sender = msg["from"].copy()
        if isinstance(sender.get("path"), str):
            sender["path"] = f"{env.get('from_label')}:{sender['path']}"
        sender["clone"] = f"{env.get('from_label')}:{env.get('from_clone')}"
        msg["from"] = sender
        box = self.root.box(key, create=True, path=path)
        assert box is not None  # for mypy: create=True makes the box or raises
        from git_korus_mail.store import records  # loaded where used
        state, _ = records.fate(box, msg_id)
        if state == "gone":
            # the delivery against a cancel of the sender's: decided once, across machines
            won = await decisions.decide(self, msg_id, {"state": "delivered", "clone": self.conf["clone"],
                                             "at": utc_stamp(now)})
            if won.get("state") == "cancelled":
                local.mark(self.common_dir, local.RECEIVED, msg_id,
                           {"id": msg_id, "box": key, "from_clone": env.get("from_clone"),
                            "from_label": env.get("from_label"), "received_at": now,
                            "fate": {"state": "cancelled", "detail": "cancelled by its sender before delivery"}})
                self.root.journal("relay-cancelled", id=msg_id, box=key, how="before its delivery")
                return True
            crash.point("relay:delivery-decided")
            # its arrival by this clock, before it is queued: the receiver's limits judge relayed
            # mail by it, never by its id (the sender's clock; store/arrivals.py)
            from git_korus_mail.store import arrivals  # loaded where used
            arrivals.record(box, msg_id, now)
            crash.point("relay:arrival-recorded")
            try:
                from git_korus_mail.store import publish  # loaded where used
                publish.publish(box, msg, message.encode(msg))
            except MailError:
                pass  # queued already: a publish of ours killed after its link
            crash.point("relay:inbox-published")
            self.root.journal("relay-received", id=msg_id, box=key, sender=f"{env.get('from_label')}")
        if msg.get("kind") == message.KIND_ANSWER and isinstance(msg.get("in_reply_to"), str):
            returns.note_answer(self.common_dir, dict(msg), env)
        local.mark(self.common_dir, local.RECEIVED, msg_id,
                   {"id": msg_id, "box": key, "from_clone": env.get("from_clone"),
                            "from_label": env.get("from_label"), "received_at": now,
                    "fate": None})
        crash.point("relay:received-marked")
        return True

    # -- fates -----------------------------------------------------------------------------
    async def send_fates(self) -> None:
        """A received message's fate, once final here, goes back to its sender's clone."""
        while not self.stopping:
            await asyncio.sleep(FATE_POLL)
            if not self.link_up():
                continue
            for msg_id in local.received_ids(self.common_dir):
                rec = local.read_entry(self.common_dir, local.RECEIVED, msg_id)
                if rec is None or rec.get("fate") is not None:
                    continue
                box = self.root.box(str(rec.get("box")))
                if box is None:
                    continue
                from git_korus_mail.store import records  # loaded where used
                state, detail = records.fate(box, msg_id)
                if state in ("queued", "consumed-unmoved"):
                    continue
                fate: "Dict[str, Any]" = {"state": state}
                if state == "consumed":
                    from git_korus_mail.store import records  # loaded where used
                    receipt = records.receipt(box, msg_id) or {}
                    fate.update(session=detail, at=receipt.get("consumed_at"),
                                receipt=receipt)
                env = {"v": local.FORMAT, "type": "fate", "id": msg_id, "from_clone": self.conf["clone"],
                       "from_label": self.conf["label"], "fate": fate}
                try:
                    await self.js.publish(names.subject_to(self.ns, str(rec.get("from_clone")), self.conf["label"]), local.encode(env),
                                          timeout=3, headers={"Nats-Msg-Id": f"fate-{msg_id}"})
                except Exception as exc:  # noqa: BLE001 - retried at the next poll
                    self.error = f"fate {msg_id}: {exc or type(exc).__name__}"
                    break
                crash.point("relay:fate-published")
                local.mark(self.common_dir, local.RECEIVED, msg_id, {**rec, "fate": fate}, replace=True)

    # -- the directory and the state ----------------------------------------------------------
    def sessions(self) -> "list[Dict[str, Any]]":
        """This clone's named sessions, read again at most every SESSIONS_EVERY seconds."""
        if time.monotonic() - self.sessions_at >= SESSIONS_EVERY:
            self.named = self.facts.sessions()
            self.sessions_at = time.monotonic()
        return self.named

    async def keep_directory(self) -> None:
        while not self.stopping:
            if self.link_up():
                try:
                    await self.publish_directory()
                    self.last_ok = time.time()  # the server answered: doctor's "last contact"
                except Exception as exc:  # noqa: BLE001 - the next round tries again
                    self.error = f"directory: {exc or type(exc).__name__}"
            await asyncio.sleep(DIRECTORY_EVERY if self.link_up() else 0.2)

    async def publish_directory(self) -> None:
        me = {"label": self.conf["label"], "clone": self.conf["clone"], "worktrees": self.facts.worktrees(),
              "sessions": self.sessions(), "updated": time.time()}
        me["waits"] = asking.published_waits(self.root, self.conf["clone"])  # the cycle check across clones
        # keyed by the label, which only this clone's user may write (docs/RELAY.md, "Trust")
        older_put = False
        try:
            await self.kv.put(names.directory_key(self.conf["label"]), json.dumps(me).encode())
        except (NatsTimeout, asyncio.TimeoutError, nats.errors.Error):
            # refused by a server whose config predates `dir.<label>` (not a timeout: a leader
            # election): the older key still carries this clone to the others (read for a clone
            # with no `dir.` entry), and the journal says what to add
            why = refused()
            older_put = why is not None and self.legacy_writes and await put_legacy_entry(
                self.kv, self.conf["clone"], json.dumps(me).encode(), 3.0) is True
            if not older_put:
                raise
            if "dir refused" not in self.refused_entries:
                self.refused_entries.add("dir refused")
                self.root.journal("relay-refused", why=f"{why}: this clone's entry went under its older key; "
                                                       f"allow $KV.*.dir.{self.conf['label']} (README, \"Several machines\")")
        # what was known stands for an entry the server could not give now (a leader election, a
        # timeout): a send to that clone is resolved offline from this file, and a server's
        # hiccup must never make it "unknown" (tests/test_relay_cluster.py)
        known = local.load_peers(self.common_dir) or {}
        keys = await directory_keys(self.js, self.ns)
        if not keys:
            return  # not even our own entry, put just now: nothing here to trust over what is known
        peers: "Dict[str, Any]" = {}
        contested: "set[str]" = set()   # clones two labels claim, neither of them the one known
        # the entries keyed by label first: a clone that has one is read from it alone, and what
        # stands under its older key (`clone.<id>`, which any clone's user could put) is ignored
        for k in keys:
            label = names.label_of_directory_key(k)
            if label is not None:
                await self.read_entry(k, label, known, peers, contested)
        for k in keys:
            if k.startswith("clone."):
                await self.read_entry(k, None, known, peers, contested)
        local.save_peers(self.common_dir, peers)
        if self.legacy_writes and not older_put:
            # for older relays, which read only `clone.<id>` entries, while the server allows it
            # (server.put_legacy_entry); once refused, never again in this process
            done = await put_legacy_entry(self.kv, self.conf["clone"], json.dumps(me).encode(), 1.0)
            self.legacy_writes = done is not False
        try:
            info = await self.sub.consumer_info()
            self.pending = int(info.num_pending) + int(info.num_ack_pending)
        except Exception:  # noqa: BLE001 - the lag is a report, never a failure
            self.pending = None

    async def read_entry(self, key: str, label: "Optional[str]", known: "Dict[str, Any]",
                         peers: "Dict[str, Any]", contested: "set[str]") -> None:
        """One directory entry into `peers` (by clone id): `dir.<label>` (label given) names its
        clone inside; an older `clone.<id>` names it in its key and counts only for a clone with
        no `dir.` entry. Either is taken only when `label.<label>` names that clone (owns_label)."""
        clone = None if label is not None else key[len("clone."):]
        if clone is not None and (clone in peers or clone in contested):
            return  # this clone's own `dir.` entry was read: the older key says nothing more
        try:
            entry = await self.kv.get(key)
            peer = json.loads(entry.value.decode())
            if not isinstance(peer, dict):
                return
            if label is not None:
                clone, peer["label"] = str(peer.get("clone") or ""), label
            if not clone or clone in contested:
                return
            if await self.owns_label(clone, peer, known):
                if label is not None and clone in peers:
                    verdict = self.one_label(clone, peers, label, known)
                    if verdict == "drop":
                        del peers[clone]
                        contested.add(clone)
                    if verdict != "take":
                        return
                # when this clone first saw this revision, by its own clock: the others'
                # waits count only while their entries are renewed (relay/asking.py cycle_across)
                peer.update(asking.seen_at(getattr(entry, "revision", None), known.get(clone), time.time()))
                peers[clone] = peer
        except KeyNotFoundError as exc:
            if exc.op is not None:
                return  # deleted (`remote remove`): its marker is what the server lists
            self.keep_known(key, label, clone, known, peers)  # a replica behind has not got it yet
        except Exception:  # noqa: BLE001 - one unreadable entry: keep what was known of it
            self.keep_known(key, label, clone, known, peers)

    def one_label(self, clone: str, peers: "Dict[str, Any]", label: str, known: "Dict[str, Any]") -> str:
        """Two `dir.` entries name one clone, each with a label claim naming it (a label's user
        may write both its own: it can claim another clone's id, to take that clone's place in
        the directory). The label this relay knew that clone by wins (its own: its config's);
        with neither known, both are dropped: "take" `label`'s entry, "keep" the one read, or
        "drop" both. Journaled once."""
        held = str(peers[clone].get("label"))
        rightful = self.conf["label"] if clone == self.conf["clone"] else (known.get(clone) or {}).get("label")
        if f"{clone} twice" not in self.refused_entries:
            self.refused_entries.add(f"{clone} twice")
            self.root.journal("relay-refused", why=f"directory entries of {held[:40]!r} and {label[:40]!r} both name "
                                                   f"clone {clone[:16]}: {'kept ' + repr(rightful) if rightful in (held, label) else 'neither taken'}")
        return "take" if rightful == label else "keep" if rightful == held else "drop"

    @staticmethod
    def keep_known(key: str, label: "Optional[str]", clone: "Optional[str]", known: "Dict[str, Any]",
                   peers: "Dict[str, Any]") -> None:
        """An entry the server cannot give now: what was known of its clone stands (for a
        `dir.<label>` key, the known clone that has that label)."""
        if label is not None:
            clone = next((c for c, p in sorted(known.items()) if isinstance(p, dict) and p.get("label") == label),
                         None)
        if clone is not None and clone in known and clone not in peers:
            peers[clone] = known[clone]

    async def owns_label(self, clone: str, entry: "Dict[str, Any]", known: "Dict[str, Any]") -> bool:
        """Is `entry`, naming clone `clone`, by the clone that holds its label? Only the label's
        own user may claim `label.<label>` and write `dir.<label>` (README, "Several machines"),
        but an older `clone.<id>` entry could be put by any clone's user, and one under another
        id that claims a label would route mail for that label to an id whose subject the
        forger's own consumer could filter on. Such an entry is refused (journaled once); an
        owner the server cannot give now keeps what was known."""
        label = str(entry.get("label"))
        if self.owners.get(label) == clone:
            return True
        try:
            owner = (await self.kv.get(f"label.{label}")).value.decode()
        except KeyNotFoundError as exc:
            owner = "" if exc.op is not None else None
        except Exception:  # noqa: BLE001 - unknown now: what was known stands
            owner = None
        if owner is None:
            return clone in known and known[clone].get("label") == label
        self.owners[label] = owner
        if owner == clone:
            return True
        if clone not in self.refused_entries:
            self.refused_entries.add(clone)
            self.root.journal("relay-refused", why=f"directory entry {clone[:16]} claims label {label[:40]!r}, "
                                                   f"which {'clone ' + owner[:16] if owner else 'no clone'} holds")
        return False

    async def keep_pruned(self) -> None:
        """relay/sent and relay/received by the store's retention (relay/retention.py): at start,
        then every PRUNE_EVERY seconds; nothing of it touches the network."""
        from git_korus_mail.relay import retention
        while not self.stopping:
            gone = retention.prune(self.common_dir, self.root, self.facts.keep_days())
            # a pruned redelivery guard is older than the stream's max age: the server can no
            # longer give that message, so its cross-machine decision is done with too
            for msg_id in gone[local.RECEIVED]:
                if not self.link_up():
                    break
                try:
                    await self.kv.delete(f"fate.{msg_id}")
                except Exception:  # noqa: BLE001 - a key left behind costs a few bytes, no mail
                    break
            await asyncio.sleep(PRUNE_EVERY)

    async def keep_state(self) -> None:
        while not self.stopping:
            self.save_state()
            await asyncio.sleep(STATE_EVERY)

    def save_state(self) -> None:
        up = self.link_up() and not self.stopping
        local.save_state(self.common_dir, {
            "pid": os.getpid(), "connected": up, "since": self.connected_since if up else None,
            "last_ok": self.last_ok, "error": None if up else self.error, "pending": self.pending,
            "updated": time.time()})


def main(argv: "list[str]", facts: "Callable[[str], directory.Facts]") -> int:
    """The process (core/relayhost.py calls it): `facts` gives what the relay of a clone is told of it."""
    common_dir = argv[0]
    conf = local.load_config(common_dir)
    if conf is None:
        sys.stderr.write("korus-mail relay: no remote configured here (git korus-mail remote add)\n")
        return 1
    crash.point("relay:config-read")  # a pause point for tests: a relay starting as the remote leaves
    lock = local.take_lock(common_dir)
    if lock is None:
        return 0  # a relay runs for this clone already (at most one), or the remote was removed
    # read again under the lock: `remote remove` holds it while the clone leaves the server, so a
    # relay that read the configuration before it finds none now, and never comes back to make
    # its consumer again (docs/RELAY.md, "On disk")
    conf = local.load_config(common_dir)
    if conf is None:
        os.close(lock)
        return 0
    local.ensure(common_dir)  # the directories a clone configured by an older version may lack
    relay = Relay(common_dir, conf, facts(common_dir))
    loop = asyncio.new_event_loop()

    def stop(*_: "Any") -> None:
        relay.stopping = True
    loop.add_signal_handler(signal.SIGTERM, stop)
    loop.add_signal_handler(signal.SIGINT, stop)
    try:
        loop.run_until_complete(relay.run())
        loop.run_until_complete(relay._drop())
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    # the process that runs these loops is core/relayhost.py, which hands them the clone's facts:
    # an old command line says so rather than do nothing (docs/RELAY.md, "Layers")
    sys.stderr.write(f"korus-mail relay: the relay runs as `python -m {local.PROCESS} <common dir>`\n")
    sys.exit(2)
