"""`send`: queue a message for other worktrees' sessions (the publishing is send.deliver)."""

import os
import sys

from git_korus_mail import clients
from git_korus_mail.commands.args import Args
from git_korus_mail.commands.text import relative
from git_korus_mail.core import send, verdict
from git_korus_mail.store import message
from git_korus_mail.wiring import record
from git_korus_mail.errors import UsageError

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (issue 26)
if TYPE_CHECKING:
    from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

    from git_korus_mail.core.clone import Clone

MAX_DESTINATIONS = 8


class SendArgs(Args):
    __slots__ = ("to", "all_worktrees", "body", "kind", "ttl_minutes", "session", "create", "json", "wake", "wait")
    FIELDS = {"to": (), "all_worktrees": False, "body": None, "kind": "note", "ttl_minutes": None, "session": None,
              "create": False, "json": False, "wake": True, "wait": None}
    to: "Tuple[str, ...]"           # destinations as typed: path, `.`, `all`, name, key prefix
    all_worktrees: bool             # every other worktree instead of `to`
    body: "Optional[str]"           # the text; None or "-" reads stdin
    kind: str
    ttl_minutes: "Optional[int]"    # None: message.DEFAULT_TTL_MINUTES
    session: "Optional[str]"        # show only to this session id
    create: bool                    # allow a path that is no worktree of this clone
    json: bool
    wake: bool                      # False: --no-wake (the message's `wake` field)
    wait: "Optional[float]"         # seconds to wait for the proof; None: verdict.DEFAULT_WAIT, wakeable only


MAX_WAIT = 60


