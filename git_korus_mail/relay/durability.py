"""How durable the namespace's stream is, and the link's health, for `doctor` (docs/RELAY.md,
"Durability"); and the replicas a new stream or bucket gets.

`add_replicated` is used by relay/server.py (so this module is imported wherever nats is).
`link_report` reads only this clone's files (no network); `server_report` connects once, bounded,
and is run only by `doctor`, a person's command, never by a hook.
"""

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Awaitable, Callable, Dict, List, Optional

REPLICAS = 3           # a stream in a cluster survives one node lost (the Raft majority of 3)
LINK_STALE = 5.0       # state.json is rewritten every second by a running relay
OUTBOX_OLD = 60.0      # mail waiting this long to leave is worth a person's look


async def add_replicated(create: "Callable[[Any], Awaitable[Any]]", config: "Any", field: str) -> "Any":
    """Create with three replicas; a single server refuses more than one (and a cluster of two,
    three), and then the stream gets one. Measured: a leader killed in a 3-node cluster lost
    nothing (reference: nats-jetstream.md; tests/test_relay_cluster.py)."""
    from nats.js.errors import APIError
    try:
        return await create(config.evolve(**{field: REPLICAS}))
    except APIError as exc:
        if exc.code not in (400, 500, 503):
            raise
        return await create(config.evolve(**{field: 1}))


def link_report(common_dir: str, now: "Optional[float]" = None) -> "List[Dict[str, Any]]":
    """doctor's look at the link from this clone's own files: is the relay running, when did it
    last hear the server, how old is the oldest outgoing mail. Each item: ok, what, fix."""
    from git_korus_mail.relay import local
    now = time.time() if now is None else now
    conf = local.load_config(common_dir) or {}
    pid = local.running_pid(common_dir)
    state = local.load_state(common_dir) or {}
    items: "List[Dict[str, Any]]" = []
    fresh = pid is not None and now - float(state.get("updated") or 0) < LINK_STALE
    if pid is None:
        items.append({"ok": False, "what": "relay: not running; remote mail neither leaves nor arrives",
                      "fix": "git korus-mail remote (starts it)"})
    elif not fresh:
        items.append({"ok": False, "what": f"relay: pid {pid} holds the lock but has not written its state "
                                           f"for {_age(now - float(state.get('updated') or 0))}",
                      "fix": f"see {local.relay_dir(common_dir)}/relay.log"})
    elif state.get("connected"):
        items.append({"ok": True, "what": f"relay: pid {pid}, link up to {conf.get('url')} "
                                          f"since {_age(now - float(state.get('since') or now))} ago", "fix": None})
    else:
        items.append({"ok": False, "what": f"relay: pid {pid}, link down ({state.get('error') or 'no reason given'})",
                      "fix": "check the server and the network; mail waits in the outbox meanwhile"})
    last = state.get("last_ok")
    items.append({"ok": last is not None, "what": "last contact with the server: "
                  + (f"{_age(now - float(last))} ago" if last is not None else "never, since the relay started"),
                  "fix": None if last is not None else "git korus-mail remote shows the link"})
    oldest = None
    for msg_id in local.outbox_ids(common_dir):
        env = local.read_entry(common_dir, local.OUTBOX, msg_id) or {}
        queued = float(env.get("queued_at") or now)
        oldest = queued if oldest is None else min(oldest, queued)
    waiting = len(local.outbox_ids(common_dir))
    if oldest is None:
        items.append({"ok": True, "what": "outbox: empty", "fix": None})
    else:
        age = now - oldest
        items.append({"ok": age < OUTBOX_OLD, "what": f"outbox: {waiting} message(s), the oldest waiting {_age(age)}",
                      "fix": None if age < OUTBOX_OLD else "the link is down or the server refuses: see above"})
    return items


def server_report(conf: "Dict[str, Any]", timeout: float = 8.0) -> "List[Dict[str, Any]]":
    """One bounded connection: the stream's replicas, its leader and followers now, and the fsync
    setting when the server lets this user read it (a client cannot, unless it may ask the system
    account; then the README's rule is said instead)."""
    import asyncio
    from git_korus_mail.relay import names, server

    async def go() -> "List[Dict[str, Any]]":
        nc = await server.connect(conf, retry=False)
        try:
            js = nc.jetstream(timeout=3)
            info = await js.stream_info(names.stream(conf["namespace"]))
            return _stream_items(info) + [await _fsync_item(nc)]
        finally:
            await nc.close()
    try:
        return asyncio.run(asyncio.wait_for(go(), timeout))
    except Exception as exc:  # noqa: BLE001 - doctor reports whatever stops it, in one line
        return [{"ok": False, "what": f"stream: cannot read it from {conf.get('url')}: {exc or type(exc).__name__}",
                 "fix": "git korus-mail remote shows the link"}]


def _stream_items(info: "Any") -> "List[Dict[str, Any]]":
    replicas = int(info.config.num_replicas or 1)
    cluster = info.cluster
    current = 1 + sum(1 for r in (cluster.replicas or ()) if r.current and not r.offline) if cluster else 1
    where = f", leader {cluster.leader}, {current} of {replicas} current" if cluster and cluster.leader else ""
    ok = replicas >= REPLICAS and current >= 2
    fix = None if ok else ("one server: a lost disk loses the mail that waits on it; run a 3-node cluster "
                           "(README, \"A team's server\")" if replicas < REPLICAS else "a replica is behind or offline")
    window = float(info.config.duplicate_window or 0)
    return [{"ok": ok, "what": f"stream {info.config.name}: {replicas} replica(s){where}; "
                               f"{info.state.messages} message(s) on it", "fix": fix},
            {"ok": True, "what": f"duplicate window {window:.0f} s (a republish after it is caught by the receiving "
                                 f"relay's guard, docs/RELAY.md)", "fix": None}]


async def _fsync_item(nc: "Any") -> "Dict[str, Any]":
    import json
    try:
        reply = await nc.request("$SYS.REQ.SERVER.PING.VARZ", b"", timeout=0.5)
        js = (json.loads(reply.data.decode()).get("data") or {}).get("jetstream") or {}
        cfg = js.get("config") or {}
    except Exception:  # noqa: BLE001 - only the system account may ask: the usual case
        return {"ok": True, "what": "fsync: not visible to this clone's user; by default a server fsyncs every "
                                    "2 minutes, so acked mail can be lost if a majority of replicas lose "
                                    "power at once", "fix": "`sync_interval: always` in each server's jetstream "
                                                            "block (README) fsyncs every write"}
    if cfg.get("sync_always"):
        return {"ok": True, "what": "fsync: every write (sync_interval: always)", "fix": None}
    every = cfg.get("sync_interval")
    return {"ok": True, "what": f"fsync: every {(every or 120_000_000_000) / 1e9:.0f} s (sync_interval); acked "
                                f"mail can be lost if a majority of replicas lose power at once",
            "fix": "`sync_interval: always` fsyncs every write (README)"}


def _age(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h"
