"""A box's moves: consume, expire, cancel, forward (a limit's drop is in drops.py), and the repair of
what a dead process left (a dead consumer's claim, a dead forwarder's decided move). A dead
sender's half-finished publication is publish.linked_elsewhere's.

Each move is decided under the message's claim and done as link then unlink, so a crash
between two steps leaves a state the next reader completes (see files.py, docs/STORE.md).
Functions over a files.Box, imported where they are used: an event with an empty box never
loads this module (hot path; files.Box.may_need_repair says when `repair` has work).
"""

import os
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail import crash
from git_korus_mail.store import claims, journal, records
from git_korus_mail.store.fsafe import NotRegular, TooLarge
from git_korus_mail.store.layout import CANCELLED, DROPPED, MSG_SUFFIX, UNCONSUMED
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store.message import MAX_FILE_BYTES, Invalid, expires_at

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    import os
    from typing import Any, Iterable, Optional

    from git_korus_mail.store.files import Box
    from git_korus_mail.store.message import Message
    from git_korus_mail.store.shapes import ClaimResult, ConsumeResult, LaunchRecord, Receipt, Sender, Unchecked

CONSUME_PATIENCE = 0.5  # seconds a Stop waits for another live consumer of the same message
FORWARD_PATIENCE = 0.5  # seconds a forward waits for a live holder of a claim (usually a Stop finishing)
_FAMILY = {"seen": "consume", "expired": "expire", CANCELLED: "cancel", DROPPED: "drop"}  # crash steps of each move


