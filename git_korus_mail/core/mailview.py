"""What a person reads of the mail: a box listed (`inbox`) and one message found whole (`read`).

Reads only. Nothing here consumes a message, marks it shown or creates a directory; like
every report it settles a box first (report.settle: repairs what dead processes left and
expires due mail), so it shows settled state. Each message's state comes from the disk, as
the store files it (docs/STORE.md): its directory, its receipt, its display markers, the
quarantine's records. Sender fields are unverified claims (docs/DESIGN.md R13); the
commands escape every field and body for the terminal (core/render.py's rules).
"""

import os
import time

from git_korus_mail.core import ids, report
from git_korus_mail.core.render import field
from git_korus_mail.errors import MailError
from git_korus_mail.stamps import parse_stamp, utc_stamp
from git_korus_mail.store import markers, moves, records
from git_korus_mail.store.files import NotRegular, TooLarge
from git_korus_mail.store.layout import CANCELLED, DROPPED, FILED
from git_korus_mail.store.message import MAX_FILE_BYTES, Invalid, id_time

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional, Tuple

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.arrivals import Arrivals
    from git_korus_mail.store.files import Box, MailRoot

    Entry = Dict[str, Any]  # one message as `inbox` and `read` report it (JSON-shaped)

# the state each directory files a message in, as a person reads it
STATE_OF = {"inbox": "queued", "seen": "consumed", "expired": "expired", CANCELLED: "cancelled",
            DROPPED: "dropped"}
SHOWN_BY_DEFAULT = ("queued", "shown", "quarantined", "dropped")  # the rest only with --all
DONE_DIRS = ("seen", "expired", CANCELLED)  # what is filed there is in a state only --all shows
OPTIONAL_FIELDS = ("in_reply_to", "thread", "status", "wake")  # newer, optional message fields


def _filed(box: "Box") -> "Dict[str, str]":
    """{id: the directory it is filed in}. A message caught between two links of a move is
    taken where the move goes (every directory after inbox/ in FILED is a move's end)."""
    where: Dict[str, str] = {}
    for sub in FILED:
        for msg_id in records.ids_in(box, sub):
            where[msg_id] = sub
    return where


def _first_line(body: str) -> str:
    """The body's first line that is not blank (the whole of a one-line body)."""
    for line in body.split("\n"):
        if line.strip():
            return line.rstrip("\r")
    return ""


def _ctime(st: "Optional[os.stat_result]") -> "Optional[str]":
    """When a move linked the file where it is now (a link changes the inode's ctime)."""
    return utc_stamp(st.st_ctime) if st is not None else None


def arrivals_of(box: "Box") -> "Optional[Arrivals]":
    """The box's arrival records (store/arrivals.py), listed once for a whole listing; None for
    a box that never received relayed mail (one failed open; the module stays unloaded)."""
    if not box.has_arrivals():
        return None
    from git_korus_mail.store.arrivals import Arrivals
    return Arrivals(box)


