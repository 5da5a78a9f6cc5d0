"""How durable the namespace's stream is, and the link's health, for `doctor` (docs/RELAY.md,
"Durability"). No nats at import: `link_report` reads only this clone's files (no network); `server_report` connects once, bounded,
and is run only by `doctor`, a person's command, never by a hook.
"""

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

LINK_STALE = 5.0       # state.json is rewritten every second by a running relay
OUTBOX_OLD = 60.0      # mail waiting this long to leave is worth a person's look


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
    """One bounded connection: the stream's replicas, its leader and followers now, and what the
    fsync setting means."""
    import asyncio
    from git_korus_mail.relay import names, server

    async def go() -> "List[Dict[str, Any]]":
        nc = await server.connect(conf, retry=False)
        try:
            js = nc.jetstream(timeout=3)
            info = await js.stream_info(names.stream(conf["namespace"]))
            return _stream_items(info) + [_fsync_item()]
        finally:
            await server.close(nc)
    try:
        return asyncio.run(asyncio.wait_for(go(), timeout))
    except Exception as exc:  # noqa: BLE001 - doctor reports whatever stops it, in one line
        return [{"ok": False, "what": f"stream: cannot read it from {conf.get('url')}: {str(exc) or type(exc).__name__}",
                 "fix": "git korus-mail remote shows the link"}]


def _stream_items(info: "Any") -> "List[Dict[str, Any]]":
    replicas = int(info.config.num_replicas or 1)
    cluster = info.cluster
    current = 1 + sum(1 for r in (cluster.replicas or ()) if r.current and not r.offline) if cluster else 1
    where = f", leader {cluster.leader}, {current} of {replicas} current" if cluster and replicas > 1 else ""
    # one replica is a choice (one server), said plainly; a replicated stream with a replica
    # down is a problem: one more loss stops it
    ok = replicas == 1 or current == replicas
    if replicas == 1:
        where += " (one server: a lost disk loses the mail waiting on it; a 3-node cluster keeps it, README)"
    fix = None if ok else "a replica is behind or offline: bring its server back (one more loss stops the stream)"
    window = float(info.config.duplicate_window or 0)
    return [{"ok": ok, "what": f"stream {info.config.name}: {replicas} replica(s){where}; "
                               f"{info.state.messages} message(s) on it", "fix": fix},
            {"ok": True, "what": f"duplicate window {window:.0f} s (a republish after it is caught by the receiving "
                                 f"relay's guard, docs/RELAY.md)", "fix": None}]


def _fsync_item() -> "Dict[str, Any]":
    """A client cannot read the server's fsync setting (only the system account sees its config),
    so doctor says what the default means and how to change it."""
    return {"ok": True, "what": "fsync: set in each server's config, which a client cannot read; the default "
                                "(sync_interval 2 min) can lose acked mail if a majority of the stream's "
                                "servers lose power at once; `sync_interval: always` fsyncs every write (README)",
            "fix": None}


def _age(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h"
