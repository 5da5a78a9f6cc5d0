"""A box's publication: Maildir's, a complete file in tmp/ linked into the inbox (docs/STORE.md).
A method of files.Box found on first use, like records.py, moves.py and drops.py: an event with
an empty box publishes nothing (hot path).
"""

import os

from git_korus_mail.errors import MailError
from git_korus_mail.store.layout import MSG_SUFFIX, staging_name

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.store.fsafe import Dir
    from git_korus_mail.store.message import Message


class Publish:
    """Box.publish, over files.Box's directories."""

    if TYPE_CHECKING:  # what files.Box provides
        root: MailRoot

        def ensure_sub(self, name: str) -> Dir: ...

    def publish(self, msg: "Message", data: bytes, again: bool = False) -> None:
        """Maildir publication: complete file in tmp/, fsync, link (never rename-over) into the
        inbox, unlink tmp, fsync the inbox. A crash leaves at most a tmp file behind.

        `again`: the message may have been staged already by another publisher of the same
        bytes, one killed before its link (an answer, which whoever finds it missing publishes:
        store/answers.py). Its staging file then stands until tmp/ is swept, so this attempt
        stages under a name of its own."""
        tmp = self.root.tmp
        inbox = self.ensure_sub("inbox")
        from git_korus_mail import crash
        # named by the id alone (which holds 64 random bits), so a reader that meets the
        # message with two links can look its staging file up: see Moves.linked_elsewhere
        tmp_name = staging_name(msg["id"])
        try:
            tmp.create_exclusive(tmp_name, data, sync=True)
        except FileExistsError:
            if not again:
                raise MailError(f"message id {msg['id']} already staged (clock or random source broken?)") from None
            # msg.<id>.<8 hex>: the form a reader of a half-done publish also looks up (Moves._old_staging)
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
