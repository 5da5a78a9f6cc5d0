"""Moving a box's queued mail into another box: adoption after `git worktree move`, and
`git korus-mail forward` for a box that no worktree drains any more.

One message moves in four writes; a process killed between two of them leaves a state
the next reader completes (each gap is a named crash point):

    claim <id> in the source box          as a consume does; a live holder keeps it (try later)
    source forwarded/<id>.json            the decision, naming the destination box
    copy into the destination inbox       staged in tmp/, fsynced, renamed in: one link, complete
    unlink the source inbox entry         only the process whose unlink succeeds journals it

The id stays the same, so the sender's `status` follows forwarded/<id>.json from the
box its sent record names to the box that holds the message now. A decision once
recorded stands for the move it records: a repair, or a later forward, completes it to
the box it names; once the message comes back into that box, the record goes (it is
removed before the copy lands), so the next move decides afresh (docs/STORE.md).
Nothing here deletes a message that was not first placed in the destination.
"""

import os
import time

from git_korus_mail import crash
from git_korus_mail.store import wtident
from git_korus_mail.store import claims
from git_korus_mail import fastjson as json
from git_korus_mail.store.fsafe import NotRegular, TooLarge
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store.message import MAX_FILE_BYTES

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Optional

    from git_korus_mail.store.files import Box, MailRoot

MSG_SUFFIX = ".json"
FORWARDED = "forwarded"
WORKTREE_FILE = "worktree"
CLAIM_PATIENCE = 0.5  # seconds to wait for a live holder of a claim (usually a Stop finishing)
MAX_HOPS = 16         # forwarded/ records a reader follows before it gives up (a cycle, or junk)


def recorded_worktree(box: "Box") -> "Optional[str]":
    """The worktree identity a box records (wtident), None when it records none yet."""
    try:
        data, _ = box.dir.read_regular(WORKTREE_FILE, 4096)
    except (FileNotFoundError, NotRegular, TooLarge):
        return None
    return data.decode("utf-8", "replace").strip() or None


def write_worktree(box: "Box", ident: str) -> None:
    box.dir.write_replace(WORKTREE_FILE, (ident + "\n").encode("utf-8"), box.root.tmp)


def forward_record(box: "Box", msg_id: str) -> "Optional[dict[str, Any]]":
    """The source box's recorded decision for `msg_id` ({"box", "path", ...}), or None."""
    d = box.open_sub(FORWARDED)
    if d is None:
        return None
    rec = d.read_json(msg_id + MSG_SUFFIX)
    return rec if isinstance(rec, dict) and isinstance(rec.get("box"), str) else None


# -- one message ---------------------------------------------------------------------
def move_one(src: "Box", dst: "Box", msg_id: str, why: str) -> str:
    """Move one queued message from box `src` to box `dst` (`why`: "adopted" or "forwarded").

    Returns "moved", "gone" (not queued in src any more: consumed, expired or moved),
    "held" (a live process holds its claim) or "skipped" (not a regular file: the
    drain quarantines those where they are)."""
    owner = claims.me(why, root=src.root)
    got = src._claim(msg_id, owner, patience=CLAIM_PATIENCE)
    if got != "won":
        return got
    crash.point("forward:claimed")
    try:
        return _move_claimed(src, dst, msg_id, why)
    finally:
        src._release(msg_id, owner)


def finish(src: "Box", msg_id: str) -> bool:
    """Complete a move a dead process decided (its forwarded/ record exists). For repair."""
    rec = forward_record(src, msg_id)
    if rec is None:
        return False
    dst = src.root.box(rec["box"], create=True, path=rec.get("path"))
    assert dst is not None  # create=True: made, or MailError raised
    return move_one(src, dst, msg_id, rec.get("why") or "forwarded") == "moved"


def _move_claimed(src: "Box", dst: "Box", msg_id: str, why: str) -> str:
    name = msg_id + MSG_SUFFIX
    inbox = src.ensure_sub("inbox")
    if not inbox.exists(name):
        return "gone"
    if src.complete_decided(msg_id):
        return "gone"  # a consume or an expiry had decided it (receipt, or expired link): completed
    rec = forward_record(src, msg_id)
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
            src.ensure_sub(FORWARDED).create_staged(name, json.dumps(decision, sort_keys=True).encode(), src.root.tmp,
                                             "fwdrec", sync=True)
        except FileExistsError:
            pass  # there, but unreadable (we hold the claim, so no one races us): the move goes on here
        crash.point("forward:recorded")
    if not _has_trace(dst, name):
        _forget_departure(dst, name)
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
    d = box.open_sub(FORWARDED)
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


# -- a whole box -----------------------------------------------------------------------
def move_queue(src: "Box", dst: "Box", why: str) -> "dict[str, list[str]]":
    """Move every queued message of `src` into `dst`. Returns {"moved", "held", "skipped"} lists."""
    out: "dict[str, list[str]]" = {"moved": [], "held": [], "skipped": []}
    ids, _odd = src.inbox_ids()
    for msg_id in ids:
        result = move_one(src, dst, msg_id, why)
        if result in out:
            out[result].append(msg_id)
    return out


def _move_sent(src: "Box", dst: "Box") -> None:
    """The moved worktree's own sent records go with it, so its `status` still lists them."""
    sent = src.open_sub("sent")
    if sent is None:
        return
    target = None
    for name in sent.names():
        if name.startswith(".") or not name.endswith(MSG_SUFFIX):
            continue
        if target is None:
            target = dst.ensure_sub("sent")
        try:
            sent.rename_to(name, target, name)  # atomic: the record is in one box or the other
        except FileNotFoundError:
            continue


def sources(root: "MailRoot", ident: str, exclude: str) -> "list[str]":
    """Names of the other boxes that record the worktree identity `ident`."""
    if ident == wtident.NONE:
        return []
    out: "list[str]" = []
    for box in root.boxes():
        if box.name != exclude and recorded_worktree(box) == ident:
            out.append(box.name)
    return out


def adopt(root: "MailRoot", box: "Box", ident: str, names: "Optional[list[str]]" = None) -> bool:

    """Take over the queue of every older box of the same worktree. True when nothing is left
    behind (then the caller records the identity in `box`, and this is not tried again)."""
    complete = True
    for name in (names if names is not None else sources(root, ident, box.name)):
        src = root.box(name)
        if src is None:
            continue
        result = move_queue(src, box, "adopted")
        _move_sent(src, box)
        if result["held"]:
            complete = False  # a live claim holder: its message waits for a later event
            continue
        # the identity moves with the queue: if the old path is ever used again, its box adopts anew
        src.dir.unlink_quiet(WORKTREE_FILE)
        root.journal("box-adopted", box=box.name, source=name, moved=len(result["moved"]), worktree=ident)
    return complete
