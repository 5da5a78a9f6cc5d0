"""`who`: every session the clone knows, with its state as of a time (core/roster.py)."""

import json
import os
import time
from dataclasses import dataclass

from git_korus_mail import clients, ui
from git_korus_mail.core import roster
from git_korus_mail.commands.text import safe
from git_korus_mail.stamps import human_age, parse_stamp

SURFACES = {"terminal": "terminal", "sdk": "-p/SDK", "editor": "editor"}


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, Any, Dict, List, Optional

    from git_korus_mail.core.clone import Clone

    Row = Dict[str, Any]  # one session of roster.collect (docs/CONTRACT.md)


@dataclass(frozen=True)
class WhoArgs:
    json: bool = False   # machine-readable


def run(clone: "Clone", args: WhoArgs, out: "IO[str]") -> int:
    from git_korus_mail.commands import reserve
    data = roster.collect(clone, clients.sessions, activity=clients.last_activity)
    held = reserve.held_now(clone)  # issue 29: who is changing which paths
    from git_korus_mail.relay import address  # no nats: one stat when no remote is configured
    others = address.other_clones(clone.common_dir)
    if args.json:
        extra: "Dict[str, Any]" = {"reservations": [r.record() for r in held]}
        if others:
            extra["other_clones"] = others
        out.write(json.dumps(dict(data, **extra), indent=2) + "\n")
        return 0
    now = time.time()
    out.write(f"sessions as of {data['as_of']}\n")
    if not data["sessions"]:
        out.write("  none: no hook of this clone has run yet (git korus-mail install wires them)\n")
    _sessions(data, out, now)
    if held:
        out.write(f"\nreservations: {len(held)}\n")
        for line in reserve.lines(held, os.getcwd()):
            out.write(line + "\n")
    _others(others, out)
    return 0


def _others(others: "List[Dict[str, Any]]", out: "IO[str]") -> None:
    """Other clones' sessions, as their relays last said (docs/RELAY.md): never asked now, so
    `who` never waits on the network; the age says how old the word is."""
    for c in others:
        out.write(f"{ui.bold(safe(c['label']))}: another clone, as its relay said {human_age(c['age'])} ago\n")
        names = {str(w.get('key')): str(w.get('name')) for w in c["worktrees"]}
        if not c["sessions"]:
            out.write("  no named session seen there\n")
        for s in c["sessions"]:
            out.write(f"  {safe(s.get('name'))}  {safe(s.get('session'))}  {safe(s.get('state'))} as of "
                      f"{safe(s.get('as_of'))}  in {safe(c['label'])}:{safe(names.get(str(s.get('box')), '?'))}\n")


def _sessions(data: "Dict[str, Any]", out: "IO[str]", now: float) -> None:
    shared = {w["box"]: w["shared"] for w in data["worktrees"]}
    current: object = object()
    for s in data["sessions"]:
        if s["box"] != current:
            current = s["box"]
            branch = f"  [{safe(s['branch'])}]" if s["branch"] else ""
            warn = f"  ({ui.bold(safe(shared[s['box']]))})" if shared.get(s["box"]) else ""
            out.write(f"{ui.bold(safe(s['worktree'] or '?'))}{branch}{warn}\n")
        out.write(f"  {safe(s['name'] or '-')}  {safe(s['session'])}  {ui.bold(state_text(s, now))}"
                  f"  {safe(SURFACES.get(s['surface'], s['surface'] or 'surface unknown'))}"
                  f"  config {safe(_root(s))}\n")


def _root(s: "Row") -> str:
    root: "Optional[str]" = s["config_root"]
    if root:
        return root
    default = clients.default_config_root(s["client"])
    return f"{default} (the default)" if default else "the default"


def state_text(s: "Row", now: float) -> str:
    """`working as of T`, `idle as of T, wakeable until U`, `closed 5m ago`, ..."""
    state = s["state"]
    if state in ("closed", "gone"):
        return f"{state} {_ago(s['as_of'], now)}" + ("" if state == "closed" else " (its process died without ending)")
    text = f"{state} as of {safe(s['as_of'])}"
    if state == "not responding":
        text += " (working, but no hook event since)"
    if s.get("wakeable_until"):
        text += f", wakeable until {safe(s['wakeable_until'])}"
    elif s.get("wake_budget_spent_until"):
        text += f", wake budget spent until {safe(s['wake_budget_spent_until'])} (new mail waits for its next prompt)"
    if s.get("waiting_for"):
        text += f" for {safe((s['waiting_for'] or {}).get('id', 'an answer'))}"
    if not s["hooks"]:
        text += " (no hook event seen here: mail does not reach it)"
    return text


def _ago(stamp: object, now: float) -> str:
    try:
        return human_age(max(0.0, now - parse_stamp(stamp))) + " ago"
    except (ValueError, TypeError):
        return "at an unknown time"
