"""A box's drop: a message the receiver's limits stopped (docs/STORE.md, core/limits.py) moves
to dropped/, never deleted, with drops/<id>.json saying which rule fired and when.

Decided under the message's claim like a consume, an expiry or a cancel (moves.py), so of a
drop and a consume exactly one happens. The reason record is written before the link into
dropped/, which is the decision: a crash after the link is completed by the next reader
(Moves.complete_decided); one before it leaves the message queued, to be judged again (the
judgment is deterministic, so it is dropped again, and the reason record already there is
kept). Mixed into files.Box on first use, like records.py and moves.py.
"""

import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.store import claims
from git_korus_mail.store.layout import DROPPED, DROPS, MSG_SUFFIX
from git_korus_mail.stamps import utc_stamp

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any

    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.store.fsafe import Dir
    from git_korus_mail.store.message import Message

DROP_PATIENCE = 0.5  # seconds a drop waits for another live mover of the same message (as a consume does)


class Drops:
    """Box.drop, over the claims and moves of files.Box (moves.py)."""

    if TYPE_CHECKING:  # what files.Box and its other mixins provide
        root: MailRoot
        name: str

        def ensure_sub(self, name: str) -> Dir: ...
        def has(self, sub: str, name: str) -> bool: ...
        def _claim(self, msg_id: str, owner: "dict[str, Any]", patience: float = 0.0) -> str: ...
        def _release(self, msg_id: str, owner: "dict[str, Any]") -> None: ...
        def _finish_move(self, msg_id: str, to: str) -> bool: ...
        def notices(self, limit: int = 1000) -> "tuple[list[dict[str, Any]], list[str]]": ...

    def drop(self, msg_id: str, msg: "Message", rule: str, detail: str) -> str:
        """Move a queued message to dropped/ because limit `rule` ("loop", "rate") fired;
        `detail` says how, for the person. Returns "dropped" (this call did), "consumed" (a
        receipt exists: it was delivered first), "held" (a live process holds its claim) or
        "gone" (moved by someone else: a concurrent drain that dropped it too, an expiry)."""
        name = msg_id + MSG_SUFFIX
        if not self.has("inbox", name):
            return "gone"
        owner = claims.me("drop", root=self.root)
        got = self._claim(msg_id, owner, patience=DROP_PATIENCE)
        if got != "won":
            return got
        try:
            if self.has("receipts", name):
                self._finish_move(msg_id, "seen")  # a consume decided first: it stands
                return "consumed"
            if not self.has("inbox", name):
                return "gone"
            sender = msg.get("from") or {}
            why = {"id": msg_id, "rule": rule, "detail": detail, "at": utc_stamp(time.time()),
                   "from": sender.get("path"), "sender_session": sender.get("session"), "pid": owner["pid"]}
            try:
                self.ensure_sub(DROPS).create_staged(name, json.dumps(why, sort_keys=True).encode(), self.root.tmp,
                                                     "receipt", sync=True)  # staged like a receipt: a decision record
            except FileExistsError:
                pass  # an earlier drop of it died before its link: its record stands
            if not self._finish_move(msg_id, DROPPED):
                return "gone"
            self.root.journal("dropped", id=msg_id, box=self.name, rule=rule, sender=sender.get("path"),
                              sender_session=sender.get("session"))
            return "dropped"
        finally:
            self._release(msg_id, owner)

    def drop_notices(self) -> "tuple[list[dict[str, Any]], list[str]]":
        """The notices of dropped mail not told yet: ([record], [name]) (records.notices, filtered)."""
        recs, names = self.notices()
        pairs = [(r, n) for r, n in zip(recs, names) if "dropped_at" in r]
        return [r for r, _ in pairs], [n for _, n in pairs]
