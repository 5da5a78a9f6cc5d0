"""The roster: every session the clone knows, in every config root and surface our hooks saw.

Client-free. Our presence records (store/presence.py, one per session per box, rewritten at
each hook event) are the facts: a session our hooks never saw cannot get mail. A client's own
registry (read through the `read_registry` that `collect` is given: clients/__init__.py `sessions`) adds what presence
cannot know: the session's name, and a status newer than our last hook event. Every registry
entry is a claim, checked before use: its process must run with the start time it claims
(never the pid alone), and it speaks only for the presence record of that same launch. So a
ghost left by a killed process names nobody, and a session id gone stale after `/clear` is
never shown: the id shown is the one our hooks saw last in that process.

States (docs/CONTRACT.md, "who"): working, idle (wakeable until T where the wake tier says),
waiting (for an answer, where `ask` says), not responding (alive and working, but no hook
event and no sign of life in the client's own trace for NOT_RESPONDING_SECONDS), closed (ended with the client's end event), gone (its
process died without one). `send --to all` mails the worktrees with a session in presence.LIVE:
every state here but closed and gone.
"""

import os
import time

from git_korus_mail.core import roster_hooks
from git_korus_mail.store import claims, presence
from git_korus_mail.errors import MailError
from git_korus_mail.store.launch import parse_tag
from git_korus_mail.stamps import parse_stamp, utc_stamp

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import Box

    Entry = Dict[str, Any]      # one registry entry, in the terms of clients/__init__.py `sessions`
    # (config root, client name) -> its entries; not clients/interface.py's Registry, a client module
    ReadRegistry = Callable[[Optional[str], Optional[str]], List[Entry]]
    Activity = Callable[[Optional[str], Optional[str], Optional[str], str], Optional[float]]  # client, root, cwd, session
    Session = Dict[str, Any]    # one roster row (JSON-shaped)

NOT_RESPONDING_SECONDS = 15 * 60  # past the longest tool call Claude Code allows (10 min), with room
LIVE_STATES = ("working", "idle", "waiting", "not responding")


def collect(clone: "Clone", read_registry: "ReadRegistry", now: "Optional[float]" = None,
            activity: "Optional[Activity]" = None) -> "Dict[str, Any]":
    """{"as_of", "sessions": [...], "worktrees": [...], "config_roots": [...]}; see docs/CONTRACT.md."""
    now = time.time() if now is None else now
    root = clone.mail_root()
    wts = {k.name: wt for wt, k in clone.worktree_keys()}
    found: "List[Tuple[Box, Dict[str, Any]]]" = []
    if root is not None:
        for box in root.boxes():
            found.extend((box, rec) for rec in presence.sessions(box))
    # each config root is read by the registry of the client whose hooks recorded it
    roots = sorted({(str(rec.get("client") or ""), str(rec.get("config_dir") or "")) for _, rec in found})
    entries, ghosts = _verified_entries(read_registry, roots)
    rows: "List[Session]" = []
    matched: "set[Tuple[int, int]]" = set()
    for box, rec in found:
        entry = _entry_of(rec, entries)
        if entry is not None:
            matched.add((entry["pid"], entry["start"]))
        rows.append(_row(box, rec, entry, wts, now, activity))
    rows.extend(_unseen(entries, matched, wts, now))
    rows.sort(key=lambda r: (r["worktree"] or "~", r["state"] in ("closed", "gone"), -(r["at_epoch"] or 0)))
    worktrees = []
    for key in sorted({r["box"] for r in rows if r["box"]}):
        live = [r for r in rows if r["box"] == key and r["state"] in LIVE_STATES and r["hooks"]]
        path = next(r["worktree"] for r in rows if r["box"] == key)
        worktrees.append({"box": key, "path": path, "live_sessions": len(live),
                          "shared": shared_box_warning(len(live))})
    for r in rows:
        del r["at_epoch"]
    return {"as_of": utc_stamp(now), "sessions": rows, "worktrees": worktrees,
            "config_roots": [{"path": r or None, "client": c or None, "ghosts": ghosts.get((c, r), 0)}
                             for c, r in roots]}


