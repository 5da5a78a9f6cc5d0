"""`log`: the clone's history as a person follows it, one line each, oldest first; `--follow`
keeps printing as things happen (core/history.py reads; nothing here writes). To say a new
journal event in words, add it to EVENT_TEXT; an unknown one is shown by its fields."""

import json
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, TextIO

from git_korus_mail.commands.mailtext import fit, stamp
from git_korus_mail.commands.text import relative, safe, session
from git_korus_mail.core import history
from git_korus_mail.errors import UsageError

if TYPE_CHECKING:
    from git_korus_mail.core.clone import Clone

Record = Dict[str, Any]  # a journal record, with what core/history.py joined to it

POLL_SECONDS = 0.25  # --follow: one open and fstat of the journal each time; nothing else


@dataclass(frozen=True)
class LogArgs:
    follow: bool = False
    since: Optional[float] = None  # epoch seconds (history.parse_since made it)
    json: bool = False


def parse_since(text: "Optional[str]") -> "Optional[float]":
    if text is None:
        return None
    try:
        return history.parse_since(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run(clone: "Clone", args: LogArgs, out: TextIO) -> int:
    root = clone.mail_root()
    if root is None:
        if not args.follow:
            return 0  # no mail root: nothing has happened yet
        while root is None:  # follow from the first mail on
            time.sleep(POLL_SECONDS)
            root = clone.mail_root()
    here = os.getcwd()
    reader = history.Reader(clone, root, since=args.since)
    while True:
        for rec in reader.more():
            out.write(json.dumps(rec, sort_keys=True) + "\n" if args.json else line(rec, here) + "\n")
        out.flush()  # a closed pipe is found here (cli.main ends quietly), not at exit
        if not args.follow:
            return 0
        time.sleep(POLL_SECONDS)


def line(rec: "Record", here: str) -> str:
    """One record in under 100 columns: time, what happened, to what; every field escaped."""
    event = str(rec.get("event") or "?")
    text = EVENT_TEXT.get(event, _fields)(rec, here)
    return fit(f"{stamp(rec.get('at'))}  {safe(event):<10} {text}")


def _to(rec: "Record", here: str) -> str:
    return relative(rec.get("to"), here) if rec.get("to") else safe(str(rec.get("box") or "?"))


def _short(value: object) -> str:
    return "…" + safe(str(value)[-8:]) if value else "?"  # as every command prints an id


def _sent(rec: "Record", here: str) -> str:
    head = f"{relative(rec.get('from') or rec.get('sender'), here)} → {_to(rec, here)}  {_short(rec.get('id'))}"
    if rec.get("first_line") is None:
        return f"{head}  {safe(rec.get('kind') or 'note')} (no longer in the store)"
    return f"{head}  {safe(rec.get('kind') or 'note')}: {safe(rec['first_line'])}"


def _asked(rec: "Record", here: str) -> str:
    head = f"{relative(rec.get('from') or rec.get('sender'), here)} → {_to(rec, here)}  {_short(rec.get('id'))}"
    text = f": {safe(rec['first_line'])}" if rec.get("first_line") is not None else ""
    return f"{head}  waits {safe(rec.get('timeout'))}s{text}"


def _holder(value: object) -> str:
    return f"session {session(value)}" if value else "the person"


def _paths(rec: "Record") -> str:
    paths = rec.get("paths")
    return ", ".join(safe(p) for p in paths) if isinstance(paths, list) and paths else "?"


def _reserved(rec: "Record", here: str) -> str:
    block = ", blocking" if rec.get("block") else ""
    note = f": {safe(rec['note'])}" if rec.get("note") else ""
    return (f"{_short(rec.get('id'))} {_paths(rec)} by {_holder(rec.get('session'))} in "
            f"{relative(rec.get('worktree'), here)} for {_span(rec.get('at'), rec.get('until'))}{block}{note}")


def _span(start: object, end: object) -> str:
    """How long a reservation was made for (its until, in a line that has room for no second time)."""
    from git_korus_mail.stamps import human_age, parse_stamp
    try:
        return human_age(round((parse_stamp(end) - parse_stamp(start)) / 60) * 60)  # whole minutes
    except (ValueError, TypeError):
        return f"until {stamp(end)}"


def _released(rec: "Record", here: str) -> str:
    by = f", ended by {_holder(rec.get('by'))} (--force)" if rec.get("forced") else ""
    return f"{_short(rec.get('id'))} {_paths(rec)} of {_holder(rec.get('session'))}{by}"


LAPSED_WHY = {"ttl": "its TTL passed", "gone": "its session's client process is gone"}


def _lapsed(rec: "Record", here: str) -> str:
    why = LAPSED_WHY.get(str(rec.get("why")), safe(rec.get("why")))
    return f"{_short(rec.get('id'))} {_paths(rec)} of {_holder(rec.get('session'))}: {why}"


def _fields(rec: "Record", here: str) -> str:
    return " ".join(f"{safe(k)}={safe(v)}" for k, v in sorted(rec.items()) if k not in ("at", "event"))


EVENT_TEXT: "Dict[str, Callable[[Record, str], str]]" = {
    "sent": _sent,
    "asked": _asked,
    "shown": lambda r, h: f"{_short(r.get('id'))} in {_to(r, h)} to session {session(r.get('session'))}"
                          f" at {safe(r.get('hook_event') or '?')}",
    "consumed": lambda r, h: f"{_short(r.get('id'))} in {_to(r, h)} by session {session(r.get('session'))}"
                             + (" (repaired)" if r.get("repaired") else ""),
    "expired": lambda r, h: f"{_short(r.get('id'))} in {_to(r, h)}, unread",
    "cancelled": lambda r, h: f"{_short(r.get('id'))} in {_to(r, h)} by {safe(r.get('by') or 'its sender')}",
    "dropped": lambda r, h: f"{_short(r.get('id'))} in {_to(r, h)} by the rule {safe(r.get('rule'))},"
                            f" from {relative(r.get('sender'), h)}",
    "answered": lambda r, h: f"{_short(r.get('id'))} from {_to(r, h)}, {safe(r.get('how'))}"
                             f" by session {session(r.get('session'))}",
    "failed": lambda r, h: f"{_short(r.get('id'))} from {_to(r, h)} ended unanswered ({safe(r.get('how'))})",
    "answer-delivered": lambda r, h: f"{_short(r.get('id'))}: its answer {_short(r.get('answer'))} reached the ask",
    "answer-kept": lambda r, h: f"{_short(r.get('id'))}: its answer {_short(r.get('answer'))} waits as mail",
    "quarantined": lambda r, h: f"{safe(r.get('name'))} in {_to(r, h)}: {safe(r.get('reason'))}",
    "reserved": _reserved,
    "released": _released,
    "lapsed": _lapsed,
    "told": lambda r, h: f"{_short(r.get('id'))} to session {session(r.get('session'))}: its first edit refused once",
    "off": lambda r, h: "delivery turned off everywhere (queued mail is kept)",
    "on": lambda r, h: "delivery turned on",
}
