"""What the queue holds, as observed, with as-of times: the data `list` and `status` print (commands/).

Delivery is reported from receipts and display markers, never inferred from a
successful send (docs/DESIGN.md R11). Reading a box first repairs what crashed processes
left and moves expired mail aside, so every report shows settled state.
"""

import os
import time

from git_korus_mail.store import markers, moves, presence, records, sent
from git_korus_mail.stamps import utc_stamp

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Set, Tuple

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import Box, MailRoot

    Row = Dict[str, Any]  # one box as `list` and `status` report it (JSON-shaped)
    Quarantines = Dict[str, Dict[str, str]]  # box name -> {file name: reason}

COUNTED = ("inbox", "claiming", "seen", "expired", "cancelled")
SESSIONS_SHOWN = 5   # per box in `list`, unless --all
SENT_SHOWN = 20      # messages in `status`, unless --all
EVENTS_SHOWN = 10    # journal events in `status`


def settle(box: "Box") -> None:
    """Repair interrupted moves and expire due mail before reporting on a box."""
    moves.repair(box)
    moves.expire_due(box)


def _box_row(box: "Box", now: float) -> "Row":
    counts = {sub: box.count(sub) for sub in COUNTED}
    counts["claiming"] = records.claim_count(box)
    oldest = records.oldest_unread_age(box, now)
    from git_korus_mail.core import wake
    sess = presence.sessions(box)
    last: Dict[str, Dict[str, Any]] = {}
    for rec in sess:
        for ev, at in (rec.get("events") or {}).items():
            if ev not in last or at > last[ev]["at"]:
                last[ev] = {"at": at, "session": rec.get("session")}
    return {
        "counts": counts,
        "oldest_unread_age_s": None if oldest is None else int(oldest),
        "quarantined": len(records.quarantined_names(box)),
        "sessions": [{"session": r.get("session"), "state": r["liveness"], "last_event": r.get("last_event"),
                      "at": r.get("at"), "config_dir": r.get("config_dir"),
                      "wakeable_until": wake.wakeable_until(box, r) if r["liveness"] == "idle" else None}
                     for r in sess],
        "last_drain": last,
    }


def adopt_moved(root: "MailRoot", clone: "Clone") -> None:
    """Every worktree whose older box (under a path it had before `git worktree move`) still
    holds its mail adopts it now: `list` settles the whole clone, as the drain does one box."""
    from git_korus_mail.store import wtident
    from git_korus_mail.store import forwarding
    by_ident: Dict[str, List[str]] = {}
    for old in root.boxes():
        recorded = forwarding.recorded_worktree(old)
        if recorded is not None and recorded != wtident.NONE:
            by_ident.setdefault(recorded, []).append(old.name)
    if not by_ident:
        return
    for wt, k in clone.worktree_keys():
        if wt.prunable:
            continue
        ident = wtident.of_git_dir(wt.admin_dir, clone.common_dir)
        if not [n for n in by_ident.get(ident, []) if n != k.name]:
            continue
        # a box made now adopts on its first use; one that exists already adopts here
        def adopt(box: "Box", ident: str = ident) -> None:  # bound now, for this worktree
            forwarding.first_use(box, ident)
        box = root.box(k.name, create=True, path=k.path, adopt=adopt)
        assert box is not None  # for mypy: create=True makes the box or raises
        if forwarding.recorded_worktree(box) == ident and forwarding.sources(root, ident, k.name):
            forwarding.adopt(root, box, ident)


def stranded(row: "Row") -> bool:
    """Queued mail that no worktree reads: a box of no worktree (or of a prunable one)."""
    queued: int = row["counts"]["inbox"]
    prunable: bool = row["prunable"]
    return queued > 0 and (not row["worktree"] or prunable)


