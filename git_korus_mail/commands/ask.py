"""`ask`: queue a question for one worktree and wait for its answer (core/ask.py does the work).

Exit status: 0 answered (explicitly, or automatically with the recipient's final message);
2 no answer in time, or none can come soon (no session there can answer or be woken, or the
one shown the question stopped running): it arrives later as ordinary mail; 3 the question
ended unanswered (status failed or stopped); 1 an error, nothing asked."""

import os
import sys

from git_korus_mail import clients
from git_korus_mail.commands.args import Args
from git_korus_mail.core import ask, send, verdict
from git_korus_mail.commands.text import safe

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (issue 26)
if TYPE_CHECKING:
    from typing import IO, Any, Dict, List, Optional

    from git_korus_mail.core.clone import Clone

EXIT_TIMEOUT = 2
EXIT_UNANSWERED = 3

HOW = {"explicit": "an explicit reply", "automatic": "automatic: the recipient's final message of its run"}


class AskArgs(Args):
    __slots__ = ("to", "question", "timeout", "json")
    FIELDS = {"to": None, "question": None, "timeout": None, "json": False}
    to: str                         # one destination, as send addresses it
    question: "Optional[str]"       # the text; None or "-" reads stdin
    timeout: "Optional[int]"        # seconds; None: ask.DEFAULT_TIMEOUT
    json: bool


def parse_timeout(text: "Optional[str]") -> "Optional[int]":
    return None if text is None else ask.check_timeout(text)


def run(clone: "Clone", args: AskArgs, out: "IO[str]") -> int:
    timeout = ask.check_timeout(None if args.timeout is None else str(args.timeout))
    body = send.read_body(args.question)
    send.check_body(body)
    clients.check_writable(clone)
    session, sender_launch = clients.sender_of(os.environ)
    launch = clients.command_launch(os.environ)
    q = ask.ask(clone, args.to, body, timeout, session, launch.tag if launch is not None else None,
                roster=lambda: _sessions(clone),
                sender_launch=sender_launch)
    rec = ask.wait(q)
    if rec is None:
        line = (f"no answer to question {q.id} within {timeout}s; the answer will arrive later as ordinary "
                f"mail ({ask.LONGER})")
        seen = verdict.judge(q.target, q.id, q.msg.get("session"))  # delivered only on the drain's proof (docs/HOOKS.md)
        if args.json:
            import json  # only for --json: a plain run never pays for it
            out.write(json.dumps({"question": q.id, "status": "timeout", "timeout": timeout,
                                  "note": line, **seen}, indent=2) + "\n")
        else:
            out.write(line + "\n" + f"  the question: {seen['verdict']}, as of {seen['as_of']}: {seen['why']}\n")
        out.flush()
        return EXIT_TIMEOUT
    if rec.get("left_queued"):  # nobody there can answer soon: not waited out (core/ask.py)
        line = (f"question {q.id} is queued, and no answer can come soon: {safe(rec['how'])}; "
                f"the answer will arrive later as ordinary mail")
        seen = verdict.judge(q.target, q.id, q.msg.get("session"))
        if args.json:
            import json  # only for --json: a plain run never pays for it
            out.write(json.dumps({"question": q.id, "status": "queued", "reason": rec["how"], "note": line,
                                  **seen}, indent=2) + "\n")
        else:
            out.write(line + "\n" + f"  the question: {seen['verdict']}, as of {seen['as_of']}: {seen['why']}\n")
        out.flush()
        return EXIT_TIMEOUT
    if "message" not in rec:  # the question itself ended: dropped, expired, cancelled
        reason = (rec.get("detail") or {}).get("reason") if isinstance(rec.get("detail"), dict) else None
        line = f"status {rec['status']}: question {q.id} was not answered ({rec['how']}{': ' + safe(reason) if reason else ''})"
        import json  # only for --json: a plain run never pays for it
        out.write((json.dumps({"question": q.id, "status": rec["status"], "how": rec["how"]}, indent=2)
                   if args.json else line) + "\n")
        out.flush()
        return EXIT_UNANSWERED
    _write(out, q, rec, args.json)
    out.flush()  # only now is the answer the asker's: then its mail is marked delivered
    for w in ask.delivered(q, rec, session, launch):
        sys.stderr.write(f"git korus-mail: warning: {w}\n")
    return 0 if rec.get("status") in ("answered", "done") else EXIT_UNANSWERED


def _write(out: "IO[str]", q: ask.Question, rec: "Dict[str, Any]", as_json: bool) -> None:
    msg = rec["message"]
    by = rec.get("by") or {}
    if as_json:
        import json  # only for --json: a plain run never pays for it
        out.write(json.dumps({"question": q.id, "status": rec.get("status"), "how": rec.get("how"),
                              "by": by, "at": rec.get("at"), "answer_id": msg.get("id"),
                              "body": msg.get("body")}, indent=2) + "\n")
        return
    said: "Any" = rec.get("how")  # as the answer record on disk has it
    how = HOW.get(said, said)
    out.write(f"status {safe(rec.get('status'))} ({safe(how)}) · answer to question {safe(q.id)} · from (unverified) "
              f"{safe(by.get('path'))} · session {safe(by.get('session'))} · at {safe(rec.get('at'))}\n")
    for line in str(msg.get("body", "")).split("\n"):
        out.write(safe(line) + "\n")


def _sessions(clone: "Clone") -> "List[Dict[str, Any]]":
    """The sessions `who` lists, read only when a destination is a session name (core/roster.py
    and what it reads are imported then, not by every send: issue 26)."""
    from git_korus_mail.core import roster
    sessions: "List[Dict[str, Any]]" = roster.collect(clone, clients.sessions,
                                                      activity=clients.last_activity)["sessions"]
    return sessions