def shared_box_warning(live: int) -> "Optional[str]":
    """What two or more live sessions in one worktree mean for its mail (None for fewer)."""
    if live < 2:
        return None
    who = "both" if live == 2 else f"all {live}"
    return (f"{live} live sessions share this worktree's mail: {who} are shown each message, "
            f"and only one of them consumes it")


def _verified_entries(read_registry: "ReadRegistry", roots: "List[Tuple[str, str]]") -> "Tuple[List[Entry], Dict[Tuple[str, str], int]]":
    """Registry entries whose process runs now with the start time they claim; and how many
    entries per root were ghosts (a process gone, or its pid now another process's)."""
    out: "List[Entry]" = []
    ghosts: "Dict[Tuple[str, str], int]" = {}
    seen: "set[Tuple[int, int]]" = set()
    for root in roots:
        for e in read_registry(root[1] or None, root[0] or None):
            # the one liveness rule (a zombie client has ended); Claude Code's pidDomain names a
            # boot, but not by /proc's boot_id: not compared
            if e.get("start") is None or not claims.process_runs(e["pid"], e["start"])[0]:
                ghosts[root] = ghosts.get(root, 0) + 1
                continue
            if (e["pid"], e["start"]) not in seen:  # one process, listed under two spellings of a root
                seen.add((e["pid"], e["start"]))
                out.append(e)
    return out, ghosts


def _entry_of(rec: "Dict[str, Any]", entries: "List[Entry]") -> "Optional[Entry]":
    """The registry entry of the very launch that wrote this presence record, if it still runs."""
    tag = parse_tag(rec["launch"]) if isinstance(rec.get("launch"), str) else None
    if tag is None or tag[1] is None:
        return None  # a pid alone proves nothing: it may be reused
    return next((e for e in entries if e["pid"] == tag[0] and e["start"] == tag[1]), None)


def _row(box: "Box", rec: "Dict[str, Any]", entry: "Optional[Entry]", wts: "Dict[str, Any]",
         now: float, activity: "Optional[Activity]" = None) -> "Session":
    session = str(rec.get("session"))
    wt = wts.get(box.name)
    known = presence.remembered(box, session)
    said = rec.get("name") if isinstance(rec.get("name"), str) else None  # the client's word at the end
    name = (entry or {}).get("name") or said or known.get("name")
    if entry is not None and entry.get("name") and known.get("name") != entry["name"]:
        _remember(box, session, {"name": entry["name"], "named_at": utc_stamp(now)})
    at = _epoch(rec.get("at"))
    row: "Session" = {
        "worktree": wt.path if wt is not None else box.recorded_path(),
        "branch": wt.branch if wt is not None else None,
        "box": box.name, "session": session, "name": name,
        "client": rec.get("client") or (entry or {}).get("client"),
        "config_root": rec.get("config_dir") or (entry or {}).get("config_root"),
        "surface": rec.get("surface") or (entry or {}).get("surface"),
        "pid": presence.client_pid(rec), "hooks": True, "last_event": rec.get("last_event"),
        "at_epoch": at,
    }
    row.update(_state(box, rec, entry, at, now, activity))
    return row


def _state(box: "Box", rec: "Dict[str, Any]", entry: "Optional[Entry]", at: "Optional[float]",
           now: float, activity: "Optional[Activity]" = None) -> "Dict[str, Any]":
    """state, as_of (the time of the fact it rests on), last_activity, wakeable_until,
    wake_budget_spent_until, waiting_for."""
    out: "Dict[str, Any]" = {"state": rec["liveness"], "as_of": rec.get("at"), "last_activity": None,
                             "wakeable_until": None, "wake_budget_spent_until": None, "waiting_for": None}
    if out["state"] not in presence.LIVE:
        return out  # closed or gone: since its last hook event
    status_at = (entry or {}).get("updated_at")
    if entry is not None and entry.get("status") and status_at is not None and (at is None or status_at > at):
        # the client's own word is newer than our last hook event (an interrupted turn runs no hook)
        out.update(state=entry["status"], as_of=utc_stamp(status_at))
    waiting = roster_hooks.waiting_for(box, rec)
    if waiting is not None:
        out.update(state="waiting", waiting_for=waiting)
    elif out["state"] == "working" and at is not None and now - at > NOT_RESPONDING_SECONDS:
        # tool calls the stub answers without Python leave no hook event in presence: the
        # client's own trace of the session (Claude Code: its transcript) counts as a sign of life
        seen = activity(rec.get("client"), rec.get("config_dir"), rec.get("cwd"), str(rec.get("session"))) \
            if activity is not None else None
        if seen is not None:
            out["last_activity"] = utc_stamp(seen)
        if seen is None or now - seen > NOT_RESPONDING_SECONDS:
            out["state"] = "not responding"
    elif out["state"] == "idle":
        out["wakeable_until"] = roster_hooks.wakeable_until(box, rec)
        out["wake_budget_spent_until"] = roster_hooks.wake_budget_spent_until(box, rec)
    return out


