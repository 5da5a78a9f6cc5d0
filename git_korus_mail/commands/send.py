"""`send`: queue a message for other worktrees' sessions (the publishing is send.deliver)."""

import json
import os
import sys
from dataclasses import dataclass
from typing import Optional, Tuple

from git_korus_mail import clients
from git_korus_mail.commands.text import relative
from git_korus_mail.core import roster, send, verdict
from git_korus_mail.store import message
from git_korus_mail.wiring import record
from git_korus_mail.errors import UsageError

MAX_DESTINATIONS = 8


@dataclass(frozen=True)
class SendArgs:
    to: Tuple[str, ...] = ()        # destinations as typed: path, `.`, `all`, name, key prefix
    all_worktrees: bool = False     # every other worktree instead of `to`
    body: Optional[str] = None      # the text; None or "-" reads stdin
    kind: str = "note"
    ttl_minutes: Optional[int] = None   # None: message.DEFAULT_TTL_MINUTES
    session: Optional[str] = None   # show only to this session id
    create: bool = False            # allow a path that is no worktree of this clone
    json: bool = False
    wake: bool = True               # False: --no-wake (the message's `wake` field)
    wait: Optional[float] = None    # seconds to wait for the proof; None: verdict.DEFAULT_WAIT, wakeable only


MAX_WAIT = 60


def parse_wait(text):
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


def parse_ttl(text):
    """--ttl as typed -> minutes (UsageError naming the option when it is no whole number in range)."""
    return None if text is None else send.check_ttl(text)


def run(clone, args, out):
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
    targets = send.resolve(clone, list(args.to), create=args.create, all_worktrees=args.all_worktrees,
                           roster=lambda: roster.collect(clone, clients.sessions, activity=clients.last_activity)["sessions"])
    sender_session, sender_launch = clients.sender_of(os.environ)
    results, off = send.deliver(clone, targets, body, args.kind, ttl, session=args.session,
                                sender_session=sender_session, sender_launch=sender_launch, wake=args.wake)
    root = clone.mail_root()
    wired = record.anything_wired(root.path) if root is not None else True
    verdict.settle(clone, results, args.wait, sender=sender_session, wired=wired)
    if args.json:
        out.write(json.dumps({"results": results, "delivery_off": off}, indent=2) + "\n")
    else:
        for r in results:
            if r["ok"]:
                only = f" for session {r['session']}" if r.get("session") else ""
                # queued, then gone where nobody will see it (the receiver's limits dropped it, it
                # expired, it was cancelled): the first word says that fate, never `queued`
                fate = r["verdict"] if r["verdict"] in verdict.NOT_SHOWN else "queued"
                # the path as seen from this worktree (`../web`), as status and cancel write one
                to = relative(r['path'], clone.own_key.path)
                out.write(f"{fate} {r['id']} -> {to} ({r['box'].rsplit('-', 1)[0]}){only}\n")
                out.write(f"  {r['verdict']}, as of {r['as_of']}: {r['why']}\n")
                for w in r["warnings"]:
                    sys.stderr.write(f"git korus-mail: warning: {r['id']} is queued, but {w}\n")
            else:
                sys.stderr.write(f"git korus-mail: not queued: {r['error']}\n")
        if off and any(r["ok"] for r in results):
            out.write("note: delivery is off (mail/OFF); it stays queued until `git korus-mail on`\n")
    return 1 if any(not r["ok"] for r in results) else 0
