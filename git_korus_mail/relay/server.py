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

from git_korus_mail.relay import names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Awaitable, Callable, Dict, Optional

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


async def connect(conf: "Dict[str, Any]", retry: bool = True) -> "Any":
    async def quiet(_exc: "Any") -> None:
        return None
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


async def refilter(js: "Any", ns: str, clone: str) -> None:
    """A consumer an earlier relay made filters on `korus.<ns>.to.<clone>`, which no mail is sent
    on since the sender's label ends the subject (names.subject_to): bound as it is, it would
    take nothing, silently. Its filter is updated in place (a create with the same name updates)."""
    try:
        info = await js.consumer_info(names.stream(ns), names.durable(clone))
    except NotFoundError:
        return
    want = names.inbox_filter(ns, clone)
    if info.config.filter_subject != want and not info.config.filter_subjects:
        await js.add_consumer(names.stream(ns), config=api.ConsumerConfig(
            durable_name=names.durable(clone), name=names.durable(clone), filter_subject=want,
            ack_policy=info.config.ack_policy, ack_wait=info.config.ack_wait,
            max_ack_pending=info.config.max_ack_pending, deliver_policy=info.config.deliver_policy))


async def ensure_bucket(js: "Any", ns: str) -> "Any":
    try:
        return await js.key_value(names.bucket(ns))
    except BucketNotFoundError:
        return await add_replicated(js.create_key_value,
                                    api.KeyValueConfig(bucket=names.bucket(ns), history=1), "replicas")


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
            await nc.close()
    return _run(go(), conf, timeout)


def teardown(conf: "Dict[str, Any]", timeout: float = 10.0) -> "Optional[str]":
    """Remove this clone from the namespace: its consumer (and what waits in it), its directory
    entry, its label. None, or why it could not (the server unreachable)."""
    async def go() -> "Optional[str]":
        nc = await connect(conf, retry=False)
        try:
            js = nc.jetstream(timeout=3)
            try:
                await js.delete_consumer(names.stream(conf["namespace"]), names.durable(conf["clone"]))
            except NotFoundError:
                pass
            try:
                kv = await js.key_value(names.bucket(conf["namespace"]))
            except BucketNotFoundError:
                return None
            await kv.delete(f"clone.{conf['clone']}")
            try:
                entry = await kv.get(f"label.{conf['label']}")
                if entry.value.decode() == conf["clone"]:
                    await kv.delete(f"label.{conf['label']}")
            except NotFoundError:
                pass
            return None
        finally:
            await nc.close()
    return _run(go(), conf, timeout)


def _run(coro: "Any", conf: "Dict[str, Any]", timeout: float) -> "Optional[str]":
    async def bounded() -> "Optional[str]":
        return await asyncio.wait_for(coro, timeout)
    try:
        return asyncio.run(bounded())
    except (OSError, NoServersError, NatsTimeout, asyncio.TimeoutError, nats.errors.Error) as exc:
        return f"cannot reach {conf['url']}: {exc or type(exc).__name__}"
