"""The server's side of the relay (docs/RELAY.md): connecting, the namespace's stream and KV
bucket, the create-only claims of the namespace and of a label, and `remote add` / `remove`'s
one-connection setup and teardown. Imports nats: only relay/link.py and commands/remote.py
(add, remove) import this module."""

import asyncio
import json

import nats
from nats.errors import NoServersError, TimeoutError as NatsTimeout
from nats.js import api
from nats.js.errors import APIError, BucketNotFoundError, KeyWrongLastSequenceError, NotFoundError

from git_korus_mail import crash
from git_korus_mail.relay import names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Awaitable, Callable, Dict, List, Optional

MAX_AGE_DAYS = 30    # the stream keeps undelivered mail this long (a clone offline for weeks)
REPLICAS = 3         # a stream in a cluster survives one node lost (the Raft majority of 3)


def connect_options(conf: "Dict[str, Any]") -> "Dict[str, Any]":
    opts: "Dict[str, Any]" = {"connect_timeout": 2, "allow_reconnect": True, "max_reconnect_attempts": -1,
                              "reconnect_time_wait": 0.5, "name": f"korus-mail {conf.get('label')}",
                              # a cut link sends no reset: pings find it within seconds, so `remote`
                              # and `send` say "link down" instead of trusting a dead socket
                              "ping_interval": 2, "max_outstanding_pings": 2}
    if conf.get("creds"):
        from git_korus_mail.relay import creds  # a JWT creds file, an nkey seed, or user and password
        opts.update(creds.options(conf["creds"]))
    return opts


REFUSED: "List[str]" = []   # the server's last permission refusals on this process's connections


def refused() -> "Optional[str]":
    """Why a call that timed out got no answer, when the server's permissions refused it: a
    refused request is never answered, and the client hears of it only through the error
    callback; without this a missing permission reads as "cannot reach". Taken once."""
    if not REFUSED:
        return None
    why = (f"the server refused {REFUSED[-1]}: this clone's user lacks a permission the relay needs "
           f"(README, \"Several machines\")")
    del REFUSED[:]
    return why


async def close(nc: "Any") -> None:
    """Close a connection in whatever state the server left it. The work on it is done, or its
    failure was said, before: CPython 3.12.1's transport raises TypeError when writing to a
    socket the server has closed already (CI: a reload of the server's permissions), which must
    not turn a finished `remote add` or `remove` into a traceback."""
    try:
        await nc.close()
    except Exception:  # noqa: BLE001 - nothing is left to do on this connection
        pass


async def connect(conf: "Dict[str, Any]", retry: bool = True) -> "Any":
    del REFUSED[:]  # a refusal is told about the connection it came on, never a later one

    async def quiet(exc: "Any") -> None:
        text, mark = str(exc), "permissions violation for "
        at = text.lower().find(mark)
        if at >= 0:
            REFUSED[:] = REFUSED[-4:] + [text[at + len(mark):].strip()]

    opts = connect_options(conf)
    if not retry:
        # each server tried twice at most: with no limit (or 0), nats-py's first connect cycles
        # through the servers until the caller's deadline (doctor with the server down took 9 s)
        opts["allow_reconnect"] = False
        opts["max_reconnect_attempts"] = 1
    # a cluster's URL names its servers, comma-separated (README): any one of them lets us in
    return await nats.connect(conf["url"].split(","), error_cb=quiet, **opts)


async def ensure_stream(js: "Any", ns: str) -> None:
    """The namespace's stream: work-queue retention (a message goes once its one consumer, the
    recipient clone's relay, acks it), the default 2-minute duplicate window; three replicas when
    the server is a cluster. A stream the team made beforehand is taken as it is (its window, its
    replicas: docs/RELAY.md, "Durability")."""
    config = api.StreamConfig(name=names.stream(ns), subjects=[f"korus.{ns}.>"],
                              retention=api.RetentionPolicy.WORK_QUEUE, storage=api.StorageType.FILE,
                              max_age=MAX_AGE_DAYS * 86400)
    try:
        await js.stream_info(names.stream(ns))
    except NotFoundError:
        await add_replicated(js.add_stream, config, "num_replicas")


async def add_replicated(create: "Callable[[Any], Awaitable[Any]]", config: "Any", field: str) -> "Any":
    """Create with three replicas; a single server refuses more than one (and a cluster of two,
    three), and then the stream gets one. Measured: a leader killed in a 3-node cluster lost
    nothing (reference: nats-jetstream.md; tests/test_relay_cluster.py)."""
    try:
        return await create(config.evolve(**{field: REPLICAS}))
    except APIError as exc:
        if exc.code not in (400, 500, 503):
            raise
        return await create(config.evolve(**{field: 1}))


NOT_UNIQUE = 10100   # the server's "filtered consumer not unique on workqueue stream"
LEGACY_WAIT = 3.0    # a narrowed user's request to the legacy name gets no answer: this long


class LegacyConsumer(Exception):
    """The consumer an older relay made still holds this clone's mail and cannot be deleted
    with these credentials."""


