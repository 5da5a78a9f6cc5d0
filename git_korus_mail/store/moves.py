"""A box's moves: consume, expire, cancel (a drop is in drops.py), and the repair of what a dead process left
(a dead consumer's claim, a dead sender's half-finished publication: `linked_elsewhere`).

Each move is decided under the message's claim and done as link then unlink, so a crash
between two steps leaves a state the next reader completes (see files.py, docs/STORE.md).
Mixed into files.Box on the first use of one of its methods (Box.__getattr__: an event with an
empty box never loads this module); kept apart so each module has one job.
"""

import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail import crash
from git_korus_mail.store import claims, journal
from git_korus_mail.store.fsafe import NotRegular, TooLarge
from git_korus_mail.store.layout import CANCELLED, DROPPED, MSG_SUFFIX, UNCONSUMED, staging_name
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store.message import Invalid, expires_at

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    import os
    from typing import Any, Iterable, Optional, Tuple

    from git_korus_mail.store.files import Box, MailRoot
    from git_korus_mail.store.fsafe import Dir
    from git_korus_mail.store.message import Message

CONSUME_PATIENCE = 0.5  # seconds a Stop waits for another live consumer of the same message
PUBLISH_GRACE = 60  # seconds a half-published message (tmp link still present) is left alone
_FAMILY = {"seen": "consume", "expired": "expire", CANCELLED: "cancel", DROPPED: "drop"}  # crash steps of each move


