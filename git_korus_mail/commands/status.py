"""`status`: this worktree's box, the fate of the mail it sent, recent journal events.

The text is a few blocks, each with one as-of time and lines under 100 columns (commands/text.py);
`--json` keeps every field and every stamp. To add a block, add a function to SECTIONS; to say
a new state of sent mail or a new journal event in a word, add it to FATE_TEXT or EVENT_TEXT.
"""

import json
import os
from dataclasses import dataclass

from git_korus_mail import ui
from git_korus_mail.core import report
from git_korus_mail.commands.text import (block, clock, counts, fit_path, more, relative, retention, row, safe, session,
                                         wrapped)
from git_korus_mail.stamps import human_age, parse_stamp

TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, Any, Callable, Dict, List, Tuple

    from git_korus_mail.core.clone import Clone

    Report = Dict[str, Any]  # report.collect_status's dict, as --json prints it (docs/CONTRACT.md)
    Record = Dict[str, Any]  # one sent message's fate, or one journal event, as the report has it


@dataclass(frozen=True)
class StatusArgs:
    all: bool = False    # every message sent from here (else the latest report.SENT_SHOWN)
    clone: bool = False  # the journal events of every worktree (else this worktree's)
    json: bool = False   # machine-readable


def run(clone: "Clone", args: StatusArgs, out: "IO[str]") -> int:
    from git_korus_mail.commands import reserve
    d = report.collect_status(clone, sent_limit=None if args.all else report.SENT_SHOWN,
                              whole_clone=args.clone)
    d["reservations"] = [r.record() for r in reserve.held_now(clone)]  # issue 29
    if args.json:
        out.write(json.dumps(d, indent=2) + "\n")
        return 0
    for section in SECTIONS:
        section(d, out)
    return 0


def ago(stamp: object, now: object) -> str:
    """`3m ago` from a stamp read from disk, or the stamp made safe when it is none."""
    try:
        return f"{human_age(parse_stamp(now) - parse_stamp(stamp))} ago"
    except (ValueError, TypeError):
        return f"at {safe(stamp)}"


# -- the blocks --------------------------------------------------------------------------------
def _header(d: "Report", out: "IO[str]") -> None:
    out.write(fit_path("status of ", safe(d['this']['path']), f"  (as of {d['as_of'][:10]} {d['as_of'][11:19]}Z)") + "\n")
    out.write(fit_path("  mail root ", safe(d['mail_root']), "") + "\n")
    row(out, f"box {safe(d['this']['key'])} · delivery ", d["delivery"], colour=ui.bold)
    row(out, retention(d['retention']['days']))
    if d["retention"]["problem"]:
        wrapped(out, "problem: " + safe(d["retention"]["problem"]))


def _box(d: "Report", out: "IO[str]") -> None:
    block(out, "this worktree's box", d["as_of"])
    if not d["box"]:
        row(out, "no mail has been sent here yet")
        return
    row(out, counts(d["box"]["counts"], " · "))
    for ev, last in sorted(d["box"]["last_drain"].items()):
        row(out, f"last {safe(ev)} drain {clock(last['at'], d['as_of'])}, session {session(last['session'])}")


def _sent(d: "Report", out: "IO[str]") -> None:
    if not d["sent"]:
        return
    total, shown = d["sent_total"], len(d["sent"])
    count = f"{shown} of {total}" if total > shown else f"{total}"
    block(out, f"sent from this worktree: {count}, newest first", d["sent_as_of"])
    for rec in d["sent"]:
        f = rec["fate"]
        text = FATE_TEXT.get(f["state"])
        state, detail = text(f, d["sent_as_of"]) if text else (safe(f["state"]), "")
        if f.get("moved_to"):
            detail += f" (moved to box {safe(f['moved_to'][-1])})"
        remote = rec.get("remote")
        # mail for another clone: its path is a directory on that machine, never one here
        to = (f"{safe(remote.get('label'))}:{safe(remote.get('name') or rec.get('path'))}" if isinstance(remote, dict)
              else relative(rec.get('path'), d['this']['path']))
        row(out, f"{safe(rec['id'])}  to {to}  ", state, detail, colour=ui.bold)
    if total > shown:
        n = total - shown
        row(out, more(n, "message" if n == 1 else "messages"))


def _events(d: "Report", out: "IO[str]") -> None:
    if not d["journal"]:
        return
    whose = "every worktree" if d["journal_scope"] == "clone" else "this worktree"
    block(out, f"events of {whose}, latest {len(d['journal'])}", d["as_of"])
    for ev in d["journal"]:
        name = ev.get("event")
        text = EVENT_TEXT.get(name, _event_fields)
        where = f"[{safe(str(ev.get('box') or '-').rsplit('-', 1)[0])}] " if d["journal_scope"] == "clone" else ""
        row(out, f"{clock(ev.get('at'), d['as_of'])}  {safe(name):<9} {where}{text(ev, d['this']['path'])}")


