"""A box's drop: a message the receiver's limits stopped (docs/STORE.md, core/limits.py) moves
to dropped/, never deleted, with drops/<id>.json saying which rule fired and when.

Decided under the message's claim like a consume, an expiry or a cancel (moves.py), so of a
drop and a consume exactly one happens. The reason record is written before the link into
dropped/, which is the decision: a crash after the link is completed by the next reader
(moves.complete_decided); one before it leaves the message queued, to be judged again (the
judgment is deterministic, so it is dropped again, and the reason record already there is
kept). Functions over a files.Box, imported where they are used, like records.py and moves.py.

"Drop" in the store means this move alone: a display marker is removed (markers.unmark), a
claim released (moves.release), a notice cleared.
"""

import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.store import claims, moves, records
from git_korus_mail.store.layout import DROPPED, DROPS, MSG_SUFFIX
from git_korus_mail.stamps import utc_stamp

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any

    from git_korus_mail.store.files import Box
    from git_korus_mail.store.message import Message

DROP_PATIENCE = 0.5  # seconds a drop waits for another live mover of the same message (as a consume does)


def drop(box: "Box", msg_id: str, msg: "Message", rule: str, detail: str) -> str:
    """Move a queued message to dropped/ because limit `rule` ("loop", "rate") fired;
    `detail` says how, for the person. Returns "dropped" (this call did), "consumed" (a
    receipt exists: it was delivered first), "held" (a live process holds its claim) or
    "gone" (moved by someone else: a concurrent drain that dropped it too, an expiry)."""
    name = msg_id + MSG_SUFFIX
    if not box.has("inbox", name):
        return "gone"
    owner = claims.me("drop", root=box.root)
    got = moves.claim(box, msg_id, owner, patience=DROP_PATIENCE)
    if got != "won":
        return got
    try:
        if box.has("receipts", name):
            moves.finish_move(box, msg_id, "seen")  # a consume decided first: it stands
            return "consumed"
        if not box.has("inbox", name):
            return "gone"
        sender = msg.get("from") or {}
        why = {"id": msg_id, "rule": rule, "detail": detail, "at": utc_stamp(time.time()),
               "from": sender.get("path"), "sender_session": sender.get("session"), "pid": owner["pid"]}
        try:
            box.ensure_sub(DROPS).create_staged(name, json.dumps(why, sort_keys=True).encode(), box.root.tmp,
                                                "receipt", sync=True)  # staged like a receipt: a decision record
        except FileExistsError:
            pass  # an earlier drop of it died before its link: its record stands
        if not moves.finish_move(box, msg_id, DROPPED):
            return "gone"
        box.root.journal("dropped", id=msg_id, box=box.name, rule=rule, sender=sender.get("path"),
                         sender_session=sender.get("session"))
        return "dropped"
    finally:
        moves.release(box, msg_id, owner)


def drop_notices(box: "Box") -> "tuple[list[dict[str, Any]], list[str]]":
    """The notices of dropped mail not told yet: ([record], [name]) (records.notices, filtered)."""
    recs, names = records.notices(box)
    pairs = [(r, n) for r, n in zip(recs, names) if "dropped_at" in r]
    return [r for r, _ in pairs], [n for _, n in pairs]