def parse_wait(text: "Optional[str]") -> "Optional[float]":
    """--wait as typed -> seconds (UsageError naming the option when it is no number in range)."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--wait {text!r}: seconds as a number, 0 to {MAX_WAIT}") from None
    if not 0 <= value <= MAX_WAIT:
        raise UsageError(f"--wait {text}: out of range; use 0 to {MAX_WAIT} seconds")
    return value


def parse_ttl(text: "Optional[str]") -> "Optional[int]":
    """--ttl as typed -> minutes (UsageError naming the option when it is no whole number in range)."""
    return None if text is None else send.check_ttl(text)


def run(clone: "Clone", args: SendArgs, out: "IO[str]") -> int:
    """Returns the exit status: 0 only when every destination was queued."""
    if len(args.to) > MAX_DESTINATIONS:
        raise UsageError(f"{len(args.to)} destinations; at most {MAX_DESTINATIONS} (--to ... --to)")
    if not message.valid_kind(args.kind):
        raise UsageError(f"--kind {args.kind!r}: use a lowercase word like note, handoff, alert (≤16 chars)")
    if args.kind in message.RESERVED_KINDS:
        raise UsageError(f"--kind {args.kind}: written only by `ask` and `reply`; use one of those")
    clients.check_writable(clone)
    ttl = send.check_ttl(args.ttl_minutes)
    if args.session is not None and not message.valid_session(args.session):
        raise UsageError(f"--session {args.session!r}: not a session id")
    body = send.read_body(args.body)
    send.check_body(body)
    remote, to = _remote(clone, args.to)
    if any("error" in r for r in remote):
        for target in remote:
            sys.stderr.write(f"git korus-mail: not queued: {target.get('error') or target['dest'] + ': nothing is queued while another destination cannot be mailed'}\n")
        return 1
    if remote and not to:
        return _send_remote(clone, args, remote, body, ttl, out)
    targets = send.resolve(clone, to, create=args.create, all_worktrees=args.all_worktrees,
                           roster=lambda: _sessions(clone))
    sender_session, sender_launch = clients.sender_of(os.environ)
    results, off = send.deliver(clone, targets, body, args.kind, ttl, session=args.session,
                                sender_session=sender_session, sender_launch=sender_launch, wake=args.wake)
    root = clone.mail_root()
    wired = record.anything_wired(root.path) if root is not None else True
    verdict.settle(clone, results, args.wait, sender=sender_session, wired=wired)
    if args.json:
        import json  # only here: a plain send never pays for it
        out.write(json.dumps({"results": results, "delivery_off": off}, indent=2) + "\n")
    else:
        for r in results:
            if r["ok"]:
                only = f" for session {r['session']}" if r.get("session") else ""
                # queued, then gone where nobody will see it (the receiver's limits dropped it, it
                # expired, it was cancelled): the first word says that fate, never `queued`
                fate = r["verdict"] if r["verdict"] in verdict.NOT_SHOWN else "queued"
                # the path as seen from this worktree (`../web`), as status and cancel write one
                dest = relative(r['path'], clone.own_key.path)
                out.write(f"{fate} {r['id']} -> {dest} ({r['box'].rsplit('-', 1)[0]}){only}\n")
                out.write(f"  {r['verdict']}, as of {r['as_of']}: {r['why']}\n")
                for w in r["warnings"]:
                    sys.stderr.write(f"git korus-mail: warning: {r['id']} is queued, but {w}\n")
            else:
                sys.stderr.write(f"git korus-mail: not queued: {r['error']}\n")
        if off and any(r["ok"] for r in results):
            out.write("note: delivery is off (mail/OFF); it stays queued until `git korus-mail on`\n")
    if remote:
        if any(not r["ok"] for r in results):
            sys.stderr.write("git korus-mail: not queued for another clone while a destination here failed: "
                             + ", ".join(r["dest"] for r in remote) + "\n")
            return 1
        return _send_remote(clone, args, remote, body, ttl, out)
    return 1 if any(not r["ok"] for r in results) else 0


def _sessions(clone: "Clone") -> "List[Dict[str, Any]]":
    """The sessions `who` lists, read only when a destination is a session name (core/roster.py
    and what it reads are imported then, not by every send: issue 26)."""
    from git_korus_mail.core import roster
    sessions: "List[Dict[str, Any]]" = roster.collect(clone, clients.sessions,
                                                      activity=clients.last_activity)["sessions"]
    return sessions


def _remote(clone: "Clone", dests: "Sequence[str]") -> "Tuple[List[Dict[str, Any]], List[str]]":
    """(remote destinations resolved, the local ones): `<label>:<worktree>` names another clone's
    box only when this clone has a remote (docs/RELAY.md); otherwise nothing changes."""
    if not any(":" in d or d.startswith("@") for d in dests):
        return [], list(dests)
    from git_korus_mail.relay import address  # no nats: one stat when no remote is configured
    remote: "List[Dict[str, Any]]" = []
    rest: "List[str]" = []
    for d in dests:
        if d.startswith("@") and len(d) > 1:
            # `@<name>` is namespace-wide (docs/RELAY.md): this clone's sessions and the others'
            there = address.sessions_named(clone.common_dir, d[1:])
            here = [s for s in _sessions(clone) if s.get("name") == d[1:] and s.get("hooks")] if there else []
            hit = address.by_session_name(d, there, here)
            if hit is None:
                rest.append(d)
            else:
                remote.append(hit)
            continue
        r = address.resolve(clone.common_dir, d)
        if r is None:
            rest.append(d)
        elif "local" in r:
            rest.append(r["local"])  # our own label: this clone's worktree
        else:
            remote.append(r)
    return remote, rest


def _send_remote(clone: "Clone", args: SendArgs, remote: "List[Dict[str, Any]]", body: str, ttl: int,
                 out: "IO[str]") -> int:
    from git_korus_mail.core import send as core_send
    from git_korus_mail.relay import address
    sender_session, sender_launch = clients.sender_of(os.environ)
    root = clone.mail_root(create=True)
    sender = core_send.sender_record(clone, sender_session, sender_launch)
    results = address.queue(clone.common_dir, root, remote, body, args.kind, ttl, sender, args.session, args.wake,
                            own_box=clone.own_box(create=True))
    how = address.link_words(clone.common_dir)
    if args.json:
        import json  # only here: a plain send never pays for it
        out.write(json.dumps({"results": results, "link": how}, indent=2) + "\n")
        return 0
    for r in results:
        out.write(f"queued {r['id']} -> {r['remote']}:{r['path']} ({r['box'].rsplit('-', 1)[0]})\n")
        out.write(f"  for another clone: {how}\n")
    return 0
