"""`inbox`: this worktree's mail, oldest first, each message in a few lines under 100 columns."""

import json
import time
from dataclasses import dataclass

from git_korus_mail import ui
from git_korus_mail.commands.mailtext import WIDTH, age, arrival_line, fit, relayed, sender, sent_said, stamp
from git_korus_mail.commands.text import safe
from git_korus_mail.core import mailview
from git_korus_mail.core.render import escape_line


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, Any, Dict, List

    from git_korus_mail.core.clone import Clone

    Entry = Dict[str, Any]  # one message as mailview.collect_inbox lists it (--json prints it)


@dataclass(frozen=True)
class InboxArgs:
    all: bool = False    # consumed, expired and cancelled mail too (what the store still keeps)
    json: bool = False   # machine-readable, every detail


def run(clone: "Clone", args: InboxArgs, out: "IO[str]") -> int:
    data = mailview.collect_inbox(clone, every=args.all)
    if args.json:
        out.write(json.dumps(data, indent=2) + "\n")
        return 0
    now = time.time()
    here = data["box"]["path"]
    head = f"inbox of {fit(safe(here), WIDTH - 40, keep_end=True)}  as of {stamp(data['as_of'])}"
    out.write(head + ("  (delivery off)" if data["delivery"] == "off" else "") + "\n")
    if not data["messages"]:
        out.write("  nothing queued here\n")
    for e in data["messages"]:
        for line in message_lines(e, here, now):
            out.write(line + "\n")
    if data["hidden"]:
        kept = ", ".join(f"{n} {state}" for state, n in sorted(data["hidden"].items()))
        out.write(f"also kept: {kept} (--all lists them)\n")
    return 0


def message_lines(e: "Entry", here: str, now: float) -> "List[str]":
    """The lines of one message, each at most WIDTH columns, every field escaped."""
    ident = safe(e["id"]) if e.get("id") else f"(file {safe(e.get('file'))})"
    state = e["state"]
    # the state in lowercase, as every other command writes one (issue 25: one case)
    first = f"{ident}  {state}" + (f"  {safe(e['kind'])}" if e.get("kind") else "")
    lines = [ui.bold(fit(first))]
    if "from" in e and relayed(e):
        # mail from another clone: its sent time is the sender's clock, so the time it arrived
        # here, by this one, is said beside it (docs/STORE.md, "Arrivals"); a line each, for room
        lines.append(fit("  from " + sender(e["from"], here, WIDTH - 7)))
        lines.append(fit(f"  sent {stamp(e['sent_at'])} by the sender's clock ({sent_said(e['sent_at'], now)})"))
        lines.append(fit("  " + arrival_line(e, now)))
    elif "from" in e:
        when = f"  sent {stamp(e['sent_at'])} ({age(e['sent_at'], now)} ago) from "
        lines.append(fit(when + sender(e["from"], here, WIDTH - len(when))))
    elif e.get("unreadable"):
        lines.append(fit(f"  unreadable: {safe(e['unreadable'])}"))
    detail = state_line(e)
    if detail:
        lines.append(fit("  " + detail))
    if e.get("first_line") is not None and "from" in e:
        text, _cut = escape_line(e["first_line"], 4 * WIDTH)
        lines.append(fit("  | " + text))
    return lines


def state_line(e: "Entry") -> str:
    """What happened to it: shown to whom, consumed by whom, expired, cancelled, dropped, quarantined."""
    state = e["state"]
    if state == "consumed":
        c = e.get("consumed") or {}
        return f"consumed by session {safe(c.get('session') or '?')} at {stamp(c.get('at'))}"
    if state == "shown" or (state == "queued" and e.get("shown")):  # a final state says itself
        shown = e.get("shown") or []
        s = shown[0]
        more = f", and {len(shown) - 1} more" if len(shown) > 1 else ""
        return (f"shown to session {safe(s.get('session') or '?')} at {stamp(s.get('at'))}"
                f" ({safe(s.get('event') or '?')}){more}; not consumed yet")
    if state == "queued":
        if e.get("session_filter"):  # no other session here is ever shown it (issue 21, item 9)
            return f"only for session {safe(e['session_filter'])}, not shown yet; no other session sees it"
        return "not shown to any session yet"
    if state == "quarantined":
        was = f"; was {safe(e['name'])}" if e.get("name") else ""
        return f"quarantined at {stamp(e.get('quarantined_at'))}: {safe(e.get('reason'))}{was}"
    if state == "dropped":
        r = e.get("dropped_reason") or {}
        why = f": {safe(r.get('rule') or '?')}, {safe(r.get('detail') or 'no detail')}" if r else ""
        return f"dropped by this worktree's limits at {stamp(e.get('dropped_at'))}{why}"
    if state == "expired":
        return f"expired unread at {stamp(e.get('expired_at'))}"
    if state == "cancelled":
        return f"cancelled by its sender at {stamp(e.get('cancelled_at'))}"
    return safe(state)