async def bind_inbox(js: "Any", ns: str, conf: "Dict[str, Any]", config: "Any") -> "Any":
    """This clone's pull subscription, on its consumer named by its label (names.durable).

    An older relay named it by the clone id (names.legacy_durable) with the same filter; the
    stream is a work queue, so the server refuses a second consumer on that filter (NOT_UNIQUE),
    and that refusal is how the old one is found, at no cost to a relay that has none. It is
    deleted and the new one made: a work-queue stream keeps every message not yet acked when a
    consumer goes (measured: of three, the two not acked stayed, one delivered and one not), and
    the new consumer, delivering all, gives them again; one delivered already meets the
    receiver's guard (relay/received/<id>.json), so nothing is lost or doubled
    (tests/test_relay_auth.py, with a kill between the delete and the make).
    The old one's delete needs the permissions it was made with: a relay under the README's
    narrowed ones says so (LegacyConsumer) and keeps the mail waiting on the server."""
    stream, name, want = names.stream(ns), names.durable(conf["label"]), names.inbox_filter(ns, conf["clone"])
    try:
        sub = await js.pull_subscribe(want, durable=name, stream=stream, config=config)
    except APIError as exc:
        if exc.err_code != NOT_UNIQUE:
            raise
    else:
        return await _own_filter(js, sub, stream, name, want)
    legacy = names.legacy_durable(conf["clone"])
    try:
        await _delete(js, stream, legacy, LEGACY_WAIT)
    except NotFoundError:
        pass
    except (NatsTimeout, asyncio.TimeoutError):
        del REFUSED[:]  # said here, with what to do
        raise LegacyConsumer(
            f"the consumer {legacy} an older relay made holds this clone's mail and these credentials "
            f"may not delete it: run the relay once with permission for $JS.API.CONSUMER.DELETE.*.{legacy} "
            f"(README, \"Several machines\"); the mail waits on the server") from None
    crash.point("relay:legacy-consumer-deleted")
    sub = await js.pull_subscribe(want, durable=name, stream=stream, config=config)
    return await _own_filter(js, sub, stream, name, want)


async def _own_filter(js: "Any", sub: "Any", stream: str, name: str, want: str) -> "Any":
    """A consumer of this name that filters on another clone's subject: one a clone with this
    label left behind (a `remote remove` that could not reach the server; a label is taken
    again only once it is free). nats-py binds to a consumer that exists as it is, so it would
    take the other clone's mail and never ours: its filter is set to ours (a create with the
    same name updates), and what waited for the other clone stays in the stream, unread."""
    info = await js.consumer_info(stream, name)
    if info.config.filter_subject == want and not info.config.filter_subjects:
        return sub
    c = info.config
    await js.add_consumer(stream, config=api.ConsumerConfig(
        durable_name=name, name=name, filter_subject=want, ack_policy=c.ack_policy, ack_wait=c.ack_wait,
        max_ack_pending=c.max_ack_pending, deliver_policy=c.deliver_policy))
    return sub


async def _delete(js: "Any", stream: str, consumer: str, timeout: float) -> None:
    """Delete a consumer; a request the server's permissions refuse gets no answer, only this
    wait (nats-py reports the violation to the error callback)."""
    await asyncio.wait_for(js.delete_consumer(stream, consumer), timeout)


async def ensure_bucket(js: "Any", ns: str) -> "Any":
    """The namespace's bucket, read by direct gets: `$JS.API.DIRECT.GET.<stream>.$KV.>` names
    only bucket keys, so the README's permissions can allow it, where the other read
    (`STREAM.MSG.GET.<stream>`, any message by sequence) would also read another clone's mail.
    A bucket an older relay made without direct gets is changed once (it needs the permissions
    it was made with; under the narrowed ones its reads fail, and the relay says why)."""
    try:
        kv = await js.key_value(names.bucket(ns))
    except BucketNotFoundError:
        return await add_replicated(js.create_key_value,
                                    api.KeyValueConfig(bucket=names.bucket(ns), history=1, direct=True), "replicas")
    if not kv._direct:
        stream = f"KV_{names.bucket(ns)}"
        try:
            info = await js.stream_info(stream)
            await asyncio.wait_for(js.update_stream(info.config.evolve(allow_direct=True)), LEGACY_WAIT)
        except (NatsTimeout, asyncio.TimeoutError, APIError):
            raise LegacyConsumer(
                f"the bucket {names.bucket(ns)} an older relay made has no direct gets and these credentials "
                f"may not change it: run the relay once with permission for $JS.API.STREAM.UPDATE.{stream} "
                f"(README, \"Several machines\")") from None
        kv = await js.key_value(names.bucket(ns))
    return kv


async def directory_keys(js: "Any", ns: str) -> "List[str]":
    """The bucket's directory keys, `dir.<label>` and the older `clone.<id>` (names), from the
    stream's own list of its subjects: listing keys through the KV API makes a consumer on the
    bucket, which the README's permissions do not allow (a consumer made on any stream could be
    one on the mail). A deleted entry is listed too (its delete marker): reading it says so."""
    prefix = f"$KV.{names.bucket(ns)}."
    found: "List[str]" = []
    for head in ("dir", "clone"):
        info = await js.stream_info(f"KV_{names.bucket(ns)}", subjects_filter=f"{prefix}{head}.>")
        found += (s[len(prefix):] for s in (info.state.subjects or {}))
    return sorted(found)