def _unseen(entries: "List[Entry]", matched: "set[Tuple[int, int]]", wts: "Dict[str, Any]",
            now: float) -> "List[Session]":
    """Running sessions in a worktree of this clone that our hooks never saw: mail cannot reach
    them (their client is not wired there). Listed so nobody takes the roster for complete."""
    out: "List[Session]" = []
    for e in entries:
        if (e["pid"], e["start"]) in matched or not e.get("cwd"):
            continue
        box, wt = _worktree_of(e["cwd"], wts)
        if wt is None:
            continue
        out.append({"worktree": wt.path, "branch": wt.branch, "box": box, "session": e.get("session"),
                    "name": e.get("name"), "client": e.get("client"), "config_root": e.get("config_root"),
                    "surface": e.get("surface"), "pid": e["pid"], "hooks": False, "last_event": None,
                    "state": e.get("status") or "idle", "last_activity": None, "wakeable_until": None,
                    "waiting_for": None,
                    "as_of": utc_stamp(e["updated_at"]) if e.get("updated_at") else utc_stamp(now),
                    "at_epoch": e.get("updated_at")})
    return out


def _worktree_of(cwd: str, wts: "Dict[str, Any]") -> "Tuple[Optional[str], Any]":
    real = os.path.realpath(cwd)
    best: "Tuple[Optional[str], Any]" = (None, None)
    for name, wt in wts.items():
        top = os.path.realpath(wt.path)
        if (real == top or real.startswith(top.rstrip("/") + "/")) and \
                (best[1] is None or len(top) > len(os.path.realpath(best[1].path))):
            best = (name, wt)
    return best


def _remember(box: "Box", session: str, facts: "Dict[str, Any]") -> None:
    try:
        presence.remember(box, session, facts)
    except (OSError, MailError):
        pass  # a name is a convenience: a box we cannot write still gets its roster


def _epoch(stamp: "Any") -> "Optional[float]":
    try:
        return parse_stamp(stamp)
    except (ValueError, TypeError):
        return None


# -- addressing by session name (send --to <name>) -----------------------------------------
def named(sessions: "List[Session]", name: str) -> "List[Session]":
    """The sessions our hooks saw under `name`, running ones first."""
    hits = [s for s in sessions if s.get("name") == name and s["hooks"]]
    return sorted(hits, key=lambda s: s["state"] not in LIVE_STATES)


def pick(hits: "List[Session]") -> "Tuple[Optional[Session], List[Session]]":
    """(the one session a name means, or None; the candidates when it is ambiguous). A running
    session wins over closed or gone ones; two running, or two none running, are ambiguous."""
    live = [s for s in hits if s["state"] in LIVE_STATES]
    pool = live or hits
    if len(pool) == 1:
        return pool[0], []
    return None, pool


def stopped(dest: str, row: "Session", path: str, command: str) -> str:
    """The refusal of a session name whose session no longer runs: one line that names the two
    choices, mail the worktree or keep it for a resume of that session (send has both)."""
    since = f" since {row['as_of']}" if row.get("as_of") else ""
    head = (f"{dest}: session {row.get('name')} ({row['session']}) is {row['state']}{since}; "
            f"nothing {'asked' if command == 'ask' else 'queued'}: ")
    if command == "ask":
        return head + (f"ask --to {path} asks whoever runs there (or the next session to start), "
                       f"or resume that session and ask it again")
    return head + (f"--to {path} mails the worktree (any session there), or --to {path} --session "
                   f"{row['session']} keeps it for a resume of that session alone")
