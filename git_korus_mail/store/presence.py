"""Presence: which sessions the drain has seen in each box, and in what state.

Each drain run rewrites `box/<key>/sessions/<session>.json` (one small atomic
write). `send --to all`, `list` and `who` read them, always through `load` or `sessions`, which
merge in the hook stub's turn record `<session>.state` (docs/HOOKS.md, "A turn with nothing new"):
a prompt or a Stop the stub answered without Python writes only that file (`<state> <event>
<the stub's pid>`, its mtime the time), and it stands until a drain's record names it as seen
(`turn_seen`: its inode, mtime and pid). `<session>.faults` exists while the record holds pending faults, so the stub can
leave such a Stop to the drain with one stat. A session is live while its state
is not closed and its client process (the launch the client module names: pid plus start
time) still runs; a pid recorded without a launch it could be identified by counts as gone;
with no pid recorded it counts as live for a day after its last event.
"""

import os
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.stamps import parse_stamp, utc_stamp  # claims and launch: loaded where used (hot path)
from git_korus_mail.store.fsafe import NotRegular, TooLarge

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Optional

    from git_korus_mail.store.files import Box, MailRoot
    from git_korus_mail.store.fsafe import Dir
    from git_korus_mail.store.launch import AnyLaunch
    from git_korus_mail.store.shapes import Presence, SessionState, Unchecked

NO_PID_LIVE_SECONDS = 24 * 3600
LIVE = ("working", "idle")  # the liveness values of a session that still runs (`send --to all`, `who`)
ROSTER_SUFFIX = ".roster"   # beside <session>.json: what `who` learned of the session from its client
# The client process's pid, whichever client runs the session. Its first key named one client;
# writers write both keys with one value and readers read both, through `client_pid`
# (docs/STORE.md, "Presence: the pid's two keys", says for how long and why).
PID_KEY = "client_pid"
OLD_PID_KEY = "claude_pid"
STATE_SUFFIX = ".state"     # beside it: the stub's turn record (see above)
FAULTS_SUFFIX = ".faults"   # beside it: the record holds pending faults (see above)


def record(box: "Box", session: str, event: str, cwd: str, state: "Optional[SessionState]" = None,
           launch: "Optional[AnyLaunch]" = None, account: "Optional[str]" = None,
           prior: "Optional[Unchecked]" = None, extra: "Optional[Unchecked]" = None) -> "Unchecked":
    """Rewrite this session's presence after an event; returns the record. `event` is the
    client's name for it (a label), `state` what the drain's phase left the session in (None:
    unchanged), `launch` the client process (launch.Launch) and `account` its config dir.

    The fields this writer owns are a Presence; every other key of `prior` (the drain's own
    through `extra`, or a newer version's) is carried forward as it was read, so the record
    returned is as unchecked as one read from disk."""
    now = time.time()
    rec = dict(prior or {})
    pid = (launch.pid if launch is not None and launch.pid else None) or client_pid(rec)
    events = dict(rec.get("events") or {})
    events[event] = utc_stamp(now)
    fresh: "Presence" = {
        "session": session,
        "box": box.name,
        "cwd": cwd,
        "client_pid": pid,  # PID_KEY
        "claude_pid": pid,  # OLD_PID_KEY, for older readers: without it they judge a dead client live for a day
        "config_dir": account or rec.get("config_dir"),
        "client": launch.client if launch is not None and launch.known else rec.get("client"),
        "launch": launch.tag if launch is not None else rec.get("launch"),
        "boot": rec.get("boot") or _boot_id(),
        "pidns": _pid_ns(),  # whose pids the client's pid counts in (liveness)
        "last_event": event,
        "at": utc_stamp(now),
        "state": state or rec.get("state", "idle"),
        "events": events,
    }
    rec.update(fresh)
    if extra:
        rec.update(extra)
    d = box.ensure_sub("sessions")
    turn = _turn(d, session)
    rec["turn_seen"] = turn[2] if turn is not None else None  # this record supersedes the stub's
    _write(d, box, session, rec)
    if turn is not None:
        from git_korus_mail import crash
        crash.point("turn:recorded")
        d.unlink_quiet(session + STATE_SUFFIX)  # tidy only: a superseded one is ignored (load)
    return rec


def client_pid(rec: "Unchecked") -> "Optional[int]":
    """The client process's pid a presence record names, in either of its keys. The old key
    wins only when it differs from the new: then an older writer rewrote the record last and
    carried the newer writer's key forward unchanged (a newer writer always writes both alike)."""
    pid = rec.get(OLD_PID_KEY) if OLD_PID_KEY in rec and rec.get(OLD_PID_KEY) != rec.get(PID_KEY) \
        else rec.get(PID_KEY)
    return pid if isinstance(pid, int) else None


