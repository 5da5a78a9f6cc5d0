"""`reply`: answer a question, or reply to any other message in its thread.

A question is answered through core/answer.py (its answer decided exclusively: an explicit
reply and the automatic answer race, and exactly one wins). Any other message gets a message
of kind `reply` in the same thread, to the worktree of its sender.
"""

from git_korus_mail.core import answer, ids, send
from git_korus_mail.core.render import field
from git_korus_mail.errors import MailError
from git_korus_mail.store import message, records
from git_korus_mail.store.files import NotRegular, TooLarge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.message import Message
    from git_korus_mail.store.shapes import Sender


def find(clone: "Clone", text: str) -> "Message":
    """The message `text` names (core/ids.py's rule) as this worktree received it (queued or consumed)."""
    idt = ids.IdText(text, "the id a rendered message shows")
    box = clone.own_box()
    filed = {} if box is None else {i: sub for sub in ("seen", "inbox") for i in records.ids_in(box, sub)}
    msg_id = ids.one(idt, sorted(filed))
    if box is None or msg_id is None:
        raise MailError(f"{field(text, 80)}: no such message in this worktree's box ({field(clone.own_key.path)})")
    try:
        msg, _ = box.load(msg_id, filed[msg_id])
        return msg
    except FileNotFoundError:
        raise MailError(f"{msg_id}: no longer in this worktree's box (moved while replying; try again)") from None
    except (OSError, message.Invalid, NotRegular, TooLarge) as exc:
        raise MailError(f"{msg_id}: cannot be read ({exc})") from None


def reply(clone: "Clone", msg_id: str, body: str, session: "Optional[str]",
          launch: "Optional[str]", sender_launch: "Optional[str]" = None) -> "Tuple[bool, Dict[str, Any]]":
    """(sent, what): for a question, (won, the answer record); for another message, (queued,
    the send result). `launch`: the client launch tag a question's answer records;
    `sender_launch`: the sending process as `from.launch` names it (clients.sender_of)."""
    original = find(clone, msg_id)
    own = clone.own_worktree()
    by: "Sender" = {"path": clone.own_key.path, "branch": own.branch if own else None, "session": session}
    root = clone.mail_root(create=True)
    box = clone.own_box(create=True)
    assert root is not None and box is not None
    if original.get("kind") == message.KIND_QUESTION:
        return answer.give(root, box, original, body, "answered", answer.EXPLICIT, by, launch=launch)
    if ":" in str((original.get("from") or {}).get("clone") or ""):
        return _reply_across(clone, original, body, session, sender_launch)
    sender = (original.get("from") or {}).get("path")
    if not sender:
        raise MailError(f"{original['id']}: its sender named no worktree to reply to")
    targets = send.resolve(clone, [sender])
    fields = {"in_reply_to": original["id"], "thread": message.thread_of(original)}
    results, _ = send.deliver(clone, targets, body, message.KIND_REPLY, message.DEFAULT_TTL_MINUTES,
                              sender_session=session, fields=fields, sender_launch=sender_launch)
    return bool(results[0]["ok"]), dict(results[0], in_reply_to=original["id"])  # the id in full


def _reply_across(clone: "Clone", original: "Message", body: str, session: "Optional[str]",
                  sender_launch: "Optional[str]") -> "Tuple[bool, Dict[str, Any]]":
    """A reply to mail from another clone goes back across, through this clone's outbox
    (docs/RELAY.md), to the box that sent it; never into a box here that shares its path. (A
    question from there is answered by answer.give, which sends its answer across the same way.)"""
    from git_korus_mail.relay import address  # no nats: the outbox and the directory are files
    target = address.sender_of(clone.common_dir, dict(original))
    if "error" in target:
        raise MailError(target["error"])
    root = clone.mail_root(create=True)
    fields = {"in_reply_to": original["id"], "thread": message.thread_of(original)}
    results = address.queue(clone.common_dir, root, [target], body, message.KIND_REPLY, message.DEFAULT_TTL_MINUTES,
                            send.sender_record(clone, session, sender_launch).copy(), session=None, wake=True,
                            own_box=clone.own_box(create=True), fields=fields)
    return True, dict(results[0], in_reply_to=original["id"])
