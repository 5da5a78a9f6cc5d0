"""`<label>:<worktree>`: a box on another clone of the repository (docs/RELAY.md, "Names").

Resolved from the directory the relay keeps (relay/peers.json, each clone's own account of its
worktrees), without the network, and refused before anything is queued when it names no box.
No nats here: `send` imports this module only when a remote is configured.
"""

import os
import time

from git_korus_mail.relay import local

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from git_korus_mail.store.shapes import Message, Sender


def split(dest: str) -> "Optional[tuple[str, str]]":
    """(label, worktree) when `dest` has the remote form; a path (`/`, `~`, `.` first) never does."""
    if ":" not in dest or dest[:1] in ("/", "~", "."):
        return None
    label, _, wt = dest.partition(":")
    if not label or "/" in label or not wt:
        return None
    return label, wt


def resolve(common_dir: str, dest: str) -> "Optional[Dict[str, Any]]":
    """None: not a remote destination here (no remote configured, or not the form, or our own
    label: the caller resolves the worktree part locally). Otherwise a dict with either
    "error" or "clone", "label", "key", "path", "name"."""
    parts = split(dest)
    if parts is None or not local.configured(common_dir):
        return None
    label, wt = parts
    conf = local.load_config(common_dir)
    if conf is None:
        return {"dest": dest, "error": f"{dest}: this clone's remote configuration is unreadable (git korus-mail remote)"}
    if label == conf.get("label"):
        return {"dest": dest, "local": wt}
    peers = local.load_peers(common_dir)
    if peers is None:
        return {"dest": dest, "error": f"{dest}: the relay has not read the other clones yet "
                                       f"(git korus-mail remote shows the link)"}
    clones = [(cid, p) for cid, p in sorted(peers.items()) if isinstance(p, dict) and p.get("label") == label]
    if not clones:
        known = ", ".join(sorted(str(p.get("label")) for cid, p in peers.items()
                                 if isinstance(p, dict) and cid != conf.get("clone"))) or "(none)"
        return {"dest": dest, "error": f"{dest}: no clone is labelled {label}; other clones: {known}"}
    cid, peer = clones[0]
    worktrees: "List[Dict[str, Any]]" = [w for w in peer.get("worktrees") or () if isinstance(w, dict)]
    hits = [w for w in worktrees if wt in (w.get("name"), w.get("path"), os.path.basename(str(w.get("path"))))]
    if not hits and len(wt) >= 4:
        hits = [w for w in worktrees if str(w.get("key", "")).startswith(wt)
                or str(w.get("key", "")).rsplit("-", 1)[-1].startswith(wt)]
    if len(hits) != 1:
        names = ", ".join(str(w.get("name")) for w in worktrees) or "(none)"
        why = "ambiguous" if hits else "no such worktree"
        return {"dest": dest, "error": f"{dest}: {why} on {label}; its worktrees: {names}"}
    w = hits[0]
    return {"dest": dest, "clone": cid, "label": label, "key": str(w["key"]), "path": str(w["path"]),
            "name": str(w.get("name")), "directory_age": time.time() - float(peer.get("updated") or 0)}


def envelope(conf: "Dict[str, Any]", target: "Dict[str, Any]", msg: "Message") -> "Dict[str, Any]":
    """What the relay publishes: the message, and who it goes to and comes from (the from_clone
    is the sender's own claim until subject permissions prove it, docs/RELAY.md "Trust")."""
    return {"v": local.FORMAT, "type": "mail", "id": msg["id"], "to_clone": target["clone"],
            "to_label": target["label"], "from_clone": conf["clone"], "from_label": conf["label"],
            "queued_at": time.time(), "msg": msg}