class Moves:
    """consume / expire / cancel / repair, over the reads and records of files.Box."""

    if TYPE_CHECKING:  # what files.Box, which this is mixed into, provides
        root: MailRoot
        name: str

        def open_sub(self, name: str) -> "Optional[Dir]": ...
        def ensure_sub(self, name: str) -> Dir: ...
        def has(self, sub: str, name: str) -> bool: ...
        def names(self, sub: str) -> "list[str]": ...
        def inbox_ids(self) -> "Tuple[list[str], list[str]]": ...
        def load(self, msg_id: str, sub: str = "inbox") -> "Tuple[Message, os.stat_result]": ...
        def receipt(self, msg_id: str) -> "Optional[dict[str, Any]]": ...
        def _write_notice(self, msg_id: str, state: str) -> None: ...

    # -- consume -----------------------------------------------------------
    def consume(self, msg_id: str, session: str, observation: "dict[str, Any]",
                launch: "Optional[dict[str, Any]]" = None) -> str:
        """Consume a message this session's launch was shown (`launch`: its record, for the
        receipt; see store/launch.py). Returns one of:
        "consumed" (we did), "gone" (already consumed or expired by someone), "held" (a live
        process holds its claim: try again at a later Stop)."""
        if not self.has("inbox", msg_id + MSG_SUFFIX):
            return "gone"
        owner = claims.me("consume", session, self.root)
        got = self._claim(msg_id, owner, patience=CONSUME_PATIENCE)
        if got != "won":
            return got
        crash.point("consume:claimed")
        try:
            if not self.has("inbox", msg_id + MSG_SUFFIX):
                return "gone"
            now = time.time()
            receipt = {
                "id": msg_id,
                "session": session,
                "launch": launch,
                "consumed_at": utc_stamp(now),
                "observed": observation,
                "pid": owner["pid"],
            }
            try:
                # its mtime is the consume time by this process's clock, which retention compares
                # with its own: the file system's clock may differ (a faked clock; docs/STORE.md)
                self.ensure_sub("receipts").create_staged(msg_id + MSG_SUFFIX, json.dumps(receipt, sort_keys=True).encode(),
                                                   self.root.tmp, "receipt", sync=True, mtime=now)
            except FileExistsError:
                # an interrupted consume (or, with claims bypassed, one still finishing):
                # complete it; whoever's unlink takes the message out of the inbox journals it
                if self._finish_move(msg_id, "seen"):
                    self._journal_repaired_consume(msg_id)
                return "gone"
            crash.point("consume:receipt")
            if self._finish_move(msg_id, "seen"):
                self.root.journal("consumed", id=msg_id, box=self.name, session=session,
                                  launch=(launch or {}).get("tag"),
                                  shown_at=observation.get("at") if isinstance(observation, dict) else None)
        finally:
            self._release(msg_id, owner)
        crash.point("consume:released")
        return "consumed"

    def _finish_move(self, msg_id: str, to: str) -> bool:
        """inbox -> seen|expired|cancelled by link then unlink; idempotent, so a repair may call it again.

        True only for the call whose unlink took the message out of the inbox: only one can,
        so journaling on it records each move once, however many processes complete it."""
        inbox = self.ensure_sub("inbox")
        target = self.ensure_sub(to)
        name = msg_id + MSG_SUFFIX
        try:
            # the store's own stamp of the move, set before the link so no final state ever holds the
            # message without it: retention keeps mail its days from here (store/retention.py), not
            # from its expiry, which a clock stepped forward had put long past
            inbox.set_mtime(name, time.time())
        except OSError:
            pass  # gone (the link below says so), or not ours to stamp: its ctime still dates the move
        try:
            inbox.link_to(name, target, name)
        except FileExistsError:
            pass
        except FileNotFoundError:
            return False
        family = _FAMILY.get(to, to)
        crash.point(f"{family}:linked{'-seen' if to == 'seen' else ''}")
        if to in ("expired", DROPPED):
            self._write_notice(msg_id, to)  # records.py: told at the recipient's next show
        removed = inbox.unlink_quiet(name)
        crash.point(f"{family}:unlinked-inbox")
        target.fsync()
        inbox.fsync()
        return removed

    def claim_id(self, msg_id: str, owner: "dict[str, Any]", patience: float = 0.0) -> str:
        """"won" or "held": the claim on an id that need not be queued (an answer's publisher
        claims it before it is; store/answers.py). Release it with `release_id`."""
        return self._claim(msg_id, owner, patience, queued=False)

    def release_id(self, msg_id: str, owner: "dict[str, Any]") -> None:
        self._release(msg_id, owner)

    def _claim(self, msg_id: str, owner: "dict[str, Any]", patience: float = 0.0, queued: bool = True) -> str:
        """"won" or "held" (or "gone" once the message is no longer queued, when `queued`). A
        live holder is waited for up to `patience` seconds (it is usually another session's Stop
        finishing the same message), then we cede: a false refusal leaves the message queued, a
        false win would deliver it twice."""
        claiming = self.ensure_sub("claiming")
        deadline = time.monotonic() + patience
        pause = 0.005
        while True:
            result, holder = claims.acquire(self.root.tmp, claiming, msg_id, owner)
            if result == "won":
                return "won"
            # False: the claim now is a live one, or the lock is busy: wait like for a live holder
            broke = claims.break_dead(claiming, msg_id, holder) if (
                holder is not None and claims.owner_is_dead(holder, self.root)) else False
            if broke:
                self.root.journal("claim-broken", id=msg_id, box=self.name, owner_pid=(holder or {}).get("pid"),
                                  owner_session=(holder or {}).get("session"))
                self._repair_one(msg_id, holder)
            elif broke is None:
                pass  # another removed it first: try again at once
            elif time.monotonic() >= deadline:
                return "held"
            else:
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            if queued and not self.has("inbox", msg_id + MSG_SUFFIX):
                return "gone"

    def _release(self, msg_id: str, owner: "dict[str, Any]") -> None:
        """Drop our claim — only if it is still ours (a broken-and-reclaimed one is not)."""
        claims.release_own(self.ensure_sub("claiming"), msg_id, owner)

    # -- expire --------------------------------------------------------------
    def expire(self, msg_id: str, msg: "Optional[Message]" = None) -> bool:
        """Move a message past its expiry to expired/ (claimed like a consume). True when moved."""
        owner = claims.me("expire", root=self.root)
        if self._claim(msg_id, owner) != "won":
            return False
        crash.point("expire:claimed")
        try:
            if not self.has("inbox", msg_id + MSG_SUFFIX):
                return False
            if self.has("receipts", msg_id + MSG_SUFFIX):
                self._finish_move(msg_id, "seen")  # consumed, its move interrupted: not expired
                return False
            if not self._finish_move(msg_id, "expired"):
                return False
            sender = (msg or {}).get("from") or {}
            self.root.journal("expired", id=msg_id, box=self.name, sender=sender.get("path"))
            return True
        finally:
            self._release(msg_id, owner)

    # -- cancel --------------------------------------------------------------
    def cancel(self, msg_id: str, by: "Optional[str]" = None) -> str:
        """Withdraw a queued message (the sender's `cancel`). Claimed and decided like a consume, so of
        a cancel and a consume of one message exactly one happens. Returns "cancelled", "consumed" (a
        receipt exists: too late), "held" (a live claim: try again) or "gone" (expired, forwarded...)."""
        name = msg_id + MSG_SUFFIX
        if not self.has("inbox", name):
            return "consumed" if self.has("receipts", name) else "gone"
        owner = claims.me("cancel", root=self.root)
        got = self._claim(msg_id, owner, patience=CONSUME_PATIENCE)
        if got != "won":
            return "consumed" if got == "gone" and self.has("receipts", name) else got
        crash.point("cancel:claimed")
        try:
            if self.has("receipts", name):
                self._finish_move(msg_id, "seen")  # a consume decided, its move interrupted: too late
                return "consumed"
            if not self.has("inbox", name) or not self._finish_move(msg_id, CANCELLED):
                return "consumed" if self.has("receipts", name) else "gone"
            self.root.journal("cancelled", id=msg_id, box=self.name, by=by)
            return "cancelled"
        finally:
            self._release(msg_id, owner)

    def expire_due(self, now: "Optional[float]" = None, ids: "Optional[Iterable[str]]" = None) -> "list[str]":
        """Expire every due message (or those among `ids`). Returns the ids moved."""
        now = time.time() if now is None else now
        moved: "list[str]" = []
        for msg_id in (ids if ids is not None else self.inbox_ids()[0]):
            try:
                msg, _st = self.load(msg_id)
            except (OSError, Invalid, NotRegular, TooLarge):
                continue  # gone meanwhile, or invalid: the drain quarantines those
            if expires_at(msg) <= now and self.expire(msg_id, msg):
                moved.append(msg_id)
        return moved

    # -- repair --------------------------------------------------------------
    def repair(self) -> int:
        """Finish what crashed processes left half-done. Proportional to claims, not to the inbox."""
        claiming = self.open_sub("claiming")
        if claiming is None:
            return 0
        fixed = 0
        for name in claiming.names():
            if name.endswith(claims.CLAIM_SUFFIX):
                msg_id = name[:-len(claims.CLAIM_SUFFIX)]
                holder = claims.read_owner(claiming, msg_id)
                if holder is None or not claims.owner_is_dead(holder, self.root):
                    continue
                if claims.break_dead(claiming, msg_id, holder):
                    self.root.journal("claim-broken", id=msg_id, box=self.name, owner_pid=holder.get("pid"),
                                      owner_session=holder.get("session"))
                    self._repair_one(msg_id, holder)
                    fixed += 1
            elif ".claim.broken-" in name:
                # a breaker died after renaming: the file holds the dead owner it judged
                try:
                    data, _ = claiming.read_regular(name, 64 * 1024)
                except (OSError, NotRegular, TooLarge):
                    continue
                # Only for a breaker that died, and only by the one process whose unlink takes the
                # file: a live breaker repairs for itself, and two repairers would journal twice.
                if (claims.owner_is_dead(claims.parse_owner(data), self.root) and not claims.breaker_may_be_alive(name)
                        and claiming.unlink_quiet(name)):
                    self._repair_one(name.split(".claim.broken-", 1)[0])  # what the breaker left undone
                    fixed += 1
        return fixed

    def linked_elsewhere(self, msg_id: str, st: "os.stat_result") -> "Optional[str]":
        """Explain a message file with more than one link: our own half-finished move, or not.

        Returns "in-progress" (leave it), "publish-finished" (the other link was ours and is
        gone now, or we completed a dead sender's publication) or None (a foreign hard link:
        quarantine). No window: every link of ours is at a name derived from the id, and
        each is made before the inbox link it pairs with, so when none is found any more
        the inbox entry itself must have dropped to one link, unless a foreign link holds it."""
        same = (st.st_dev, st.st_ino)
        claiming = self.open_sub("claiming")
        if claiming is not None and claiming.exists(msg_id + claims.CLAIM_SUFFIX):
            return "in-progress"
        other: "Optional[os.stat_result]"
        for sub in ("seen",) + UNCONSUMED:
            d = self.open_sub(sub)
            if d is None:
                continue
            try:
                other = d.lstat(msg_id + MSG_SUFFIX)
            except FileNotFoundError:
                continue
            if (other.st_dev, other.st_ino) == same:
                return "in-progress"
        tmp = self.root.tmp
        try:
            other = tmp.lstat(staging_name(msg_id))
        except FileNotFoundError:
            other = None
        if other is not None and (other.st_dev, other.st_ino) == same:
            if time.time() - other.st_ctime < PUBLISH_GRACE:
                return "in-progress"
            tmp.unlink_quiet(staging_name(msg_id))  # the sender died after linking: finish its publish
            return "publish-finished"
        # none of our links is there now: look again at the inbox entry, which the sender's
        # unlink of its staging file (or a finished move) may have left with one link
        inbox = self.open_sub("inbox")
        try:
            if inbox is None:
                raise FileNotFoundError(msg_id)
            now = inbox.lstat(msg_id + MSG_SUFFIX)
        except FileNotFoundError:
            return "in-progress"  # consumed or expired meanwhile
        if (now.st_dev, now.st_ino) != same:
            return "in-progress"  # replaced since it was read: the next event reads it afresh
        if now.st_nlink == 1:
            return "publish-finished"
        return self._old_staging(msg_id, same)

    def _old_staging(self, msg_id: str, same: "tuple[int, int]") -> "Optional[str]":
        """A sender of an older version stages as tmp/msg.<id>.<8 hex>, and so does an answer's
        publisher that found the answer staged under its id by one killed before its link
        (Box.publish, `again`): neither publication may pass for an attack. A scan of tmp/, on
        this rare path only."""
        tmp = self.root.tmp
        for name in tmp.names():
            if not name.startswith(staging_name(msg_id) + "."):
                continue
            try:
                other = tmp.lstat(name)
            except FileNotFoundError:
                continue
            if (other.st_dev, other.st_ino) == same:
                if time.time() - other.st_ctime < PUBLISH_GRACE:
                    return "in-progress"
                tmp.unlink_quiet(name)
                return "publish-finished"
        return None

    def finish_released(self, msg_id: str) -> str:
        """After a person released a claim (`release`): complete the move its owner had decided, if
        any. Returns the message's state now: "queued", "consumed", one of UNCONSUMED, or "gone"."""
        self._repair_one(msg_id)
        name = msg_id + MSG_SUFFIX
        if self.has("inbox", name):
            return "queued"
        if self.has("receipts", name):
            return "consumed"
        return next((state for state in UNCONSUMED if self.has(state, name)), "gone")

    def _repair_one(self, msg_id: str, holder: "Any" = None) -> None:
        """After a dead owner's claim is gone: complete its move if it had decided one.

        Done under a claim of our own, like every other move: a repairer without one could
        find the journal line missing while a live consumer sits between its unlink and its
        line, and add a second (the chaos test saw it). Holding the claim, every other mover
        is either done, its line written before it let go, or dead. When a live process
        holds the message, it finishes the move itself, or a later repair does."""
        name = msg_id + MSG_SUFFIX
        owner = claims.me("repair", root=self.root)
        if claims.acquire(self.root.tmp, self.ensure_sub("claiming"), msg_id, owner)[0] != "won":
            return
        try:
            if isinstance(holder, dict) and holder.get("purpose") == "publish-answer":
                from typing import cast  # this rare path only: typing stays off the hot path

                from git_korus_mail.store import answers  # an answer's publisher died holding its claim
                answers.finish_dead_publisher(cast("Box", self), msg_id, None)
            if not self.has("inbox", name):
                self._journal_lost_line(msg_id)
                return
            if self.complete_decided(msg_id):
                return
        finally:
            self._release(msg_id, owner)
        forwarded = self.open_sub("forwarded")
        if forwarded is not None and forwarded.exists(name):
            from typing import cast  # this rare path only: typing stays off the hot path

            from git_korus_mail.store import forwarding  # a dead forwarder decided a move: finish it
            forwarding.finish(cast("Box", self), msg_id)  # Moves is only ever mixed into files.Box

    def complete_decided(self, msg_id: str) -> bool:
        """Finish a consume (its receipt exists) or an expiry (its expired link exists) that a
        process decided and did not complete. True when one was decided."""
        name = msg_id + MSG_SUFFIX
        if self.has("receipts", name):
            # the consumer died before its journal line (it writes it after the move)
            if self._finish_move(msg_id, "seen"):
                self._journal_repaired_consume(msg_id)
            return True
        for to in UNCONSUMED:  # each state's journal event bears its name
            if self.has(to, name):
                if self._finish_move(msg_id, to):
                    self.root.journal(to, id=msg_id, box=self.name, repaired=True)
                return True
        return False

    def _journal_lost_line(self, msg_id: str) -> None:
        """The dead owner finished its move and died before its journal line: add the line,
        marked repaired, unless it is there after all (it may have died after writing it).
        The journal is history; the receipt and the links were the truth all along."""
        name = msg_id + MSG_SUFFIX
        receipts = self.open_sub("receipts")
        if receipts is not None and receipts.exists(name):
            if not self._journaled("consumed", msg_id):
                self._journal_repaired_consume(msg_id)
            return
        for to in UNCONSUMED:
            if self.has(to, name) and not self._journaled(to, msg_id):
                self.root.journal(to, id=msg_id, box=self.name, repaired=True)

    def _journaled(self, event: str, msg_id: str) -> bool:
        try:
            return journal.has(self.root.dir, event, msg_id)
        except OSError:
            return True  # an unreadable journal: cannot tell, so add nothing (never a double line)

    def _journal_repaired_consume(self, msg_id: str) -> None:
        """Journal a consume that a dead process decided (its receipt names the session)."""
        session = (self.receipt(msg_id) or {}).get("session")  # unreadable: the line just lacks it
        self.root.journal("consumed", id=msg_id, box=self.name, session=session, repaired=True)