def describe(box: "Box", msg_id: str, sub: str, now: float, body: bool = False,
             arrived: "Optional[Arrivals]" = None) -> "Entry":
    """One filed message, as the disk says it now. `body`: the whole body too (`read`).
    `arrived`: the box's arrival records (arrivals_of), for `arrived_at`."""
    e: Entry = {"id": msg_id, "box": box.name, "box_path": box.recorded_path(), "filed_in": sub,
                "state": STATE_OF.get(sub, sub)}
    st: Optional[os.stat_result] = None
    try:
        msg, st = box.load(msg_id, sub)
    except FileNotFoundError:
        e["state"] = "gone"  # moved on while we looked: the next look says where
        return e
    except (OSError, Invalid, NotRegular, TooLarge) as exc:
        msg = None
        e["unreadable"] = str(exc) or type(exc).__name__
    if msg is not None:
        sender = msg.get("from") or {}
        e.update({"from": {k: sender.get(k) for k in ("path", "branch", "session", "clone")},
                  "kind": msg["kind"], "sent_at": msg["sent_at"], "expires_at": msg["expires_at"],
                  "age_s": int(now - parse_stamp(msg["sent_at"])), "to": msg.get("to"),
                  "session_filter": msg.get("session"), "first_line": _first_line(msg["body"]),
                  "body_chars": len(msg["body"])})
        # relayed mail: when it arrived here, by this machine's clock; its sent_at and id are the
        # sender's clock, days off or an outage old (store/arrivals.py). None for local mail, and
        # for relayed mail whose record retention already removed (never while it is queued)
        t = arrived.time_of(msg_id) if arrived is not None else None
        e["arrived_at"] = utc_stamp(t) if t is not None else None
        fields: "Mapping[str, object]" = msg  # the optional ones, by name
        e.update({k: fields[k] for k in OPTIONAL_FIELDS if k in fields})
        if body:
            e["body"] = msg["body"]
    receipt = records.receipt(box, msg_id)
    if receipt is not None:
        e["state"] = "consumed"  # a receipt decides, wherever the move got to
        e["receipt"] = receipt
        e["consumed"] = {"session": receipt.get("session"), "at": receipt.get("consumed_at"),
                         "launch": (receipt.get("launch") or {}).get("tag")
                         if isinstance(receipt.get("launch"), dict) else None}
    # display markers: one read per launch directory, so a listing asks only where they matter
    # (the queued; the cancelled, whose sender is told a model saw them); `read` always asks
    shown = markers.shown_by(box, msg_id, observed=True) if body or sub in ("inbox", CANCELLED) else []
    if shown:
        e["shown"] = shown
        if e["state"] == "queued":
            e["state"] = "shown"
    if e["state"] in ("expired", "cancelled", "dropped"):
        e[e["state"] + "_at"] = _ctime(st)
    if e["state"] == "dropped":
        why = _dropped_reason(box, msg_id)
        if why is not None:
            e["dropped_reason"] = why
            e["dropped_at"] = why.get("at") or e["dropped_at"]
    return e


def _dropped_reason(box: "Box", msg_id: str) -> "Optional[Dict[str, Any]]":
    """The receiver's record of a drop (the limit that fired, how, when), where the store keeps
    one (records.drop_reason, docs/STORE.md); None when it keeps none."""
    reason = getattr(records, "drop_reason", None)
    got = reason(box, msg_id) if reason is not None else None
    return got if isinstance(got, dict) else None


def _quarantined(q: "Dict[str, Any]", box: "Box") -> "Entry":
    return {"id": q["id"], "box": box.name, "box_path": box.recorded_path(), "filed_in": "quarantine",
            "state": "quarantined", "reason": q["reason"], "quarantined_at": q["at"], "file": q["file"],
            "name": q["name"]}


def _when(e: "Entry") -> float:
    """Sort key: the time the id says it was sent (quarantined junk: when it was moved aside)."""
    try:
        return id_time(e["id"]) if e.get("id") else parse_stamp(e.get("quarantined_at"))
    except (ValueError, TypeError):
        return 0.0


def entries(box: "Box", now: float, hidden: "Optional[Dict[str, int]]" = None) -> "List[Entry]":
    """Every message the box still keeps, in any state, and its quarantine: oldest first. With
    `hidden` (a dict to count into), a message filed where only `--all` shows it (consumed,
    expired, cancelled) is counted by its state and not read: a listing costs what it shows,
    not what the box keeps of its history (issue 26: 20,000 consumed made `inbox` 24x slower)."""
    out = []
    arrived = arrivals_of(box)
    for msg_id, sub in _filed(box).items():
        if hidden is not None and sub in DONE_DIRS:
            hidden[STATE_OF[sub]] = hidden.get(STATE_OF[sub], 0) + 1
            continue
        out.append(describe(box, msg_id, sub, now, arrived=arrived))
    out.extend(_quarantined(q, box) for q in records.quarantine_entries(box))
    out.sort(key=lambda e: (_when(e), e.get("id") or "", e.get("file") or ""))
    return out


