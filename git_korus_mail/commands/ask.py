"""`ask`: queue a question for one worktree and wait for its answer (core/ask.py does the work).

Exit status: 0 answered (explicitly, or automatically with the recipient's final message);
2 no answer in time, or none can come soon (no session there can answer or be woken, or the
one shown the question stopped running): it arrives later as ordinary mail; 3 the question
ended unanswered (status failed or stopped); 1 an error, nothing asked."""

import os
import sys

from git_korus_mail import clients
from git_korus_mail.commands.args import Args
from git_korus_mail.commands.mailtext import stamp
from git_korus_mail.commands.text import safe, wrap
from git_korus_mail.core import ask, send, verdict

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (issue 26)
if TYPE_CHECKING:
    from typing import IO, Any, Dict, List, Mapping, Optional

    from git_korus_mail.core.clone import Clone

EXIT_TIMEOUT = 2
EXIT_UNANSWERED = 3

HOW = {"explicit": "an explicit reply", "automatic": "automatic: the recipient's final message of its run"}
EXIT_INTERRUPTED = 130  # as a shell reports a command ended by SIGINT

# How to wait longer, in the words of whoever runs the command (issue 25). Claude Code's Bash
# tool kills a command at its own timeout, 120 s unless the call asks up to 600 s
# (/work/shared/reference claude-code-hooks.md §12); Codex's shell tool has no such timeout:
# it yields after at most 30 s and the model polls the command with write_stdin
# (codex-hooks.md, "The shell tool"). A person at a terminal has neither.
LONGER = {
    "claude": ("to wait longer, give the Bash tool call a timeout (up to 600000 ms) and ask a shorter "
               "--timeout, e.g. timeout 600000 with --timeout=590"),
    "codex": ("to wait longer, ask with a longer --timeout: the shell tool has no timeout of its own; "
              "it yields while ask waits, and you poll it with write_stdin"),
}
LONGER_PERSON = "a longer --timeout waits longer; the answer comes as mail all the same (inbox shows it)"


def runner_of(sender_launch: "Optional[str]", session: "Optional[str]",
              environ: "Mapping[str, str]") -> "Optional[str]":
    """The client whose model runs this command (`claude`, `codex`), or None: a person or a
    script. Proved from the process tree when it can be (clients.sender_of), else the session
    the environment names (a sandbox in a pid namespace of its own)."""
    if sender_launch and not sender_launch.startswith("session:"):
        return sender_launch.split(":", 1)[0]
    if session:
        for client in clients.hook_protocols():
            if client.session_of(environ) == session:
                return client.NAME
    return None


def _at_terminal() -> bool:
    try:
        return os.isatty(2)
    except OSError:
        return False


class AskArgs(Args):
    __slots__ = ("to", "question", "timeout", "json", "again")
    FIELDS = {"to": None, "question": None, "timeout": None, "json": False, "again": None}
    to: "Optional[str]"             # one destination, as send addresses it (None with `again`)
    question: "Optional[str]"       # the text; None or "-" reads stdin
    timeout: "Optional[int]"        # seconds; None: ask.DEFAULT_TIMEOUT
    json: bool
    again: "Optional[str]"          # wait again for this question asked from here (any id form)


def parse_timeout(text: "Optional[str]") -> "Optional[int]":
    return None if text is None else ask.check_timeout(text)


