"""A box's small records and their formats: receipts, claims as recorded, expiry notices,
quarantine reasons, an answer's publication, and each message's fate as the disk says it. Functions over a files.Box,
imported where they are used: an event with an empty box never loads this module (hot path)."""

import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.store import claims
from git_korus_mail.store.fsafe import SMALL_FILE, NotRegular, TooLarge
from git_korus_mail.store.layout import DROPPED, DROPS, FILED, MSG_SUFFIX, UNCONSUMED, WHY_SUFFIX, quarantine_name
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store.message import Invalid, id_time, valid_id

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Optional

    from git_korus_mail.store.files import Box

FORWARDED = "forwarded"  # box/<src>/forwarded/<id>.json: where a message of this box was moved (moves.forward)
PUBLISHED = "published"  # box/<asker>/published/<answer id>.json: this answer was put in this box once
PUBLISH_PURPOSE = "publish-answer"  # the purpose a publisher's claim names (see moves._repair_one)


# -- receipts, claims, notices: the records and their formats ----------------
def receipt(box: "Box", msg_id: str) -> "Optional[dict[str, Any]]":
    """The consume receipt of `msg_id`: None when there is none, {} when it exists but cannot
    be read (consumed all the same: its presence is the proof), else the record."""
    d = box.open_sub("receipts")
    name = msg_id + MSG_SUFFIX
    if d is None or not d.exists(name):
        return None
    rec = d.read_json(name)
    return rec if isinstance(rec, dict) else {}


def claim_names(box: "Box") -> "list[str]":
    """Every name in claiming/ (claims and a dead breaker's leftovers), sorted."""
    return sorted(box.names("claiming"))


def claim_count(box: "Box") -> int:
    return sum(1 for n in box.names("claiming") if n.endswith(claims.CLAIM_SUFFIX))


def quarantined_names(box: "Box") -> "list[str]":
    """The files moved aside (their `.why.json` records not counted), unsorted."""
    return [n for n in box.names("quarantine") if not n.endswith(WHY_SUFFIX) and not n.startswith(".")]


def has_claim(box: "Box", msg_id: str) -> bool:
    return box.has("claiming", msg_id + claims.CLAIM_SUFFIX)


def claim_owner(box: "Box", msg_id: str) -> "Optional[dict[str, Any]]":
    """The owner record of the claim on `msg_id`: None when unclaimed, {} when unreadable."""
    d = box.open_sub("claiming")
    return claims.read_owner(d, msg_id) if d is not None else None


def read_claim(box: "Box", msg_id: str) -> "Optional[bytes]":
    """The claim's raw bytes (what `release_claim_as_seen` compares against); None when the
    file cannot be read; FileNotFoundError when there is no claim."""
    d = box.open_sub("claiming")
    if d is None:
        raise FileNotFoundError(msg_id)
    try:
        data, _st = d.read_regular(msg_id + claims.CLAIM_SUFFIX, SMALL_FILE)
    except FileNotFoundError:
        raise
    except (OSError, NotRegular, TooLarge):
        return None
    return data


def release_claim_as_seen(box: "Box", msg_id: str, data: "Optional[bytes]") -> "Optional[bool]":
    """Remove the claim if it still holds `data` (see claims.release_as_seen)."""
    return claims.release_as_seen(box.ensure_sub("claiming"), msg_id, data)


def notices(box: "Box", limit: int = 1000) -> "tuple[list[dict[str, Any]], list[str]]":
    """Expiry notices waiting for this box's next opening show: ([record], [name]). Only
    names we write (`<id>.json`) count; each record's id is its file's name."""
    d = box.open_sub("notices")
    if d is None:
        return [], []
    out: "list[dict[str, Any]]" = []
    names: "list[str]" = []
    for name in sorted(d.names())[:limit]:
        if not (name.endswith(MSG_SUFFIX) and valid_id(name[:-len(MSG_SUFFIX)])):
            continue  # not a notice we wrote: its name is nobody's to put in the model's context
        rec = d.read_json(name)
        if isinstance(rec, dict):
            rec["id"] = name[:-len(MSG_SUFFIX)]  # the file's own name, a valid id
            out.append(rec)
            names.append(name)
    return out, names


