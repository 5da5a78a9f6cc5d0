"""`status`'s view of questions: those this worktree asked and those it was asked.

A question's state, observed now: `answered` / `done` / `failed` / `stopped` (its answer
record says which, who answered and when, explicit or automatic), else the state of the
question itself: `queued`, `shown` (to a session, not answered yet), `expired` (nobody
answered in its lifetime)."""

from git_korus_mail.store import answers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from git_korus_mail.store.files import Box, MailRoot


def _answer(rec: "Optional[Dict[str, Any]]") -> "Optional[Dict[str, Any]]":
    if rec is None:
        return None
    by = rec.get("by") or {}
    return {"status": rec.get("status"), "how": rec.get("how"), "at": rec.get("at"),
            "by": by.get("path"), "session": by.get("session"), "answer_id": (rec.get("message") or {}).get("id")}


def _state(fate: "Dict[str, Any]", answer: "Optional[Dict[str, Any]]") -> str:
    if answer is not None:
        return str(answer.get("status"))
    state = str(fate.get("state"))
    return "shown" if state == "consumed" else state  # consumed without an answer: it was read


def collect(root: "MailRoot", box: "Optional[Box]", sent: "List[Dict[str, Any]]") -> "Dict[str, Any]":
    asked: "List[Dict[str, Any]]" = []
    for rec in sent:
        if rec.get("kind") != "question":
            continue
        target = root.box(str(rec.get("box")))
        answer = _answer(answers.answer_of(target, rec["id"]) if target is not None else None)
        asked.append({"id": rec["id"], "to": rec.get("path"), "sent_at": rec.get("sent_at"),
                      "state": _state(rec.get("fate") or {}, answer), "answer": answer})
    received: "List[Dict[str, Any]]" = []
    for q in (answers.asked(box) if box is not None else []):
        answer = _answer(q.get("answer"))
        received.append({"id": q["id"], "from": q.get("from"), "sent_at": q.get("sent_at"),
                         "answered": answer is not None, "answer": answer})
    return {"asked": asked, "received": received}