def _questions(d: "Report", out: "IO[str]") -> None:
    """Questions asked from here and questions asked of here (core/questions.py), each with its
    state or its answer: how (explicit / automatic), by whom, when."""
    q, now = d["questions"], d["as_of"]
    if q["asked"]:
        block(out, "questions asked from this worktree, newest first", now)
        for a in q["asked"]:
            ans = a["answer"]
            remote = bool(a.get("remote"))

            def there(p: object, remote: bool = remote) -> str:
                # asked of another clone: its paths are paths there (docs/RELAY.md)
                return safe(p) if remote else relative(p, d['this']['path'])
            detail = (f" {safe(ans.get('how') or 'answer')} by {there(ans.get('by'))}"
                      f" {clock(ans.get('at'), now)}" if ans else "")
            row(out, f"{safe(a['id'])}  to {there(a.get('to'))}  ", safe(a["state"]), detail,
                colour=ui.bold)
    if q["received"]:
        block(out, "questions this worktree was asked, newest first", now)
        for r in q["received"]:
            ans = r["answer"]
            state = f"answered {safe(ans.get('status'))}" if ans else "not answered"
            detail = f" ({safe(ans.get('how'))}) {clock(ans.get('at'), now)}" if ans else ""
            row(out, f"{safe(r['id'])}  from {relative(r.get('from'), d['this']['path'])}  ", state, detail,
                colour=ui.bold)


def _reservations(d: "Report", out: "IO[str]") -> None:
    """The clone's reservations (issue 29): who is changing which paths, until when."""
    from git_korus_mail.commands import reserve
    from git_korus_mail.core.reservations import Reservation
    held = [r for r in map(Reservation.from_record, d.get("reservations") or []) if r is not None]
    if held:
        block(out, f"reservations of the clone: {len(held)}", d["as_of"])
        for line in reserve.lines(held, os.getcwd()):
            out.write(line + "\n")


SECTIONS: "List[Callable[[Report, IO[str]], None]]" = [_header, _box, _sent, _questions, _reservations, _events]


# -- one sent message's fate in a few words: (state, detail) ------------------------------------
def _consumed(f: "Record", now: str) -> "Tuple[str, str]":
    # `on`: another clone consumed it; its relay sent this fate back (docs/RELAY.md, "Fates back")
    where = f" on {safe(f['on'])}" if f.get("on") else ""
    return "consumed", f" {ago(f.get('at'), now)} by session {session(f.get('session'))}{where}"


def _shown(f: "Record", now: str) -> "Tuple[str, str]":
    shown = f.get("shown") or []
    first = shown[0] if shown else {}
    others = f" and {len(shown) - 1} more" if len(shown) > 1 else ""
    return "shown", f" to session {session(first.get('session'))} {ago(first.get('at'), now)}{others}"


FATE_TEXT: "Dict[str, Callable[[Record, str], Tuple[str, str]]]" = {
    "consumed": _consumed,
    "shown": _shown,
    "queued": lambda f, now: ("queued", ""),
    "expired": lambda f, now: ("expired", " unread"),
    "cancelled": lambda f, now: ("cancelled", ""),
    "dropped": lambda f, now: (f"dropped: {safe(f.get('rule') or 'a limit')}", f" at {clock(f.get('at'), now)}"),
    "quarantined": lambda f, now: ("quarantined", f": {safe(f.get('reason'))}"),
    "missing": lambda f, now: ("missing", f" ({safe(f.get('detail'))})"),
    # mail for another clone, before its fate comes back (docs/RELAY.md)
    "outbox": lambda f, now: ("in the outbox", f" ({safe(f.get('detail'))})"),
    "on-server": lambda f, now: ("on the server", f" for {safe(f.get('on'))}, {ago(f.get('at'), now)}; no fate back yet"),
}


# -- one journal event in a few words ----------------------------------------------------------
def _event_fields(ev: "Record", here: str) -> str:
    return " ".join(f"{safe(k)}={safe(v)}" for k, v in sorted(ev.items()) if k not in ("at", "event"))


def _slug(box_name: object) -> str:
    return safe(str(box_name or "-").rsplit("-", 1)[0])


def _sent_event(ev: "Record", here: str) -> str:
    if ev.get("sender") == here:
        return f"{safe(ev.get('id'))} to {_slug(ev.get('box'))}"
    return f"{safe(ev.get('id'))} from {relative(ev.get('sender'), here)}"


EVENT_TEXT: "Dict[str, Callable[[Record, str], str]]" = {  # the hook event, the launch and the box key of each are in --json
    "sent": _sent_event,
    "shown": lambda ev, here: f"{safe(ev.get('id'))} to session {session(ev.get('session'))}",
    "consumed": lambda ev, here: f"{safe(ev.get('id'))} by session {session(ev.get('session'))}",
    "expired": lambda ev, here: f"{safe(ev.get('id'))} unread",
    "cancelled": lambda ev, here: f"{safe(ev.get('id'))} by {safe(ev.get('by'))}",
    "quarantined": lambda ev, here: f"{safe(ev.get('name'))}: {safe(ev.get('reason'))}",
    "asked": lambda ev, here: f"{safe(ev.get('id'))} of {_slug(ev.get('box'))}, waiting {safe(ev.get('timeout'))}s",
    "answered": lambda ev, here: f"{safe(ev.get('id'))} {safe(ev.get('status'))} ({safe(ev.get('how'))})",
    "failed": lambda ev, here: f"{safe(ev.get('id'))} unanswered ({safe(ev.get('how'))})",
    "answer-delivered": lambda ev, here: f"{safe(ev.get('answer'))} to the waiting ask",
    "dropped": lambda ev, here: f"{safe(ev.get('id'))} as {safe(ev.get('rule'))}, from {relative(ev.get('sender'), here)}",
}