def write_notice(box: "Box", msg_id: str, state: str) -> None:
    """Remember a message that left the inbox unread (`state`: expired, or dropped by the
    limits) so the recipient's next show tells them (docs/DESIGN.md R9: nobody was)."""
    sender = sent_at = None
    try:
        msg, _ = box.load(msg_id, state)
        sender = (msg.get("from") or {}).get("path")
        sent_at = msg.get("sent_at")
    except (OSError, Invalid, NotRegular, TooLarge):
        pass  # the notice is best-effort detail; the move itself stands
    note = {"id": msg_id, "from": sender, "sent_at": sent_at, f"{state}_at": utc_stamp(time.time())}
    if state == DROPPED:
        note["rule"] = (drop_reason(box, msg_id) or {}).get("rule")
    try:
        box.ensure_sub("notices").create_exclusive(msg_id + MSG_SUFFIX, json.dumps(note).encode(), sync=False)
    except FileExistsError:
        pass


def drop_reason(box: "Box", msg_id: str) -> "Optional[dict[str, Any]]":
    """drops/<id>.json: the limit that dropped `msg_id` and when; None when there is none."""
    d = box.open_sub(DROPS)
    rec = d.read_json(msg_id + MSG_SUFFIX) if d is not None else None
    return rec if isinstance(rec, dict) else None


# -- where a message was forwarded (moves.forward) ----------------------------
def forward_record(box: "Box", msg_id: str) -> "Optional[dict[str, Any]]":
    """The source box's recorded decision for `msg_id` ({"box", "path", ...}), or None."""
    d = box.open_sub(FORWARDED)
    if d is None:
        return None
    rec = d.read_json(msg_id + MSG_SUFFIX)
    return rec if isinstance(rec, dict) and isinstance(rec.get("box"), str) else None


# -- an answer's publication (store/answers.py) ------------------------------
def mark_published(box: "Box", aid: str, qid: "Any") -> None:
    """Record for good that answer `aid` was put in `box` (its asker's): no publish after this."""
    rec = {"id": aid, "question": qid, "at": utc_stamp(time.time())}
    try:
        box.ensure_sub(PUBLISHED).create_staged(aid + MSG_SUFFIX, json.dumps(rec, sort_keys=True).encode(),
                                                box.root.tmp, "published", sync=True)
    except FileExistsError:
        pass


def finish_dead_publisher(box: "Box", aid: str, qid: "Any") -> None:
    """A publisher died holding the answer's claim (its claim was just broken; the caller holds
    its own): when its link was made, record the publication it did not get to record. Here,
    not in answers.py, because a move's repair calls it (moves._repair_one)."""
    if not box.has(PUBLISHED, aid + MSG_SUFFIX) and fate(box, aid)[0] != "gone":
        mark_published(box, aid, qid)


# -- quarantine and fate ---------------------------------------------------
def quarantine(box: "Box", name: str, reason: str, sub: str = "inbox") -> "Optional[str]":
    """Move a non-message aside (without following or opening it) and record why.

    The file goes under a name we choose (its own may be as long as a name can be, or
    hold any bytes): `q-<time>-<random>`, with the original name kept, JSON-escaped,
    in `<target>.why.json`. Returns the target name, None when the file went meanwhile."""
    src = box.open_sub(sub)
    if src is None:
        return None  # no such directory: the file went meanwhile
    q = box.ensure_sub("quarantine")
    target = quarantine_name(time.time())
    try:
        src.rename_to(name, q, target)
    except FileNotFoundError:
        return None
    why = {"name": name, "from": sub, "reason": reason, "at": utc_stamp(time.time())}
    q.create_exclusive(target + WHY_SUFFIX, json.dumps(why, sort_keys=True, ensure_ascii=True).encode("ascii"),
                       sync=False)
    box.root.journal("quarantined", box=box.name, name=name, reason=reason)
    return target


def quarantine_reasons(box: "Box") -> "dict[str, str]":
    """{original file name: reason} from the quarantine's `.why.json` records (for reports)."""
    q = box.open_sub("quarantine")
    out: "dict[str, str]" = {}
    if q is None:
        return out
    for n in q.names():
        if not n.endswith(WHY_SUFFIX):
            continue
        why = q.read_json(n)
        if isinstance(why, dict) and isinstance(why.get("name"), str):
            out[why["name"]] = str(why.get("reason") or "no reason recorded")
    return out