# -- consume -----------------------------------------------------------
def consume(box: "Box", msg_id: str, session: str, observation: "Unchecked",
            launch: "Optional[LaunchRecord]" = None) -> "ConsumeResult":
    """Consume a message this session's launch was shown (`launch`: its record, for the
    receipt; see store/launch.py). Returns one of:
    "consumed" (we did), "gone" (already consumed or expired by someone), "held" (a live
    process holds its claim: try again at a later Stop)."""
    if not box.has("inbox", msg_id + MSG_SUFFIX):
        return "gone"
    owner = claims.me("consume", session, box.root)
    got = claim(box, msg_id, owner, patience=CONSUME_PATIENCE)
    if got != "won":
        return got
    crash.point("consume:claimed")
    try:
        if not box.has("inbox", msg_id + MSG_SUFFIX):
            return "gone"
        now = time.time()
        receipt: "Receipt" = {
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
            box.ensure_sub("receipts").create_staged(msg_id + MSG_SUFFIX, json.dumps(receipt, sort_keys=True).encode(),
                                               box.root.tmp, "receipt", sync=True, mtime=now)
        except FileExistsError:
            # an interrupted consume (or, with claims bypassed, one still finishing):
            # complete it; whoever's unlink takes the message out of the inbox journals it
            if finish_move(box, msg_id, "seen"):
                _journal_repaired_consume(box, msg_id)
            return "gone"
        crash.point("consume:receipt")
        if finish_move(box, msg_id, "seen"):
            box.root.journal("consumed", id=msg_id, box=box.name, session=session,
                             launch=launch["tag"] if launch is not None else None,
                             shown_at=observation.get("at") if isinstance(observation, dict) else None)
    finally:
        release(box, msg_id, owner)
    crash.point("consume:released")
    return "consumed"


def finish_move(box: "Box", msg_id: str, to: str) -> bool:
    """inbox -> seen|expired|cancelled by link then unlink; idempotent, so a repair may call it again.

    True only for the call whose unlink took the message out of the inbox: only one can,
    so journaling on it records each move once, however many processes complete it."""
    inbox = box.ensure_sub("inbox")
    target = box.ensure_sub(to)
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
        records.write_notice(box, msg_id, to)  # records.py: told at the recipient's next show
    removed = inbox.unlink_quiet(name)
    crash.point(f"{family}:unlinked-inbox")
    target.fsync()
    inbox.fsync()
    return removed


def claim(box: "Box", msg_id: str, owner: "dict[str, Any]", patience: float = 0.0,
          queued: bool = True) -> "ClaimResult":
    """"won" or "held" (or "gone" once the message is no longer queued, when `queued`; an
    answer's publisher claims an id before it is, store/answers.py). Undone by `release`. A
    live holder is waited for up to `patience` seconds (it is usually another session's Stop
    finishing the same message), then we cede: a false refusal leaves the message queued, a
    false win would deliver it twice."""
    claiming = box.ensure_sub("claiming")
    deadline = time.monotonic() + patience
    pause = 0.005
    while True:
        result, holder = claims.acquire(box.root.tmp, claiming, msg_id, owner)
        if result == "won":
            return "won"
        # False: the claim now is a live one, or the lock is busy: wait like for a live holder
        broke = claims.break_dead(claiming, msg_id, holder) if (
            holder is not None and claims.owner_is_dead(holder, box.root)) else False
        if broke:
            box.root.journal("claim-broken", id=msg_id, box=box.name, owner_pid=(holder or {}).get("pid"),
                             owner_session=(holder or {}).get("session"))
            _repair_one(box, msg_id, holder)
        elif broke is None:
            pass  # another removed it first: try again at once
        elif time.monotonic() >= deadline:
            return "held"
        else:
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        if queued and not box.has("inbox", msg_id + MSG_SUFFIX):
            return "gone"


def release(box: "Box", msg_id: str, owner: "dict[str, Any]") -> None:
    """Remove our claim — only if it is still ours (a broken-and-reclaimed one is not)."""
    claims.release_own(box.ensure_sub("claiming"), msg_id, owner)


# -- expire --------------------------------------------------------------
def expire(box: "Box", msg_id: str, msg: "Optional[Message]" = None) -> bool:
    """Move a message past its expiry to expired/ (claimed like a consume). True when moved."""
    owner = claims.me("expire", root=box.root)
    if claim(box, msg_id, owner) != "won":
        return False
    crash.point("expire:claimed")
    try:
        if not box.has("inbox", msg_id + MSG_SUFFIX):
            return False
        if box.has("receipts", msg_id + MSG_SUFFIX):
            finish_move(box, msg_id, "seen")  # consumed, its move interrupted: not expired
            return False
        if not finish_move(box, msg_id, "expired"):
            return False
        sender: "Sender" = (msg.get("from") if msg is not None else None) or {}
        box.root.journal("expired", id=msg_id, box=box.name, sender=sender.get("path"))
        return True
    finally:
        release(box, msg_id, owner)


# -- cancel --------------------------------------------------------------
def cancel(box: "Box", msg_id: str, by: "Optional[str]" = None) -> str:
    """Withdraw a queued message (the sender's `cancel`). Claimed and decided like a consume, so of
    a cancel and a consume of one message exactly one happens. Returns "cancelled", "consumed" (a
    receipt exists: too late), "held" (a live claim: try again) or "gone" (expired, forwarded...)."""
    name = msg_id + MSG_SUFFIX
    if not box.has("inbox", name):
        return "consumed" if box.has("receipts", name) else "gone"
    owner = claims.me("cancel", root=box.root)
    got = claim(box, msg_id, owner, patience=CONSUME_PATIENCE)
    if got != "won":
        return "consumed" if got == "gone" and box.has("receipts", name) else got
    crash.point("cancel:claimed")
    try:
        if box.has("receipts", name):
            finish_move(box, msg_id, "seen")  # a consume decided, its move interrupted: too late
            return "consumed"
        if not box.has("inbox", name) or not finish_move(box, msg_id, CANCELLED):
            return "consumed" if box.has("receipts", name) else "gone"
        box.root.journal("cancelled", id=msg_id, box=box.name, by=by)
        return "cancelled"
    finally:
        release(box, msg_id, owner)


def expire_due(box: "Box", now: "Optional[float]" = None, ids: "Optional[Iterable[str]]" = None) -> "list[str]":
    """Expire every due message (or those among `ids`). Returns the ids moved."""
    now = time.time() if now is None else now
    moved: "list[str]" = []
    for msg_id in (ids if ids is not None else box.inbox_ids()[0]):
        try:
            msg, _st = box.load(msg_id)
        except (OSError, Invalid, NotRegular, TooLarge):
            continue  # gone meanwhile, or invalid: the drain quarantines those
        if expires_at(msg) <= now and expire(box, msg_id, msg):
            moved.append(msg_id)
    return moved


# -- repair --------------------------------------------------------------
def repair(box: "Box") -> int:
    """Finish what crashed processes left half-done. Proportional to claims, not to the inbox."""
    claiming = box.open_sub("claiming")
    if claiming is None:
        return 0
    fixed = 0
    for name in claiming.names():
        if name.endswith(claims.CLAIM_SUFFIX):
            msg_id = name[:-len(claims.CLAIM_SUFFIX)]
            holder = claims.read_owner(claiming, msg_id)
            if holder is None or not claims.owner_is_dead(holder, box.root):
                continue
            if claims.break_dead(claiming, msg_id, holder):
                box.root.journal("claim-broken", id=msg_id, box=box.name, owner_pid=holder.get("pid"),
                                 owner_session=holder.get("session"))
                _repair_one(box, msg_id, holder)
                fixed += 1
        elif ".claim.broken-" in name:
            # a breaker died after renaming: the file holds the dead owner it judged
            try:
                data, _ = claiming.read_regular(name, 64 * 1024)
            except (OSError, NotRegular, TooLarge):
                continue
            # Only for a breaker that died, and only by the one process whose unlink takes the
            # file: a live breaker repairs for itself, and two repairers would journal twice.
            if (claims.owner_is_dead(claims.parse_owner(data), box.root) and not claims.breaker_may_be_alive(name)
                    and claiming.unlink_quiet(name)):
                _repair_one(box, name.split(".claim.broken-", 1)[0])  # what the breaker left undone
                fixed += 1
    return fixed


def finish_released(box: "Box", msg_id: str) -> str:
    """After a person released a claim (`release`): complete the move its owner had decided, if
    any. Returns the message's state now: "queued", "consumed", one of UNCONSUMED, or "gone"."""
    _repair_one(box, msg_id)
    name = msg_id + MSG_SUFFIX
    if box.has("inbox", name):
        return "queued"
    if box.has("receipts", name):
        return "consumed"
    return next((state for state in UNCONSUMED if box.has(state, name)), "gone")


def _repair_one(box: "Box", msg_id: str, holder: "Any" = None) -> None:
    """After a dead owner's claim is gone: complete its move if it had decided one.

    Done under a claim of our own, like every other move: a repairer without one could
    find the journal line missing while a live consumer sits between its unlink and its
    line, and add a second (the chaos test saw it). Holding the claim, every other mover
    is either done, its line written before it let go, or dead. When a live process
    holds the message, it finishes the move itself, or a later repair does."""
    name = msg_id + MSG_SUFFIX
    owner = claims.me("repair", root=box.root)
    if claims.acquire(box.root.tmp, box.ensure_sub("claiming"), msg_id, owner)[0] != "won":
        return
    try:
        if isinstance(holder, dict) and holder.get("purpose") == records.PUBLISH_PURPOSE:
            records.finish_dead_publisher(box, msg_id, None)  # an answer's publisher died holding its claim
        if not box.has("inbox", name):
            _journal_lost_line(box, msg_id)
            return
        if complete_decided(box, msg_id):
            return
    finally:
        release(box, msg_id, owner)
    forwarded = box.open_sub("forwarded")
    if forwarded is not None and forwarded.exists(name):
        _finish_forward(box, msg_id)  # a dead forwarder decided a move: finish it


def complete_decided(box: "Box", msg_id: str) -> bool:
    """Finish a consume (its receipt exists) or an expiry (its expired link exists) that a
    process decided and did not complete. True when one was decided."""
    name = msg_id + MSG_SUFFIX
    if box.has("receipts", name):
        # the consumer died before its journal line (it writes it after the move)
        if finish_move(box, msg_id, "seen"):
            _journal_repaired_consume(box, msg_id)
        return True
    for to in UNCONSUMED:  # each state's journal event bears its name
        if box.has(to, name):
            if finish_move(box, msg_id, to):
                box.root.journal(to, id=msg_id, box=box.name, repaired=True)
            return True
    return False


def _journal_lost_line(box: "Box", msg_id: str) -> None:
    """The dead owner finished its move and died before its journal line: add the line,
    marked repaired, unless it is there after all (it may have died after writing it).
    The journal is history; the receipt and the links were the truth all along."""
    name = msg_id + MSG_SUFFIX
    receipts = box.open_sub("receipts")
    if receipts is not None and receipts.exists(name):
        if not _journaled(box, "consumed", msg_id):
            _journal_repaired_consume(box, msg_id)
        return
    for to in UNCONSUMED:
        if box.has(to, name) and not _journaled(box, to, msg_id):
            box.root.journal(to, id=msg_id, box=box.name, repaired=True)


def _journaled(box: "Box", event: str, msg_id: str) -> bool:
    try:
        return journal.has(box.root.dir, event, msg_id)
    except OSError:
        return True  # an unreadable journal: cannot tell, so add nothing (never a double line)


def _journal_repaired_consume(box: "Box", msg_id: str) -> None:
    """Journal a consume that a dead process decided (its receipt names the session)."""
    session = (records.receipt(box, msg_id) or {}).get("session")  # unreadable: the line just lacks it
    box.root.journal("consumed", id=msg_id, box=box.name, session=session, repaired=True)


# -- forward: one queued message into another box ---------------------------------
def forward(src: "Box", dst: "Box", msg_id: str, why: str) -> str:
    """Move one queued message from box `src` to box `dst` (`why`: "adopted" or "forwarded").

    Returns "moved", "gone" (not queued in src any more: consumed, expired or moved),
    "held" (a live process holds its claim) or "skipped" (not a regular file: the
    drain quarantines those where they are)."""
    owner = claims.me(why, root=src.root)
    got = claim(src, msg_id, owner, patience=FORWARD_PATIENCE)
    if got != "won":
        return got
    crash.point("forward:claimed")
    try:
        return _forward_claimed(src, dst, msg_id, why)
    finally:
        release(src, msg_id, owner)


def _finish_forward(src: "Box", msg_id: str) -> bool:
    """Complete a move a dead process decided (its forwarded/ record exists). For repair."""
    rec = records.forward_record(src, msg_id)
    if rec is None:
        return False
    dst = src.root.box(rec["box"], create=True, path=rec.get("path"))
    assert dst is not None  # create=True: made, or MailError raised
    return forward(src, dst, msg_id, rec.get("why") or "forwarded") == "moved"


def _forward_claimed(src: "Box", dst: "Box", msg_id: str, why: str) -> str:
    name = msg_id + MSG_SUFFIX
    inbox = src.ensure_sub("inbox")
    if not inbox.exists(name):
        return "gone"
    if complete_decided(src, msg_id):
        return "gone"  # a consume or an expiry had decided it (receipt, or expired link): completed
    rec = records.forward_record(src, msg_id)
    if rec is not None and rec["box"] != dst.name:
        first = src.root.box(rec["box"], create=True, path=rec.get("path"))  # an unfinished decision stands
        assert first is not None  # create=True: made, or MailError raised
        dst = first
    try:
        data, _ = inbox.read_regular(name, MAX_FILE_BYTES)
    except (NotRegular, TooLarge):
        return "skipped"
    except FileNotFoundError:
        return "gone"
    if rec is None:
        decision = {"id": msg_id, "box": dst.name, "path": dst.recorded_path(), "from": src.name, "why": why,
                    "at": utc_stamp(time.time())}
        try:
            src.ensure_sub(records.FORWARDED).create_staged(name, json.dumps(decision, sort_keys=True).encode(), src.root.tmp,
                                             "fwdrec", sync=True)
        except FileExistsError:
            pass  # there, but unreadable (we hold the claim, so no one races us): the move goes on here
        crash.point("forward:recorded")
    if not _has_trace(dst, name):
        _forget_departure(dst, name)
        if src.has_arrivals():  # relayed mail: its arrival goes with it, before it is queued there
            from git_korus_mail.store import arrivals
            arrivals.carry(src, dst, msg_id)
        _place(dst, name, data)
    crash.point("forward:copied")
    removed = inbox.unlink_quiet(name)
    crash.point("forward:unlinked")
    if removed:
        src.root.journal(why, id=msg_id, box=dst.name, source=src.name)
    inbox.fsync()
    return "moved"


def _has_trace(box: "Box", name: str) -> bool:
    """The destination holds the message already, in any state: never place it twice."""
    for sub in ("inbox", "seen", "expired", "receipts"):
        d = box.open_sub(sub)
        if d is not None and d.exists(name):
            return True
    return False


def _forget_departure(box: "Box", name: str) -> None:
    """The message comes (back) into `box`: a forwarded/ record there stood only for the move
    that took it out of `box` before, which is complete (`box` holds no trace of it), so it must
    not steer the next move (a stale record sent b->c->b->d mail to c). Removed before the copy
    lands: no reader ever sees the message queued here beside a record of its old departure,
    and a crash in between leaves the source's own record, which the repair completes."""
    d = box.open_sub(records.FORWARDED)
    if d is not None:
        d.unlink_quiet(name)


def _place(box: "Box", name: str, data: bytes) -> None:
    """A complete copy into the inbox with one link (a second link reads as foreign)."""
    tmp = box.root.tmp
    staged = f"fwd.{name}.{os.getpid()}.{os.urandom(4).hex()}"
    tmp.create_exclusive(staged, data, sync=True)
    inbox = box.ensure_sub("inbox")
    try:
        tmp.rename_to(staged, inbox, name)
    except BaseException:
        tmp.unlink_quiet(staged)
        raise
    inbox.fsync()