def queue(common_dir: str, root: "Any", targets: "List[Dict[str, Any]]", body: str, kind: str, ttl: int,
          sender: "Sender", session: "Optional[str]", wake: bool, own_box: "Any" = None,
          fields: "Optional[Dict[str, Any]]" = None) -> "List[Dict[str, Any]]":
    """One message per remote target into this clone's outbox (the relay publishes it, now or
    once the link is back), then the relay started if none runs. Results as send's. Each is
    indexed in the sender's sent records like local mail (store/sent.py, with `remote`), so
    `status` shows its fate and `cancel` finds it."""
    from git_korus_mail.store import message, sent
    conf = local.load_config(common_dir)
    assert conf is not None  # resolve() found it
    results = []
    for t in targets:
        thread = fields or {}
        only = t.get("session", session)  # `@<name>`: the mail is for that session
        msg = message.build(body, t["path"], t["key"], sender, kind=kind, ttl_minutes=ttl, session=only,
                            wake=None if wake else False, in_reply_to=thread.get("in_reply_to"),
                            thread=thread.get("thread"))
        local.queue(common_dir, envelope(conf, t, msg))
        sent.record(root, own_box, msg, t["key"], t["path"], str(sender.get("path") or ""),
                    remote={"label": t["label"], "clone": t["clone"], "name": t["name"]})
        root.journal("relay-queued", id=msg["id"], to=f"{t['label']}:{t['path']}", box=t["key"])
        results.append({"to": t["dest"], "ok": True, "id": msg["id"], "path": t["path"], "box": t["key"],
                        "remote": t["label"], "name": t["name"], "session": only, "expires_at": msg["expires_at"],
                        "warnings": []})
    local.start(common_dir)
    return results


def link_words(common_dir: str) -> str:
    """How the outbox will leave, for the sender: said plainly when the link is down."""
    state = local.load_state(common_dir) or {}
    if state.get("connected") and time.time() - float(state.get("updated") or 0) < 5:
        return "the relay is sending it"
    why = f" ({state['error']})" if state.get("error") else ""
    return (f"the link is down{why}: it waits in this clone's outbox and leaves when the link is back "
            f"(git korus-mail remote)")


FINAL = ("consumed", "cancelled", "expired", "dropped")


def cancel(common_dir: str, rec: "Dict[str, Any]", by: str, seconds: float = 5.0) -> "Dict[str, Any]":
    """`cancel` of mail sent to another clone: a request to this clone's relay, which decides it
    with a create-only put against the delivery (docs/RELAY.md, "Cross-machine decisions"). The
    command never touches the network: it waits up to `seconds` for the outcome the relay
    records, and otherwise says it waits. Returns the fate as far as known, with "request":
    "decided" (a final fate), "asked" (delivered there first: the receiving clone's claim
    decides it against a consume), or "waiting" (not decided yet, e.g. the link is down)."""
    msg_id = rec["id"]
    fate = local.remote_fate(common_dir, msg_id)
    if fate["state"] in FINAL:
        return dict(fate, request="decided")
    local.request_cancel(common_dir, msg_id, by)
    local.start(common_dir)
    end = time.monotonic() + seconds
    while True:
        fate = local.remote_fate(common_dir, msg_id)
        if fate["state"] in FINAL:
            return dict(fate, request="decided")
        if time.monotonic() >= end:
            break
        time.sleep(0.05)
    asked = (local.read_entry(common_dir, local.SENT, msg_id) or {}).get("cancel") == "asked"
    return dict(fate, request="asked" if asked else "waiting")


def sender_of(common_dir: str, original: "Dict[str, Any]") -> "Dict[str, Any]":
    """The box on another clone that sent `original` (a `reply` to mail that came across): its
    clone from `from.clone` (set by the receiving relay, docs/RELAY.md), its box from that
    clone's directory entry, offline. A target as `resolve` makes, or one with "error"."""
    sender = original.get("from") or {}
    label, _, cid = str(sender.get("clone") or "").partition(":")
    path = str(sender.get("path") or "")
    if path.startswith(label + ":"):
        path = path[len(label) + 1:]
    dest = f"{label}:{path}"
    peer = (local.load_peers(common_dir) or {}).get(cid)
    if not isinstance(peer, dict):
        return {"dest": dest, "error": f"{original['id']}: its sender's clone {label} ({cid}) is not in this "
                                       f"clone's directory (git korus-mail remote shows the link)"}
    for w in peer.get("worktrees") or ():
        if isinstance(w, dict) and w.get("path") == path:
            return {"dest": dest, "clone": cid, "label": str(peer.get("label") or label), "key": str(w["key"]),
                    "path": path, "name": str(w.get("name"))}
    return {"dest": dest, "error": f"{original['id']}: its sender's worktree {path} is no longer a worktree "
                                   f"of {label}"}


LIVE = ("working", "idle", "waiting", "not responding")  # core/roster.LIVE_STATES, as the directory says them