def collect_inbox(clone: "Clone", every: bool = False) -> "Dict[str, Any]":
    """This worktree's mail, oldest first: what waits (queued, shown), what was refused
    (quarantined, dropped), and with `every` what is done (consumed, expired, cancelled)."""
    now = time.time()
    root = clone.mail_root()
    if root is not None and clone.in_worktree():
        report.adopt_moved(root, clone)  # a moved worktree's queue, as status and the drain adopt it
    box = clone.own_box() if root is not None else None  # never created for nothing: a read
    data: Dict[str, Any] = {"as_of": utc_stamp(now), "box": {"key": clone.own_key.name, "path": clone.own_key.path},
                            "delivery": "off" if (root and root.is_off()) else "on", "messages": [], "hidden": {}}
    if box is None:
        return data
    report.settle(box)
    for e in entries(box, now, hidden=None if every else data["hidden"]):
        if every or e["state"] in SHOWN_BY_DEFAULT:
            data["messages"].append(e)
        else:
            data["hidden"][e["state"]] = data["hidden"].get(e["state"], 0) + 1
    return data


# -- finding one message (`read`) ------------------------------------------------
class Found:
    """Where one message is: its box, its directory (or "quarantine"), and whose box it is."""

    def __init__(self, box: "Box", msg_id: str, sub: str, own: bool,
                 quarantined: "Optional[Dict[str, Any]]" = None) -> None:
        self.box, self.msg_id, self.sub, self.own, self.quarantined = box, msg_id, sub, own, quarantined


def _candidates(box: "Box", idt: "ids.IdText") -> "List[Tuple[str, str, Optional[Dict[str, Any]]]]":
    """[(id, directory, quarantine record)] of every message of `box` that `idt` names
    (core/ids.py's rule)."""
    out: List[Tuple[str, str, Optional[Dict[str, Any]]]] = [
        (msg_id, sub, None) for msg_id, sub in _filed(box).items() if idt.names(msg_id)]
    filed = {c[0] for c in out}
    for q in records.quarantine_entries(box):
        if q["id"] and idt.names(q["id"]) and q["id"] not in filed:
            out.append((q["id"], "quarantine", q))
    return out


def _other_boxes(root: "MailRoot", own: "Optional[Box]") -> "List[Box]":
    out = []
    for b in root.boxes():
        if own is None or b.name != own.name:
            out.append(b)
    return out


def find(clone: "Clone", text: str) -> Found:
    """The message `text` names by core/ids.py's rule. This worktree's box first; then every
    other box of the clone. MailError when none or several (these listed)."""
    idt = ids.IdText(text, "inbox and status print them")
    root = clone.mail_root()
    if root is None:
        raise MailError("no mail in this clone yet")
    own = clone.own_box()
    for boxes, is_own in (([own] if own is not None else [], True), (_other_boxes(root, own), False)):
        found: List[Tuple[Box, Tuple[str, str, Optional[Dict[str, Any]]]]] = []
        for b in boxes:
            if is_own:
                report.settle(b)
            else:
                moves.repair(b)  # another worktree's box is only repaired, as status does
            found.extend((b, c) for c in _candidates(b, idt))
        exact = [f for f in found if f[1][0] == idt.text and not idt.end_only]
        if len(found) > 1 and len(exact) != 1:
            raise ids.ambiguous(idt, [c[0] for _b, c in found],
                                None if is_own else {c[0]: f"  (box {b.name})" for b, c in found})
        if found:
            b, (msg_id, sub, q) = exact[0] if exact else found[0]
            return Found(b, msg_id, sub, is_own, q)
    raise MailError(f"no message {field(text, 80)} in this worktree's box, nor in any other box of this clone")


def detail(found: Found) -> "Dict[str, Any]":
    """Everything about one message: its entry with the whole body (or, for a quarantined file,
    its bytes as they are), every receipt and display marker."""
    now = time.time()
    if found.quarantined is not None:
        e = _quarantined(found.quarantined, found.box)
        e["raw"] = records.read_quarantined(found.box, found.quarantined["file"], MAX_FILE_BYTES)
    else:
        e = describe(found.box, found.msg_id, found.sub, now, body=True, arrived=arrivals_of(found.box))
    e["own_box"] = found.own
    e["as_of"] = utc_stamp(now)
    return e