def _write(d: "Dir", box: "Box", session: str, rec: "dict[str, Any]") -> None:
    """Replace the record; the faults flag is there whenever the record on disk holds pending
    faults: made before such a record, removed after one without (crash-safe either way)."""
    faulty = bool(rec.get("pending_faults"))
    if faulty and not d.exists(session + FAULTS_SUFFIX):
        d.write_replace(session + FAULTS_SUFFIX, b"", box.root.tmp)
    d.write_replace(session + ".json", json.dumps(rec, sort_keys=True).encode(), box.root.tmp)
    if not faulty:
        d.unlink_quiet(session + FAULTS_SUFFIX)


def _turn(d: "Dir", session: str) -> "Optional[tuple[str, str, str, float]]":
    """The stub's turn record: (state, event, its identity, its mtime), or None when there is none
    or it is not one (a bad file reads as none: the JSON record stands)."""
    try:
        data, st = d.read_regular(session + STATE_SUFFIX, 256)
    except (OSError, NotRegular, TooLarge):
        return None
    words = data.decode("ascii", "replace").split()
    if (len(words) != 3 or words[0] not in LIVE or not (words[1].isascii() and words[1].isalnum())
            or not (words[2].isascii() and words[2].isdigit())):
        return None
    # its identity: the inode of a file the drain unlinked can come back for the stub's next one
    # within one tick of the (coarse) file clock, so the writing stub's pid is part of it too
    return words[0], words[1], f"{st.st_ino}:{st.st_mtime_ns}:{words[2]}", st.st_mtime


STAGED_MAX_AGE = 60.0  # seconds: a stub's write and its `mv` take microseconds


def staged_turn(name: str) -> bool:
    """Whether `name` in sessions/ is a turn record the stub staged, `.<session>.state.<its pid>`
    (hooks/hook.sh): a stub killed between its write and its `mv` leaves it, and nothing reads it."""
    base, dot, pid = name.rpartition(".")
    return (name.startswith(".") and bool(dot) and base.endswith(STATE_SUFFIX) and len(base) > len(STATE_SUFFIX) + 1
            and pid.isascii() and pid.isdigit())


def sweep_staged(box: "Box", now: float) -> int:
    """Remove the staged turn records killed stubs left in the box's sessions/ (docs/HOOKS.md, "A
    turn with nothing new"): each one whose stub no longer runs, or older than STAGED_MAX_AGE.
    Removing a live stub's file is harmless: its `mv` then fails and it leaves the event to the
    drain. Returns how many went."""
    from git_korus_mail.store.launch import process_runs  # the one liveness rule (docs/STORE.md)
    d = box.open_sub("sessions")
    if d is None:
        return 0
    removed = 0
    for name in d.names():
        if not staged_turn(name):
            continue
        try:
            st = d.lstat(name)
        except FileNotFoundError:
            continue
        if now - st.st_mtime > STAGED_MAX_AGE or not process_runs(int(name.rpartition(".")[2]), None)[0]:
            removed += d.unlink_quiet(name)
    return removed


def has_turn(box: "Box", session: str) -> bool:
    """Whether a stub's turn record lies beside the session's record (a drain must rewrite the
    record to supersede and remove it)."""
    d = box.open_sub("sessions")
    return d is not None and d.exists(session + STATE_SUFFIX)


def _boot_id() -> "Optional[str]":
    from git_korus_mail.store.launch import boot_id
    return boot_id()


def _pid_ns() -> "Optional[str]":
    from git_korus_mail.store.launch import pid_ns
    return pid_ns()


def load(box: "Box", session: str) -> "Optional[dict[str, Any]]":
    d = box.open_sub("sessions")
    if d is None:
        return None
    rec = d.read_json(session + ".json", 256 * 1024)  # a bad record reads as no record
    if not isinstance(rec, dict):
        return None
    turn = _turn(d, session)
    if turn is not None and turn[2] != rec.get("turn_seen"):
        # the stub answered a prompt or a Stop after this record was written (see above)
        state, event, _ident, mtime = turn
        at = utc_stamp(mtime)
        events = dict(rec.get("events") or {})
        events[event] = at
        rec.update({"state": state, "last_event": event, "at": at, "events": events})
    return rec


