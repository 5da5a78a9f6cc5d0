"""Answering a question: the one way an answer is made, by `reply` and by the drain alike.

An answer is decided by an exclusive record in the asked box (store/answers.py), then
published as a message of kind `answer` into the asker's box, where a waiting `ask` takes it
and a later drain shows it otherwise. Exactly one answer per question: the first record wins,
whoever writes it (docs/CONTRACT.md, "Questions and answers").

The drain's part: at the end of a run (the consume phase) every question this launch was shown
and nobody answered is answered with the run's final text (status `done`); at a failed run or
the end of the session with `failed`; at the start of a run after one that never reached its
end (the user interrupted it) with `stopped`. Only questions marked shown by *this* launch are
answered: a question never shown stays queued for whoever reads the box next.
"""

import os
import time

from git_korus_mail.core import keys
from git_korus_mail.errors import MailError
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store import answers, message
from git_korus_mail.store.files import NotRegular, TooLarge
from git_korus_mail.store.layout import valid_session

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.core.drain_context import DrainContext
    from git_korus_mail.store.files import Box, MailRoot
    from git_korus_mail.store.message import Message
    from git_korus_mail.store.shapes import AnswerStatus, Sender

EXPLICIT, AUTOMATIC = "explicit", "automatic"
NO_FINAL_TEXT = "(the run ended without a final message)"
STOPPED_TEXT = ("(the recipient's run was interrupted before it ended; what it had written so far "
                "cannot be known here)")
FAILED_RUN_TEXT = "(the recipient's run ended in an error before it answered)"
ENDED_TEXT = "(the recipient's session ended before it answered)"


def fit(body: str) -> str:
    """A body within the message limit: a final text can be longer than any note."""
    raw = body.encode("utf-8", "surrogatepass")
    if len(raw) <= message.MAX_BODY_BYTES:
        return body
    note = "\n[answer cut to the 32 KiB message limit]"
    keep = raw[:message.MAX_BODY_BYTES - len(note.encode())]
    return keep.decode("utf-8", "ignore") + note


def build(question: "Message", body: str, status: "AnswerStatus", by: "Sender",
          kind: str = message.KIND_ANSWER, across: "Optional[Dict[str, Any]]" = None) -> "Message":
    """The answer (or reply) message to `question`, addressed to its sender's worktree, for its
    sender's session only when it named one. `across`: the sender's box on another clone
    (relay/address.sender_of), for a question that came from there."""
    sender = question.get("from") or {}
    path = str(sender.get("path") or "")
    key = keys.key_for(path) if path and across is None else None
    to_path, to_key = (across["path"], across["key"]) if across else (key.path if key else path, key.name if key else "")
    session = sender.get("session")
    msg = message.build(fit(body), to_path, to_key, by, kind=kind,
                        session=session if valid_session(session) else None,
                        in_reply_to=question["id"], thread=message.thread_of(question),
                        status=status if kind == message.KIND_ANSWER else None)
    return msg


def give(root: "MailRoot", box: "Box", question: "Message", body: str, status: "AnswerStatus", how: str,
         by: "Sender", launch: "Optional[str]" = None) -> "Tuple[bool, Dict[str, Any]]":
    """Answer `question` (queued or consumed in `box`, the asked one). Returns (won, record):
    won is False when another answer was decided first, and the record is then that one's.
    Either way the decided answer is made sure to be in the asker's box."""
    across = _across(root, question)
    msg = build(question, body, status, by, across=across)
    qid = str(question["id"])
    rec: "Dict[str, Any]" = {"question": qid, "status": status, "how": how, "at": utc_stamp(time.time()),
                             "by": {"path": by.get("path"), "session": by.get("session"), "launch": launch},
                             "message": msg}
    if across is not None:
        rec["across"] = {k: across[k] for k in ("clone", "label", "name")}
    prior = answers.decide(box, qid, rec)
    won = prior is None
    if not won:
        if not prior:
            return False, {}
        rec = prior
    try:
        publish(root, rec)
    except (OSError, MailError) as exc:
        root.journal_faults.append(f"answer to {qid} decided but not yet delivered ({exc}); "
                                   f"the asker's ask or the next drain delivers it")
    if won:
        root.journal("failed" if status == "failed" else "answered", id=qid, box=box.name,
                     answer=msg["id"], status=status, how=how, session=by.get("session"))
    return won, rec


