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
        if isinstance(rec.get("remote"), dict):
            answer = _answer_across(root, rec)
        else:
            target = root.box(str(rec.get("box")))
            answer = _answer(answers.answer_of(target, rec["id"]) if target is not None else None)
        row = {"id": rec["id"], "to": rec.get("path"), "sent_at": rec.get("sent_at"),
               "state": _state(rec.get("fate") or {}, answer), "answer": answer}
        if isinstance(rec.get("remote"), dict):  # on another clone: `to` is a path there
            row["to"] = f"{rec['remote'].get('label')}:{rec['remote'].get('name') or rec.get('path')}"
            row["remote"] = True
        asked.append(row)
    received: "List[Dict[str, Any]]" = []
    for q in (answers.asked(box) if box is not None else []):
        answer = _answer(q.get("answer"))
        received.append({"id": q["id"], "from": q.get("from"), "sent_at": q.get("sent_at"),
                         "answered": answer is not None, "answer": answer})
    return {"asked": asked, "received": received}



def _answer_across(root: "MailRoot", rec: "Dict[str, Any]") -> "Optional[Dict[str, Any]]":
    """A question asked of another clone: its answer was decided there; this clone's relay
    noted it on the question's relay record when it came back (docs/RELAY.md)."""
    import os

    from git_korus_mail.relay import local  # no nats: the relay's records
    noted = (local.read_entry(os.path.dirname(root.path), local.SENT, str(rec["id"])) or {}).get("answer")
    return dict(noted, how=None) if isinstance(noted, dict) else None