async def claim_namespace(kv: "Any", conf: "Dict[str, Any]") -> "Optional[str]":
    """Pin the namespace to this repository (create-only), or check that it is ours: None, or
    why not. Two repositories that share no root commit cannot share a namespace."""
    record = json.dumps({"origin": conf["origin"], "roots": conf["roots"]}).encode()
    try:
        await kv.create("namespace", record)
        return None
    except KeyWrongLastSequenceError:
        pass
    entry = await kv.get("namespace")
    pinned = json.loads(entry.value.decode())
    if not set(pinned.get("roots") or ()) & set(conf["roots"]):
        return (f"namespace {conf['namespace']} ({pinned.get('origin')}) belongs to a repository with other "
                f"root commits than this one: refused, so that two repositories never exchange mail")
    return None


async def claim_label(kv: "Any", conf: "Dict[str, Any]") -> "Optional[str]":
    """A label names one clone in the namespace: decided by a create-only put."""
    key = f"label.{conf['label']}"
    try:
        await kv.create(key, conf["clone"].encode())
        return None
    except KeyWrongLastSequenceError:
        entry = await kv.get(key)
        if entry.value.decode() == conf["clone"]:
            return None
        return f"label {conf['label']} is taken by another clone in this namespace: choose one with --label"


# -- `remote add` and `remote remove` (commands/remote.py): one connection each, no retry ---------
def setup(conf: "Dict[str, Any]", timeout: float = 10.0) -> "Optional[str]":
    """Make the stream and bucket, pin the namespace, take the label: None, or why not."""
    async def go() -> "Optional[str]":
        nc = await connect(conf, retry=False)
        try:
            js = nc.jetstream(timeout=3)
            await ensure_stream(js, conf["namespace"])
            kv = await ensure_bucket(js, conf["namespace"])
            why = await claim_namespace(kv, conf)
            if why is None:
                why = await claim_label(kv, conf)
            return why
        finally:
            await close(nc)
    return _run(go(), conf, timeout)


def teardown(conf: "Dict[str, Any]", timeout: float = 10.0) -> "Optional[str]":
    """Remove this clone from the namespace: its consumer (and what waits in it), its directory
    entry, its label. None, or why it could not (the server unreachable)."""
    async def go() -> "Optional[str]":
        nc = await connect(conf, retry=False)
        try:
            js = nc.jetstream(timeout=3)
            try:
                await js.delete_consumer(names.stream(conf["namespace"]), names.durable(conf["label"]))
            except NotFoundError:
                pass
            try:  # an older relay's, never migrated: gone too where the permissions allow
                await _delete(js, names.stream(conf["namespace"]), names.legacy_durable(conf["clone"]), 1.0)
            except (NotFoundError, NatsTimeout, asyncio.TimeoutError):
                del REFUSED[:]  # refused under the narrowed permissions: nothing to say
            try:
                kv = await js.key_value(names.bucket(conf["namespace"]))
            except BucketNotFoundError:
                return None
            await kv.delete(names.directory_key(conf["label"]))
            await put_legacy_entry(kv, conf["clone"], None, 1.0)
            try:
                entry = await kv.get(f"label.{conf['label']}")
                if entry.value.decode() == conf["clone"]:
                    await kv.delete(f"label.{conf['label']}")
            except NotFoundError:
                pass
            return None
        finally:
            await close(nc)
    return _run(go(), conf, timeout)


async def put_legacy_entry(kv: "Any", clone: str, value: "Optional[bytes]", timeout: float) -> "Optional[bool]":
    """Put this clone's entry under its older key too (names.legacy_directory_key), or delete it
    (`value` None, `remote remove`): True when done, False when the server's permissions refuse
    it, None when it failed otherwise (a timeout in a leader election: try again later). While a
    team moves its clones one at a time, an older relay reads only `clone.<id>` entries, so a
    new relay keeps its old one current; the README's narrowed permissions then allow that key
    to no one, the put is refused (no answer, only this wait), and the relay stops trying. What
    stands there then is frozen, and ignored by every new relay (relay/link.py)."""
    key = names.legacy_directory_key(clone)
    try:
        await asyncio.wait_for(kv.delete(key) if value is None else kv.put(key, value), timeout)
        return True
    except (NatsTimeout, asyncio.TimeoutError, nats.errors.Error):
        return False if refused() is not None else None   # a refusal is said here, not later


def _run(coro: "Any", conf: "Dict[str, Any]", timeout: float) -> "Optional[str]":
    async def bounded() -> "Optional[str]":
        return await asyncio.wait_for(coro, timeout)
    try:
        return asyncio.run(bounded())
    except LegacyConsumer as exc:
        return str(exc)
    except (OSError, NoServersError, NatsTimeout, asyncio.TimeoutError, nats.errors.Error) as exc:
        return refused() or f"cannot reach {conf['url']}: {exc or type(exc).__name__}"