def run(clone: "Clone", args: AskArgs, out: "IO[str]") -> int:
    timeout = ask.check_timeout(None if args.timeout is None else str(args.timeout))
    clients.check_writable(clone)
    session, sender_launch = clients.sender_of(os.environ)
    launch = clients.command_launch(os.environ)
    if args.again is not None:
        asked = _asked_across(clone, args.again)
        if asked is not None:  # a question asked of another clone (docs/RELAY.md)
            from git_korus_mail.commands import ask_across
            return ask_across.again(clone, asked, timeout, session, args.json, out)
        q = ask.again(clone, args.again, timeout, launch.tag if launch is not None else None)
    else:
        body = send.read_body(args.question)
        send.check_body(body)
        across = _across(clone, str(args.to))
        if across is not None:  # a worktree on another clone (docs/RELAY.md)
            from git_korus_mail.commands import ask_across
            return ask_across.run(clone, across, body, timeout, session, sender_launch, args.json, out)
        q = ask.ask(clone, str(args.to), body, timeout, session, launch.tag if launch is not None else None,
                    roster=lambda: _sessions(clone),
                    sender_launch=sender_launch)
    runner = runner_of(sender_launch, session, os.environ)
    short = ids_short(q.id)
    try:  # from the first word about it: a Ctrl-C read as soon as the line is out is caught here
        if runner is None and _at_terminal():  # a person: say what the silence is, and what Ctrl-C leaves
            sys.stderr.write(f"waiting up to {timeout}s for the answer to {short}; Ctrl-C stops "
                             f"waiting; the question stays queued\n")
            sys.stderr.flush()
        rec = ask.wait(q)
    except KeyboardInterrupt:
        return _interrupted(q, short, out)
    if rec is None:
        line = f"no answer to question {q.id} within {timeout}s; the answer will arrive later as ordinary mail"
        advice = f"{LONGER.get(runner or '', LONGER_PERSON)}; to wait again: git korus-mail ask --again={short}"
        seen = verdict.judge(q.target, q.id, q.msg.get("session"))  # delivered only on the drain's proof (docs/HOOKS.md)
        if args.json:
            import json  # only for --json: a plain run never pays for it
            out.write(json.dumps({"question": q.id, "status": "timeout", "timeout": timeout,
                                  "note": f"{line} ({advice})", **seen}, indent=2) + "\n")
        else:  # every line under 100 columns, the time in the person's format (issue 25)
            lines = wrap(line, indent=2) + wrap(f"  {advice}", indent=4) + wrap(
                f"  the question: {seen['verdict']}, as of {stamp(seen['as_of'])}: {seen['why']}", indent=4)
            out.write("\n".join(lines) + "\n")
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
        else:  # every line under 100 columns, the time in the person's format (issue 25)
            lines = wrap(line, indent=2) + wrap(
                f"  the question: {seen['verdict']}, as of {stamp(seen['as_of'])}: {seen['why']}", indent=4)
            out.write("\n".join(lines) + "\n")
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


def _across(clone: "Clone", dest: str) -> "Optional[Dict[str, Any]]":
    """The target on another clone `dest` names (as send resolves it), or None for a local one;
    MailError, nothing asked, when it names no box there."""
    if ":" not in dest and not dest.startswith("@"):
        return None
    from git_korus_mail.commands.send import _remote
    from git_korus_mail.errors import MailError
    remote, _local = _remote(clone, [dest])
    if not remote:
        return None
    if "error" in remote[0]:
        raise MailError(f"nothing asked: {remote[0]['error']}")
    return remote[0]


def _asked_across(clone: "Clone", text: str) -> "Optional[Dict[str, Any]]":
    """The sent record of the question `text` names when it was asked of another clone, else None
    (then core/ask.again finds it, or says there is none)."""
    from git_korus_mail.core import ids
    from git_korus_mail.errors import MailError
    from git_korus_mail.store import sent
    root = clone.mail_root()
    if root is None:
        return None
    own, shared = clone.own_box(), not clone.in_worktree()
    try:
        found = ids.one(ids.IdText(text, "status lists the questions asked from here"),
                        sent.ids(root, own, clone.own_key.path, shared=shared))
    except MailError:  # an ambiguous or bad id: core/ask.again says so in its words
        return None
    rec = sent.find(root, own, clone.own_key.path, shared, found) if found is not None else None
    if rec is None or not isinstance(rec.get("remote"), dict) or rec.get("kind") != "question":
        return None
    return rec


def ids_short(msg_id: str) -> str:
    """An id as the tool prints it to a person (`…0f3c9a21`): every command takes it (core/ids.py)."""
    return "…" + msg_id[-8:]


def _interrupted(q: ask.Question, short: str, out: "IO[str]") -> int:
    """Ctrl-C while waiting: the wait is closed, the question stays queued. Say its id, its state,
    and what to do next, in a few lines and never a traceback: git forwards the terminal's SIGINT
    to us too, so a second one must not break this report (it is ignored from here)."""
    from git_korus_mail.shell import on_sigint  # not `import signal`: every ask would load enum
    on_sigint("ignore")
    ask.abandon(q)
    seen = verdict.judge(q.target, q.id, q.msg.get("session"))
    out.flush()
    lines = [f"interrupted: question {short} stays {seen['verdict']} (as of {stamp(seen['as_of'])})"]
    lines += wrap(f"  {seen['why']}", indent=4)
    sys.stderr.write("\n" + "\n".join(lines) + "\n"
                     f"  to wait again: git korus-mail ask --again={short}\n"
                     f"  to withdraw it: git korus-mail cancel {short}\n"
                     f"  else its answer, when one comes, arrives here as mail (git korus-mail inbox)\n")
    sys.stderr.flush()
    return EXIT_INTERRUPTED


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
