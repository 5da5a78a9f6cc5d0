"""`list`: every box: each worktree of the clone, then any other box."""

import json
from dataclasses import dataclass

from git_korus_mail import ui
from git_korus_mail.core import report, roster
from git_korus_mail.commands.text import counts, more, safe
from git_korus_mail.stamps import human_age


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, List

    from git_korus_mail.core.clone import Clone


@dataclass(frozen=True)
class ListArgs:
    all: bool = False    # every session of each box (else the latest report.SESSIONS_SHOWN)
    json: bool = False   # machine-readable


def run(clone: "Clone", args: ListArgs, out: "IO[str]") -> int:
    data = report.collect_list(clone)
    from git_korus_mail.relay import address  # no nats: one stat when no remote is configured
    others = address.other_clones(clone.common_dir)
    if args.json:
        out.write(json.dumps(dict(data, other_clones=others) if others else data, indent=2) + "\n")
        return 0
    out.write(f"boxes as of {data['as_of']}  (delivery {data['delivery']})\n")
    for row in data["boxes"]:
        c = row["counts"]
        flags: "List[str]" = []
        if row["this"]:
            flags.append("this worktree")
        if row["prunable"]:
            flags.append("PRUNABLE")
        if not row["worktree"]:
            flags.append("no worktree")
        if row["stranded"]:
            flags.append(f"STRANDED: {row['counts']['inbox']} queued that no worktree reads; "
                         f"git korus-mail forward {row['key']} --to <worktree>")
        shared = roster.shared_box_warning(row["live_sessions"])  # None for fewer than two: the old test
        if shared is not None:
            flags.append(shared)
        if row["quarantined"]:
            flags.append(f"{row['quarantined']} quarantined")
        oldest = row["oldest_unread_age_s"]
        head = ui.bold(safe(row["slug"]))
        out.write(f"{head}  {safe(row['path'] or '?')}"
                  f"{'  [' + safe(row['branch']) + ']' if row['branch'] else ''}"
                  f"{'  (' + ', '.join(flags) + ')' if flags else ''}\n")
        out.write(f"    {counts({k: c[k] for k in ('inbox', 'claiming', 'seen', 'expired')})}"
                  f"{'  oldest unread ' + human_age(oldest) if oldest is not None else ''}\n")
        sessions = row["sessions"] if args.all else row["sessions"][:report.SESSIONS_SHOWN]
        for s in sessions:
            wake = f"  wakeable until {safe(s['wakeable_until'])}" if s.get("wakeable_until") else ""
            out.write(f"    session {safe(s['session'])}  {safe(s['state'])}  last {safe(s['last_event'])} "
                      f"at {safe(s['at'])}{wake}\n")
        if len(sessions) < len(row["sessions"]):
            n = len(row["sessions"]) - len(sessions)
            out.write(f"    {more(n, 'session' if n == 1 else 'sessions')}\n")
    for c in others:
        # as that clone's relay last said (docs/RELAY.md): `list` never asks the network
        out.write(f"{ui.bold(safe(c['label']))}: another clone, as its relay said {human_age(c['age'])} ago "
                  f"(mail it as {safe(c['label'])}:<worktree>)\n")
        for w in c["worktrees"]:
            out.write(f"  {safe(c['label'])}:{safe(w.get('name'))}  {safe(w.get('path'))}\n")
    return 0