def fate(box: "Box", msg_id: str) -> "tuple[str, Any]":
    """(state, detail) of one message as the disk says now: "consumed" (a receipt; detail:
    the session from it), "consumed-unmoved" (a receipt, still in the inbox: a move to
    finish), "queued", "expired", "cancelled", "dropped" (detail: its drops/ record, {}
    when unreadable) or "gone". Receipts are the truth, never the journal."""
    name = msg_id + MSG_SUFFIX
    queued = box.has("inbox", name)
    rec = receipt(box, msg_id)  # {} when unreadable: consumed all the same
    if rec is not None:
        return ("consumed-unmoved" if queued else "consumed"), rec.get("session")
    if queued:
        return "queued", None
    for state in UNCONSUMED:
        if box.has(state, name):
            return state, ((drop_reason(box, msg_id) or {}) if state == DROPPED else None)
    return "gone", None


# -- a person's view (inbox, read) ------------------------------------------
def ids_in(box: "Box", sub: str) -> "list[str]":
    """The ids of the messages filed in `sub` (one of layout.FILED), oldest first; a name
    that is no message id is left out (the drain quarantines those from the inbox)."""
    return sorted(n[:-len(MSG_SUFFIX)] for n in box.names(sub)
                  if n.endswith(MSG_SUFFIX) and valid_id(n[:-len(MSG_SUFFIX)]))


def filed_in(box: "Box", msg_id: str) -> "Optional[str]":
    """The directory of layout.FILED that holds `msg_id` (the last, for one caught between two
    links of a move: where the move goes), or None."""
    held = [sub for sub in FILED if box.has(sub, msg_id + MSG_SUFFIX)]
    return held[-1] if held else None


def quarantine_entries(box: "Box") -> "list[dict[str, Any]]":
    """Every quarantined file with its record: {"file": its name in quarantine/, "name": the
    name it had, "from": the directory, "reason", "at", "id": the message id its name
    gave, or None}. A file whose record is unreadable is listed with what is known."""
    q = box.open_sub("quarantine")
    if q is None:
        return []
    out: "list[dict[str, Any]]" = []
    for n in sorted(q.names()):
        if n.endswith(WHY_SUFFIX) or n.startswith("."):
            continue
        why = q.read_json(n + WHY_SUFFIX)
        why = why if isinstance(why, dict) else {}
        name = why.get("name") if isinstance(why.get("name"), str) else None
        stem = name[:-len(MSG_SUFFIX)] if name and name.endswith(MSG_SUFFIX) else None
        out.append({"file": n, "name": name, "from": why.get("from"), "at": why.get("at"),
                    "reason": str(why.get("reason") or "no reason recorded"),
                    "id": stem if valid_id(stem) else None})
    return out


def read_quarantined(box: "Box", file: str, limit: int) -> "Optional[bytes]":
    """The bytes of quarantine/<file> (as `quarantine_entries` names it), at most `limit`;
    None when it is gone, or no regular file of ours."""
    q = box.open_sub("quarantine")
    if q is None:
        return None
    try:
        return q.read_regular(file, limit)[0]
    except (OSError, NotRegular, TooLarge):
        return None


# -- reporting -------------------------------------------------------------
def oldest_unread_age(box: "Box", now: "Optional[float]" = None) -> "Optional[float]":
    """Seconds since the oldest queued message was sent, or, relayed from another clone, arrived
    here (store/arrivals.py: its id holds another machine's clock, days off or a wait in an outbox)."""
    ids, _ = box.inbox_ids()
    if not ids:
        return None
    now = time.time() if now is None else now
    try:
        if not box.has_arrivals():
            return now - id_time(ids[0])  # ids sort by their time: the first is the oldest
        from git_korus_mail.store.arrivals import Arrivals
        arrived = Arrivals(box)
        return now - min(_or_sent(arrived.time_of(i), i) for i in ids)
    except ValueError:
        return None


def _or_sent(arrived: "Optional[float]", msg_id: str) -> float:
    return id_time(msg_id) if arrived is None else arrived