def _across(root: "MailRoot", question: "Message") -> "Optional[Dict[str, Any]]":
    """The asker's box on another clone, for a question that came from there (its `from.clone`
    is set by the relay that received it, docs/RELAY.md); None for a local question. MailError
    when that box is not in this clone's directory: nothing is decided then."""
    if ":" not in str((question.get("from") or {}).get("clone") or ""):
        return None
    from git_korus_mail.relay import address  # no nats: the directory and the outbox are files
    target = address.sender_of(os.path.dirname(root.path), dict(question))
    if "error" in target:
        raise MailError(str(target["error"]))
    return target


def publish(root: "MailRoot", rec: "Dict[str, Any]") -> None:
    """The decided answer into the asker's box: here through the store (answers.publish_answer,
    once ever), or for an asker on another clone into this clone's relay outbox, which carries
    it across once (its id is the message's: the receiving relay never puts it in twice)."""
    if not isinstance(rec.get("across"), dict):
        answers.publish_answer(root, rec)
        return
    from git_korus_mail.relay import address  # no nats; never starts a relay from a hook
    address.queue_built(os.path.dirname(root.path), root, rec["across"], rec["message"])


# -- the drain's part ------------------------------------------------------------
def _by(ctx: "DrainContext") -> "Sender":
    return {"path": ctx.key.path, "branch": None, "session": ctx.session}


def _question(box: "Box", qid: str) -> "Optional[Message]":
    for sub in ("inbox", "seen"):
        try:
            msg, _ = box.load(qid, sub)
        except (OSError, message.Invalid, NotRegular, TooLarge):  # this copy is unreadable: try the next
            continue
        return msg if msg.get("kind") == message.KIND_QUESTION else None
    return None


def answer_shown(ctx: "DrainContext", qid: str, status: "AnswerStatus", body: str) -> None:
    """Answer one question this launch was shown, unless it is answered already; a decided
    answer that never reached the asker's box is delivered now (the repair of a killed answerer)."""
    box = ctx.box
    existing = answers.answer_of(box, qid)
    if existing is not None:
        try:
            publish(ctx.root, existing)
        except (OSError, MailError) as exc:
            ctx.faults.append(f"answer to {qid} not delivered ({exc})")
        return
    question = _question(box, qid)
    if question is None:
        return
    try:
        give(ctx.root, box, question, body, status, AUTOMATIC, _by(ctx), launch=ctx.launch.tag)
    except (OSError, MailError) as exc:
        ctx.faults.append(f"question {qid} not answered automatically ({exc}); it stays open")


def at_run_end(ctx: "DrainContext", qid: str) -> None:
    final = ctx.facts.final_text
    text = final if final and final.strip() else NO_FINAL_TEXT
    answer_shown(ctx, qid, "done", text)


def close_open(ctx: "DrainContext", status: "AnswerStatus", body: str) -> "List[str]":
    """Answer every question this launch was shown and nobody answered (a failed run, the end of
    the session, an interrupted run); returns their ids."""
    if not ctx.launch.known:
        return []
    shown = ctx.markers()
    done: "List[str]" = []
    for name in shown.shown_ids():
        try:
            obs = shown.read(name)
        except (OSError, ValueError, NotRegular, TooLarge):  # an unreadable marker proves nothing
            continue
        if isinstance(obs, dict) and obs.get("question") and obs.get("launch") == ctx.launch.tag:
            answer_shown(ctx, name, status, body)
            done.append(name)
    return done
