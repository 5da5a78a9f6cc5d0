"""`reserve`: say which paths of the repository you are changing (issue 29), list every
reservation of the clone, or end one (core/reservations.py; docs/DESIGN.md, "Reservations").

The holder is found the way `send` finds its sender (clients.sender_of): from a session's shell
(a Bash tool call) it is that session, from a terminal it is the person. A reservation that
overlaps another's is still made (they are advisory) and the overlap is always said.
"""

import json
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Sequence, TextIO

from git_korus_mail.commands.text import person_time, raw, relative, safe
from git_korus_mail.core import reservations
from git_korus_mail.errors import MailError, UsageError

if TYPE_CHECKING:
    from git_korus_mail.core.clone import Clone
    from git_korus_mail.core.reservations import Reservation


@dataclass(frozen=True)
class ReserveArgs:
    pathspecs: "Sequence[str]" = ()
    ttl_minutes: float = reservations.DEFAULT_TTL_MINUTES
    note: str = ""
    block: bool = False
    list: bool = False
    drop: bool = False
    force: bool = False
    json: bool = False


def parse_ttl(text: "Optional[str]") -> float:
    if text is None:
        return reservations.DEFAULT_TTL_MINUTES
    try:
        ttl = float(text)
    except ValueError:
        raise UsageError(f"--ttl={text}: not a number of minutes") from None
    if not 1 <= ttl <= reservations.MAX_TTL_MINUTES or ttl != ttl:
        raise UsageError(f"--ttl={text}: expected 1 to {reservations.MAX_TTL_MINUTES} minutes")
    return ttl


def run(clone: "Clone", args: ReserveArgs, out: TextIO) -> int:
    from git_korus_mail import clients
    session, launch = clients.sender_of(os.environ)
    here = os.getcwd()
    if args.list:
        return _list(clone, args, out, here)
    if args.drop:
        return _drop(clone, args, out, session)
    try:
        specs = reservations.check_pathspecs(args.pathspecs)
    except reservations.BadPathspec as exc:
        raise MailError(str(exc)) from None
    if len(args.note) > reservations.MAX_NOTE:
        raise MailError(f"--note is {len(args.note)} characters, over {reservations.MAX_NOTE}")
    clients.check_writable(clone)
    own = clone.own_worktree()
    if own is None or not clone.in_worktree():
        raise MailError(f"{here}: not in a worktree of this clone: reserve from the worktree you edit in")
    root = clone.mail_root(create=True)
    assert root is not None  # created
    client = launch.partition(":")[0] if launch and not launch.startswith("session:") else None
    holder = reservations.Holder(session, launch, client)
    r, over = reservations.reserve(root, specs, holder, clone.own_key.name, own.path, own.branch,
                                   ttl_minutes=args.ttl_minutes, note=args.note, block=args.block)
    if args.json:
        out.write(json.dumps({"reserved": _json(r), "overlaps": [_json(o) for o in over]}, sort_keys=True) + "\n")
        return 0
    who = "you (the person)" if session is None else f"session {safe(session)}"
    out.write(f"reserved {', '.join(safe(s) for s in r.pathspecs)} for {who} until "
              f"{person_time(_stamp(r.until))}{' (blocks edits)' if r.block else ''}  …{r.id[-8:]}\n")
    below = os.path.relpath(clone.cwd, own.path)
    if below != "." and not below.startswith(".."):
        # git's own pathspecs start at the cwd; ours at the top, so that a tell names one path
        out.write(f"note: pathspecs start at the repository root, not at {safe(below)}/ (here): "
                  f"{safe(below)}/<path> names a path here\n")
    for o in over:
        out.write(f"note: this overlaps {safe(o.holder_label())}'s reservation of "
                  f"{', '.join(safe(s) for s in o.pathspecs)} in {relative(o.worktree, here)} until "
                  f"{person_time(_stamp(o.until))}{': ' + safe(o.note) if o.note else ''}; reserved anyway "
                  f"(reservations are advisory). To reach them:\n")
        session_opt = f" --session={o.holder}" if o.holder else ""
        raw(out, f"  git korus-mail send --to={_quote(o.worktree)}{session_opt} -- '<your message>'\n")
    return 0


def _drop(clone: "Clone", args: ReserveArgs, out: TextIO, session: "Optional[str]") -> int:
    if not args.pathspecs:
        raise UsageError("--drop needs the pathspecs (or reservation ids) to end")
    root = clone.mail_root()
    ended: "List[Reservation]" = []
    refused: "List[Reservation]" = []
    unmatched = list(args.pathspecs)  # no mail root: nothing is reserved
    if root is not None:
        ended, unmatched, refused = reservations.drop(root, list(args.pathspecs), session, force=args.force)
    for r in ended:
        out.write(f"released {', '.join(safe(s) for s in r.pathspecs)} (…{r.id[-8:]}, "
                  f"{safe(r.holder_label())})\n")
    for r in refused:
        out.write(f"not yours: {', '.join(safe(s) for s in r.pathspecs)} is {safe(r.holder_label())}'s "
                  f"(…{r.id[-8:]}); add --force to end it anyway\n")
    if unmatched:
        raise MailError(f"no reservation of this clone is made with {', '.join(safe(w) for w in unmatched)} "
                        f"(`git korus-mail reserve --list` shows them)")
    return 0 if ended or not refused else 1


def _list(clone: "Clone", args: ReserveArgs, out: TextIO, here: str) -> int:
    root = clone.mail_root()
    held: "List[Reservation]" = reservations.active(root) if root is not None else []
    if args.json:
        out.write(json.dumps([_json(r) for r in held], sort_keys=True) + "\n")
        return 0
    if not held:
        out.write("no reservations in this clone\n")
        return 0
    for line in lines(held, here, indent=""):
        out.write(line + "\n")
    return 0


def held_now(clone: "Clone") -> "List[Reservation]":
    """The clone's reservations that hold now (for who and status; reading only)."""
    root = clone.mail_root()
    return reservations.active(root) if root is not None else []


def lines(held: "Sequence[Reservation]", here: str, indent: str = "  ") -> "List[str]":
    """Each reservation as a person reads it: who and where, the pathspecs, since and until
    when, the note (reserve --list, who, status)."""
    now = time.time()
    out = []
    for r in held:
        branch = f" ({safe(r.branch)})" if r.branch else ""
        left = max(0, int(r.until - now) // 60)
        out.append(f"{indent}…{r.id[-8:]}  {safe(r.holder_label())} in {relative(r.worktree, here)}{branch}"
                   f"{'  blocks edits' if r.block else ''}")
        out.append(f"{indent}    {', '.join(safe(s) for s in r.pathspecs)}")
        out.append(f"{indent}    since {person_time(_stamp(r.since))}, until {person_time(_stamp(r.until))}"
                   f" ({left} min left)")
        if r.note:
            out.append(f"{indent}    note: {safe(r.note)}")
    return out


def _json(r: "Reservation") -> "dict[str, object]":
    return r.record()


def _stamp(t: float) -> str:
    from git_korus_mail.stamps import utc_stamp
    return utc_stamp(t)


def _quote(s: str) -> str:
    if s and all(c.isalnum() or c in "._-/+@:=" for c in s):
        return s
    return "'" + s.replace("'", "'\\''") + "'"
