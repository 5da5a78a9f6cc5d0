"""`reply`: answer a question by the id its rendering shows, or reply to any message in its thread."""

import os
import sys

from git_korus_mail import clients
from git_korus_mail.commands.args import Args
from git_korus_mail.core import reply, send
from git_korus_mail.commands.text import relative, safe

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (issue 26)
if TYPE_CHECKING:
    from typing import IO, Any, Dict, Optional

    from git_korus_mail.core.clone import Clone


class ReplyArgs(Args):
    __slots__ = ("id", "body", "json")
    FIELDS = {"id": None, "body": None, "json": False}
    id: str                         # the message answered
    body: "Optional[str]"           # the text; None or "-" reads stdin
    json: bool


def run(clone: "Clone", args: ReplyArgs, out: "IO[str]") -> int:
    body = send.read_body(args.body)
    send.check_body(body)
    clients.check_writable(clone)
    session, sender_launch = clients.sender_of(os.environ)
    ok, what = reply.reply(clone, args.id, body, session, clients.launch_tag(os.environ), sender_launch)
    if args.json:
        import json  # only for --json: a plain run never pays for it
        out.write(json.dumps({"ok": ok, **_public(what)}, indent=2) + "\n")
        return 0 if ok else 1
    if "question" in what:  # an answer record
        qid = what.get("question") or args.id  # the full id, whatever form of it was typed
        aid = what["message"]["id"]
        if ok:
            out.write(f"answered {safe(qid)} with\n  {safe(aid)} (status answered)\n")  # two ids: 2 lines
            return 0
        by = what.get("by") or {}
        sys.stderr.write(f"git korus-mail: not sent: question {safe(qid)} was already answered "
                         f"({safe(what.get('how'))}, status {safe(what.get('status'))}, by session "
                         f"{safe(by.get('session'))} at {safe(what.get('at'))})\n")
        return 1
    if ok:
        # to another clone: its path is a path there (docs/RELAY.md), named by label and worktree
        to = (f"{safe(what['remote'])}:{safe(what.get('name'))}" if what.get("remote")
              else relative(what['path'], os.getcwd()))
        out.write(f"replied {safe(what['id'])} -> {to}\n"
                  f"  in reply to {safe(what.get('in_reply_to') or args.id)}\n")
        return 0
    sys.stderr.write(f"git korus-mail: not queued: {safe(what.get('error'))}\n")
    return 1


def _public(what: "Dict[str, Any]") -> "Dict[str, Any]":
    if "question" in what:
        msg = what.get("message") or {}
        return {"question": what.get("question"), "answer_id": msg.get("id"), "status": what.get("status"),
                "how": what.get("how"), "by": what.get("by"), "at": what.get("at")}
    return what