def collect_list(clone: "Clone") -> "Dict[str, Any]":
    now = time.time()
    root = clone.mail_root()
    if root is not None:
        adopt_moved(root, clone)
    rows: List[Row] = []
    done: set[str] = set()
    for wt, k in clone.worktree_keys():
        box = root.box(k.name) if root is not None else None
        row: Row = {"key": k.name, "slug": k.slug, "path": wt.path, "branch": wt.branch,
               "worktree": True, "prunable": wt.prunable, "main": wt.is_main, "this": k == clone.own_key}
        if box is not None:
            settle(box)
            row.update(_box_row(box, now))
        else:
            row.update({"counts": {s: 0 for s in COUNTED}, "oldest_unread_age_s": None, "quarantined": 0,
                        "sessions": [], "last_drain": {}})
        rows.append(row)
        done.add(k.name)
    if root is not None:
        for box in root.boxes():
            name = box.name
            if name in done:
                continue
            settle(box)
            row = {"key": name, "slug": name.rsplit("-", 1)[0], "path": box.recorded_path(), "branch": None,
                   "worktree": False, "prunable": False, "main": False, "this": name == clone.own_key.name}
            row.update(_box_row(box, now))
            rows.append(row)
    live: Dict[str, int] = {}
    for row in rows:
        n = sum(1 for s in row["sessions"] if s["state"] in ("working", "idle"))
        live[row["key"]] = n
        row["live_sessions"] = n
        row["stranded"] = stranded(row)
    return {"as_of": utc_stamp(now), "mail_root": root.path if root else None,
            "delivery": "off" if (root and root.is_off()) else "on", "boxes": rows}


def _message_state(root: "MailRoot", rec: "Dict[str, Any]", quarantines: "Optional[Quarantines]" = None,
                   now: "Optional[float]" = None) -> "Dict[str, Any]":
    """Fate of one sent message, observed now: queued / shown / consumed / expired / cancelled /
    dropped (by the receiver's limits: the rule and when) / quarantined (with the drain's reason) / missing (neither its box nor any state holds it).

    Follows forwarded/ records (a moved worktree's adopted queue, `forward`) from the box the
    sender recorded to the box that holds the message now. `quarantines` caches each box's
    quarantine records across the sent list."""
    from git_korus_mail.store import forwarding
    mid = rec["id"]
    name = rec["box"]
    moved: List[str] = []
    while len(moved) < forwarding.MAX_HOPS:
        box = root.box(name)
        if box is None:
            return _moved({"state": "missing", "detail": f"its box {name} no longer exists"}, moved)
        state = _state_in(box, mid, {} if quarantines is None else quarantines, now)
        if state is not None:
            return _moved(state, moved)
        fwd = records.forward_record(box, mid)
        if fwd is None or fwd["box"] in moved or fwd["box"] == rec["box"]:
            return _moved({"state": "missing", "detail": f"in no state of box {name}"}, moved)
        name = fwd["box"]
        moved.append(name)
    return _moved({"state": "missing", "detail": "forwarded too many times to follow"}, moved)


def _remote_state(clone: "Clone", rec: "Dict[str, Any]") -> "Dict[str, Any]":
    """Mail sent to another clone: its fate as the relay brought it back (docs/RELAY.md)."""
    from git_korus_mail.relay import local  # no nats: the relay's files only
    state = local.remote_fate(clone.common_dir, rec["id"])
    state["on"] = rec["remote"].get("label")
    return state


def _moved(state: "Dict[str, Any]", moved: "List[str]") -> "Dict[str, Any]":
    if moved:
        state["moved_to"] = moved
    return state


def _state_in(box: "Box", mid: str, quarantines: "Quarantines",
              now: "Optional[float]") -> "Optional[Dict[str, Any]]":
    name = mid + ".json"
    if box.has("inbox", name):
        moves.expire_due(box, now, ids=[mid])  # report settled state: due mail is expired first
    r = records.receipt(box, mid)
    if r is not None:
        if not r:
            return {"state": "consumed"}  # unreadable: report what we can
        observed = r.get("observed")
        return {"state": "consumed", "session": r.get("session"),
                "launch": (r.get("launch") or {}).get("tag") if isinstance(r.get("launch"), dict) else None,
                "at": r.get("consumed_at"),
                "shown_at": observed.get("at") if isinstance(observed, dict) else None}
    if box.has("expired", name):
        return {"state": "expired", "unread": True}
    if box.has("cancelled", name):
        return {"state": "cancelled"}
    if box.has("dropped", name):
        why = records.drop_reason(box, mid) or {}  # unreadable: dropped all the same, its rule unknown
        return {"state": "dropped", "rule": why.get("rule"), "at": why.get("at"), "detail": why.get("detail")}
    if box.has("inbox", name):
        shown = markers.shown_by(box, mid)
        if shown:
            return {"state": "shown", "shown": shown}
        return {"state": "queued"}
    if box.name not in quarantines:
        quarantines[box.name] = records.quarantine_reasons(box)
    reason = quarantines[box.name].get(name)
    if reason is not None:
        return {"state": "quarantined", "reason": reason}
    return None


