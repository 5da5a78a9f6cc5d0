"""A box's publication: Maildir's, a complete file in tmp/ linked into the inbox (docs/STORE.md),
and what a reader makes of a publication it finds half done (`linked_elsewhere`).
A function over a files.Box, imported where it is used, like records.py, moves.py and drops.py:
an event with an empty box publishes nothing and never loads this module (hot path).
"""

import os
import time

from git_korus_mail.errors import MailError
from git_korus_mail.store.layout import MSG_SUFFIX, UNCONSUMED, staging_name

PUBLISH_GRACE = 60  # seconds a half-published message (tmp link still present) is left alone

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Optional

    from git_korus_mail.store.files import Box
    from git_korus_mail.store.message import Message


def publish(box: "Box", msg: "Message", data: bytes, again: bool = False) -> None:
    """Maildir publication: complete file in tmp/, fsync, link (never rename-over) into the
    inbox, unlink tmp, fsync the inbox. A crash leaves at most a tmp file behind.

    `again`: the message may have been staged already by another publisher of the same
    bytes, one killed before its link (an answer, which whoever finds it missing publishes:
    store/answers.py). Its staging file then stands until tmp/ is swept, so this attempt
    stages under a name of its own."""
    tmp = box.root.tmp
    inbox = box.ensure_sub("inbox")
    from git_korus_mail import crash
    # named by the id alone (which holds 64 random bits), so a reader that meets the
    # message with two links can look its staging file up: see linked_elsewhere below
    tmp_name = staging_name(msg["id"])
    try:
        tmp.create_exclusive(tmp_name, data, sync=True)
    except FileExistsError:
        if not again:
            raise MailError(f"message id {msg['id']} already staged (clock or random source broken?)") from None
        # msg.<id>.<8 hex>: the form a reader of a half-done publish also looks up (_old_staging below)
        tmp_name = f"{tmp_name}.{os.urandom(4).hex()}"
        tmp.create_exclusive(tmp_name, data, sync=True)
    crash.point("send:tmp-written")
    try:
        tmp.link_to(tmp_name, inbox, msg["id"] + MSG_SUFFIX)
    except FileExistsError:
        tmp.unlink_quiet(tmp_name)
        raise MailError(f"message id {msg['id']} already queued (clock or random source broken?)") from None
    crash.point("send:linked")
    tmp.unlink_quiet(tmp_name)
    inbox.fsync()
    if box.has_watchers():  # a launch of this box armed a wake-up watcher once: wake it at once
        from git_korus_mail.store import watch
        try:
            watch.poke(box)
        except OSError:
            # the mail is queued and durable: a failed wake-up must not make the sender think it
            # failed (and send again); the watcher's own look finds it (docs/HOOKS.md)
            pass


# -- a publication found half done ------------------------------------------
def linked_elsewhere(box: "Box", msg_id: str, st: "os.stat_result") -> "Optional[str]":
    """Explain a message file with more than one link: our own half-finished move, or not.

    Returns "in-progress" (leave it), "publish-finished" (the other link was ours and is
    gone now, or we completed a dead sender's publication) or None (a foreign hard link:
    quarantine). No window: every link of ours is at a name derived from the id, and
    each is made before the inbox link it pairs with, so when none is found any more
    the inbox entry itself must have dropped to one link, unless a foreign link holds it."""
    from git_korus_mail.store.claims import CLAIM_SUFFIX  # a reader's path only: a send needs none of it
    same = (st.st_dev, st.st_ino)
    claiming = box.open_sub("claiming")
    if claiming is not None and claiming.exists(msg_id + CLAIM_SUFFIX):
        return "in-progress"
    other: "Optional[os.stat_result]"
    for sub in ("seen",) + UNCONSUMED:
        d = box.open_sub(sub)
        if d is None:
            continue
        try:
            other = d.lstat(msg_id + MSG_SUFFIX)
        except FileNotFoundError:
            continue
        if (other.st_dev, other.st_ino) == same:
            return "in-progress"
    tmp = box.root.tmp
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
    inbox = box.open_sub("inbox")
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
    return _old_staging(box, msg_id, same)


def _old_staging(box: "Box", msg_id: str, same: "tuple[int, int]") -> "Optional[str]":
    """A sender of an older version stages as tmp/msg.<id>.<8 hex>, and so does an answer's
    publisher that found the answer staged under its id by one killed before its link
    (publish.publish, `again`): neither publication may pass for an attack. A scan of tmp/, on
    this rare path only."""
    tmp = box.root.tmp
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
