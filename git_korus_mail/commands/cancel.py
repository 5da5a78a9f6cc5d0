"""`cancel <id>`: withdraw a message this worktree sent that nobody has consumed (core/retract.py)."""

import os
from dataclasses import dataclass

from git_korus_mail import clients

from git_korus_mail.commands.mailtext import stamp
from git_korus_mail.commands.text import relative, safe
from git_korus_mail.core import retract


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO

    from git_korus_mail.core.clone import Clone


@dataclass(frozen=True)
class CancelArgs:
    id: str   # the id of a message sent from here (status prints it), or a unique prefix


def run(clone: "Clone", args: CancelArgs, out: "IO[str]") -> int:
    r = retract.cancel(clone, args.id, session=clients.session_of(os.environ))
    # the path as seen from here (`../web`), as status writes one: the line then fits
    to = relative(r["to"], os.getcwd()) if r.get("to") else safe(r.get("remote_to") or r["box"])
    if r["result"] == "asked":
        out.write(f"cancel of {r['id']} sent to {to}\n  it was delivered there first: that clone withdraws it "
                  f"unless a session consumed it already; status shows which\n")
        return 0
    if r["result"] == "waiting":
        out.write(f"cancel of {r['id']} to {to} waits in this clone's relay\n  not decided yet (the link is "
                  f"down or slow): it is decided when the link is back; status shows the outcome\n")
        return 0
    if r["result"] == "already-cancelled":
        out.write(f"{r['id']} to {to} was cancelled already\n")
        return 0
    out.write(f"cancelled {r['id']} to {to}\n  it will not be shown again, nor consumed\n")
    if r["shown"]:
        whom = "; ".join(f"to session {safe(s.get('session') or '?')} at {stamp(s.get('at'))}" for s in r["shown"])
        out.write(f"a model was shown it already ({whom}): cancelling takes it out of the box, "
                  f"not out of that context\n")
    return 0