def retention_words(days: int) -> str:
    """The one wording of retention a person reads (status, doctor, a sent message's fate)."""
    return f"consumed, expired and cancelled mail is kept {days} days, then pruned"


def _maybe_pruned(rec: "Dict[str, Any]", days: int, now: float) -> None:
    """A missing message older than the retention time was most likely pruned: say so."""
    from git_korus_mail.stamps import parse_stamp
    fate = rec["fate"]
    try:
        old = now - parse_stamp(rec.get("sent_at")) > days * 86400
    except (ValueError, TypeError):
        return
    if fate["state"] == "missing" and old:
        fate["detail"] = f"{fate.get('detail')}; most likely pruned ({retention_words(days)})"


def _retention(clone: "Clone") -> "Dict[str, Any]":
    from git_korus_mail.core.retention import keep_days
    days, problem = keep_days(clone.own_key.path)
    return {"days": days, "problem": problem}


def ours(rec: "Dict[str, Any]", key: str, path: str, sent_ids: "Set[str]") -> bool:
    """A journal record about this worktree: its box (mail to it, or its box's own events), mail
    it sent and what became of that mail (`sent_ids`), or a forward out of its box."""
    return (rec.get("box") == key or rec.get("sender") == path or rec.get("source") == key
            or rec.get("id") in sent_ids)


def collect_status(clone: "Clone", sent_limit: "Optional[int]" = SENT_SHOWN, events: int = EVENTS_SHOWN,
                   whole_clone: bool = False) -> "Dict[str, Any]":
    """`sent_limit` None: every sent record. `sent_total` counts them all either way. The journal's
    latest `events` of this worktree (`ours`), or of every worktree with `whole_clone`."""
    now = time.time()
    root = clone.mail_root()
    data: Dict[str, Any] = {"as_of": utc_stamp(now), "mail_root": root.path if root else os.path.join(clone.common_dir, "mail"),
            "delivery": "off" if (root and root.is_off()) else "on",
            "this": {"key": clone.own_key.name, "path": clone.own_key.path},
            "box": None, "sent": [], "sent_total": 0, "sent_as_of": utc_stamp(now),
            "journal": [], "journal_scope": "clone" if whole_clone else "worktree",
            "retention": _retention(clone),
            "questions": {"asked": [], "received": []}}
    if root is None:
        return data
    box = clone.own_box(create=True)  # a moved worktree's first command adopts its queue here
    if box is not None:
        settle(box)
        data["box"] = _box_row(box, now)
    for b in root.boxes():
        if b.name != clone.own_key.name:
            moves.repair(b)
    quarantines: Quarantines = {}
    every = sent.entries(root, box, clone.own_key.path, shared=not clone.in_worktree())
    data["sent_total"] = len(every)
    for entry in (every if sent_limit is None else every[:sent_limit]):
        rec = sent.load(entry)
        if rec is None:
            continue
        rec["fate"] = (_remote_state(clone, rec) if isinstance(rec.get("remote"), dict)
                       else _message_state(root, rec, quarantines, now))
        rec["fate"]["as_of"] = data["sent_as_of"] = utc_stamp(time.time())
        _maybe_pruned(rec, data["retention"]["days"], now)
        data["sent"].append(rec)
    from git_korus_mail.core import questions
    data["questions"] = questions.collect(root, box, data["sent"])
    if whole_clone:
        data["journal"] = root.read_journal(limit=events)
    else:
        sent_ids = {name[:-len(".json")] for name, _d, _rec in every}
        mine = [r for r in root.read_journal() if ours(r, clone.own_key.name, clone.own_key.path, sent_ids)]
        data["journal"] = mine[-events:] if events else mine
    return data


def switch(clone: "Clone", off: bool) -> "Tuple[bool, int]":
    """Turn delivery off or on; returns (changed, messages queued, which stay)."""
    root = clone.mail_root(create=True)
    assert root is not None  # for mypy: create=True makes the root or raises
    changed = root.set_off(off)
    boxes = root.boxes()
    queued = sum(b.count("inbox") for b in boxes)
    root.journal("off" if off else "on", changed=changed)
    return changed, queued