def sessions_named(common_dir: str, name: str) -> "List[Dict[str, Any]]":
    """The sessions of other clones named `name`, as their relays last said (relay/peers.json,
    offline): targets as `resolve` makes, each with the session, its state and how old the
    directory's word is. Empty with no remote."""
    if not local.configured(common_dir):
        return []
    conf = local.load_config(common_dir) or {}
    out = []
    for cid, peer in sorted((local.load_peers(common_dir) or {}).items()):
        if not isinstance(peer, dict) or cid == conf.get("clone"):
            continue
        wts = {str(w.get("key")): w for w in peer.get("worktrees") or () if isinstance(w, dict)}
        for s in peer.get("sessions") or ():
            if not isinstance(s, dict) or s.get("name") != name or str(s.get("box")) not in wts:
                continue
            w = wts[str(s.get("box"))]
            label = str(peer.get("label"))
            out.append({"dest": f"@{name}", "clone": cid, "label": label, "key": str(w["key"]),
                        "path": str(w["path"]), "name": str(w.get("name")), "session": str(s.get("session")),
                        "state": str(s.get("state")), "as_of": s.get("as_of"),
                        "directory_age": time.time() - float(peer.get("updated") or 0)})
    return out


def by_session_name(dest: str, remote: "List[Dict[str, Any]]", local_hits: "List[Dict[str, Any]]"
                    ) -> "Optional[Dict[str, Any]]":
    """`@<name>` across the namespace: None when only this clone has it (the local rule decides),
    else the one remote target, or a refusal naming every candidate (a running session wins
    over stopped ones, as locally; two running anywhere are ambiguous)."""
    if not remote:
        return None
    live_remote = [t for t in remote if t["state"] in LIVE]
    live_local = [s for s in local_hits if s.get("state") in LIVE]
    pool_remote, pool_local = (live_remote, live_local) if (live_remote or live_local) else (remote, local_hits)
    if len(pool_remote) == 1 and not pool_local:
        t = pool_remote[0]
        if t["state"] not in LIVE:
            return {"dest": dest, "error": f"{dest}: session {dest[1:]} on {t['label']}:{t['name']} is "
                                           f"{t['state']} (as its relay last said): mail {t['label']}:{t['name']} "
                                           f"instead, or wait for it to run again"}
        return t
    listed = "; ".join([f"{t['session']} on {t['label']}:{t['name']} ({t['state']})" for t in pool_remote]
                       + [f"{s.get('session')} here in {s.get('worktree')} ({s.get('state')})" for s in pool_local])
    n = len(pool_remote) + len(pool_local)
    return {"dest": dest, "error": f"{dest}: {n} sessions are named {dest[1:]} across the clones: {listed}; "
                                   f"say --to <label>:<worktree>"}


def other_clones(common_dir: str) -> "List[Dict[str, Any]]":
    """The other clones of the namespace as their relays last said (relay/peers.json): for `who`
    and `list`, offline, each with the age of that word. Empty with no remote."""
    if not local.configured(common_dir):
        return []
    conf = local.load_config(common_dir) or {}
    out = []
    for cid, peer in sorted((local.load_peers(common_dir) or {}).items(), key=lambda kv: str(kv[1].get("label"))
                            if isinstance(kv[1], dict) else ""):
        if not isinstance(peer, dict) or cid == conf.get("clone"):
            continue
        out.append({"clone": cid, "label": str(peer.get("label")),
                    "age": max(0.0, time.time() - float(peer.get("updated") or 0)),
                    "worktrees": [w for w in peer.get("worktrees") or () if isinstance(w, dict)],
                    "sessions": [s for s in peer.get("sessions") or () if isinstance(s, dict)]})
    return out


def queue_built(common_dir: str, root: "Any", target: "Dict[str, Any]", msg: "Message") -> bool:
    """A message built already (the answer to a question from another clone, core/answer.py)
    into this clone's outbox, once: False when it is there or was published already. It starts
    no relay: the drain calls this at a hook event, and the relay that runs takes it (or the
    next `remote` or remote send starts one)."""
    from git_korus_mail.errors import MailError
    conf = local.load_config(common_dir)
    if conf is None:
        raise MailError("this clone's remote configuration is unreadable (git korus-mail remote)")
    if local.read_entry(common_dir, local.SENT, msg["id"]) is not None:
        return False
    try:
        local.queue(common_dir, envelope(conf, target, msg))
    except FileExistsError:
        return False
    root.journal("relay-queued", id=msg["id"], to=f"{target['label']}:{msg['to']['path']}", box=msg["to"]["key"])
    return True