def sessions(box: "Box") -> "list[dict[str, Any]]":
    d = box.open_sub("sessions")
    if d is None:
        return []
    out = []
    for name in d.names():
        if name.endswith(".json") and not name.startswith("."):
            rec = load(box, name[:-5])
            if rec is not None:
                rec["liveness"] = liveness(rec)
                out.append(rec)
    out.sort(key=lambda r: r.get("at", ""), reverse=True)
    return out


def remembered(box: "Box", session: str) -> "dict[str, Any]":
    """What `who` learned of a session from its client's own registry while it ran (its name),
    so the roster can still name it once it has closed; {} when nothing was learned."""
    d = box.open_sub("sessions")
    rec = d.read_json(session + ROSTER_SUFFIX, 64 * 1024) if d is not None else None
    return rec if isinstance(rec, dict) else {}


def remember(box: "Box", session: str, facts: "dict[str, Any]") -> None:
    """Keep `facts` (name, ...) of a session for `who`. A file of its own, not the presence
    record: the drain rewrites that one from what it read, so a write here could undo its state."""
    if remembered(box, session) == facts:
        return
    box.ensure_sub("sessions").write_replace(session + ROSTER_SUFFIX, json.dumps(facts, sort_keys=True).encode(),
                                             box.root.tmp)


def liveness(rec: "dict[str, Any]", now: "Optional[float]" = None) -> str:
    """working / idle / closed / gone (its client process no longer runs, or its pid now
    belongs to another process)."""
    state: str = rec.get("state", "idle")
    if state == "closed":
        return "closed"
    from git_korus_mail.store import claims
    from git_korus_mail.store.launch import parse_tag
    pid = client_pid(rec)
    mine = claims.me("check")
    if rec.get("pidns") and mine["pidns"] and rec["pidns"] != mine["pidns"] and rec.get("boot") == mine["boot"]:
        # its pid counts in another pid namespace (a command in a client's sandbox reads a record
        # the hooks wrote outside it): nothing here can judge it, and unknown is not dead
        # (docs/STORE.md, "Liveness")
        return state
    if isinstance(pid, int) and pid > 0 and rec.get("boot") == mine["boot"]:
        # the launch tag holds the process's start time: a pid reused by a newer process is gone too
        launch = parse_tag(rec["launch"]) if isinstance(rec.get("launch"), str) else None
        if launch is None and claims.proc_start_time(os.getpid()) is not None:
            # the client named a pid we could not identify as its process (it did not run then):
            # whatever runs under that pid now is another process; never judge by the pid alone
            return "gone"
        start = launch[1] if launch is not None and launch[0] == pid else None
        if claims.owner_is_dead({"pid": pid, "start": start, "host": mine["host"], "boot": rec.get("boot"),
                                 "pidns": mine["pidns"]}):
            return "gone"
        return state
    if rec.get("boot") and mine["boot"] and rec.get("boot") != mine["boot"]:
        return "gone"
    try:
        age = (time.time() if now is None else now) - parse_stamp(rec.get("at"))
    except (ValueError, TypeError):
        return "gone"
    return state if age < NO_PID_LIVE_SECONDS else "gone"


def live_boxes(root: "MailRoot") -> "dict[str, list[dict[str, Any]]]":
    """{box name: [live session records]} for every box with a working or idle session."""
    out: "dict[str, list[dict[str, Any]]]" = {}

    for box in root.boxes():
        live = [r for r in sessions(box) if r["liveness"] in LIVE]
        if live:
            out[box.name] = live
    return out


def add_pending_fault(box: "Box", session: str, text: str) -> None:
    """Queue `text` for the session's next consume notice (the wake-up tier's watcher, which
    has no output of its own that reaches the user without waking the model)."""
    rec = load(box, session)
    if rec is None:
        return  # no presence yet: nothing to tell it through (the drain writes it at every event)
    rec.pop("liveness", None)
    rec["pending_faults"] = (list(rec.get("pending_faults") or []) + [text])[-10:]
    # the merged state goes into the record; the turn record stays as it was (`turn_seen` unchanged)
    _write(box.ensure_sub("sessions"), box, session, rec)


def wakeable_until(box: "Box", rec: "dict[str, Any]") -> "Optional[str]":
    """Until when the session of presence record `rec` can be woken by new mail (the stamp its
    armed watcher gives up at), or None: no watcher is armed for its launch (it is working, the
    wake-up tier is not installed, or it has been idle past the watcher's reach)."""
    session, launch = rec.get("session"), rec.get("launch")
    if not isinstance(session, str) or not isinstance(launch, str) or rec.get("state") != "idle":
        return None
    from git_korus_mail.store import watch
    return watch.until_of(box, session, launch)
