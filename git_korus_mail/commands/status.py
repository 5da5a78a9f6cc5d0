"""`status`: this worktree's box, the fate of the mail it sent, recent journal events."""

import json
from dataclasses import dataclass

from git_korus_mail import ui
from git_korus_mail.core import report
from git_korus_mail.commands.text import more, safe


@dataclass(frozen=True)
class StatusArgs:
    all: bool = False    # every message sent from here (else the latest report.SENT_SHOWN)
    json: bool = False   # machine-readable


def run(clone, args, out):
    d = report.collect_status(clone, sent_limit=None if args.all else report.SENT_SHOWN)
    if args.json:
        out.write(json.dumps(d, indent=2) + "\n")
        return 0
    out.write(f"mail root {safe(d['mail_root'])}  (as of {d['as_of']})\n")
    out.write(f"delivery  {d['delivery']}\n")
    out.write(f"this worktree  {safe(d['this']['path'])}  key {safe(d['this']['key'])}\n")
    if d["box"]:
        c = d["box"]["counts"]
        out.write(f"  inbox {c['inbox']}  claiming {c['claiming']}  seen {c['seen']}  expired {c['expired']}"
                  f"  (as of {d['as_of']})\n")
        for ev, last in sorted(d["box"]["last_drain"].items()):
            out.write(f"  last {safe(ev)} drain at {safe(last['at'])} (session {safe(last['session'])})\n")
    else:
        out.write("  no mail has been sent here yet\n")
    if d["sent"]:
        out.write("sent from this worktree (newest first):\n")
        for rec in d["sent"]:
            f = rec["fate"]
            detail = ""
            if f["state"] == "consumed":
                launch = f" (launch {safe(f['launch'])})" if f.get("launch") else ""
                detail = f" by session {safe(f.get('session'))}{launch} at {safe(f.get('at'))}"
            elif f["state"] == "shown":
                detail = " to " + ", ".join(f"{safe(s.get('session'))} at {safe(s.get('at'))}" for s in f["shown"])
            elif f["state"] == "expired":
                detail = " unread"
            state = f["state"]
            if state == "quarantined":
                state = f"quarantined: {safe(f.get('reason'))}"
            elif state == "missing":
                detail = f" ({safe(f.get('detail'))})"
            if f.get("moved_to"):
                detail += f" (moved to box {safe(f['moved_to'][-1])})"
            out.write(f"  {safe(rec['id'])} -> {safe(rec.get('path'))}  {ui.bold(state)}{detail}  (as of {f['as_of']})\n")
    if d["sent_total"] > len(d["sent"]):
        n = d["sent_total"] - len(d["sent"])
        out.write(f"  {more(n, 'message' if n == 1 else 'messages')}\n")
    if d["journal"]:
        out.write("latest events:\n")
        for ev in d["journal"]:
            rest = " ".join(f"{safe(k)}={safe(v)}" for k, v in sorted(ev.items()) if k not in ("at", "event"))
            out.write(f"  {safe(ev.get('at'))}  {safe(ev.get('event'))}  {rest}\n")
    return 0
