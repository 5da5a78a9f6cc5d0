"""`send`: resolve destinations to boxes and publish one message into each.

A successful send proves queueing only; delivery is proven by the recipient's
receipt (see `status`). Destinations that do not name a worktree of this clone
are refused, because mail queued into a box nobody drains is silently lost.
"""

import os
import sys
import time

from git_korus_mail.core import keys, limitconf
from git_korus_mail.store import message, presence, publish, sent
from git_korus_mail.errors import MailError, UsageError
from git_korus_mail.store.layout import MSG_SUFFIX

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.core.worktrees import Worktree
    from git_korus_mail.store.files import Box, MailRoot
    from git_korus_mail.store.message import Message
    from git_korus_mail.store.shapes import Sender

    WorktreeKeys = List[Tuple[Worktree, keys.Key]]
    Session = Dict[str, Any]  # one row of the roster (core/roster.py)
    from git_korus_mail.core.vocab import SendResult as Result  # one destination's outcome

# How far past the limit an oversized stdin body is read, only to report its real size
# (never kept): a body piped from a runaway command must not be read forever.
SIZE_PROBE_BYTES = 64 * 1024 * 1024


class Target:
    __slots__ = ("dest", "key", "path", "error", "git_dir", "session", "nomatch", "stopped")

    def __init__(self, dest: str, key: "Optional[keys.Key]" = None, path: "Optional[str]" = None,
                 error: "Optional[str]" = None, git_dir: "Optional[str]" = None,
                 session: "Optional[str]" = None, nomatch: bool = False,
                 stopped: "Optional[Session]" = None) -> None:
        self.dest, self.key, self.path, self.error = dest, key, path, error
        self.git_dir = git_dir  # the worktree's admin dir (common dir for main): its identity
        self.session = session  # a session name's session id: the filter (the address stays the path)
        self.nomatch = nomatch  # dest named no worktree, worktree name or box key at all
        self.stopped = stopped  # the roster row of a named session that no longer runs (the refusal's why)


def read_body(arg: "Optional[str]") -> str:
    if arg is not None and arg != "-":
        return arg
    if arg is None and sys.stdin is not None and sys.stdin.isatty():
        raise MailError("no body: give it as an argument, or pipe it in with `-`")
    raw = sys.stdin.buffer.read(message.MAX_BODY_BYTES + 1) if sys.stdin is not None else b""
    if len(raw) > message.MAX_BODY_BYTES:
        raise MailError(f"body is {_stdin_size(len(raw))} bytes, over the {message.MAX_BODY_BYTES}-byte limit: "
                        f"send a summary and a file path instead")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MailError(f"body is not valid UTF-8 (byte {exc.start})") from None


def _stdin_size(already: int) -> str:
    """The whole size of stdin (counted, not kept), or "more than N" past the probe's end."""
    size = already
    while size <= SIZE_PROBE_BYTES:
        chunk = sys.stdin.buffer.read(1024 * 1024)
        if not chunk:
            return str(size)
        size += len(chunk)
    return f"more than {SIZE_PROBE_BYTES}"


def check_body(body: str) -> None:
    if not body.strip():
        raise MailError("empty body: nothing to send")
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > message.MAX_BODY_BYTES:
        raise MailError(f"body is {size} bytes, over the {message.MAX_BODY_BYTES}-byte limit: "
                        f"send a summary and a file path instead")


def resolve(clone: "Clone", dests: "Sequence[str]", create: bool = False,
            all_worktrees: bool = False, roster: "Optional[Callable[[], List[Session]]]" = None) -> "List[Target]":
    """Map each destination to a Target (with .error when it cannot be mailed). `roster` gives
    the sessions `who` lists (core/roster.py), for destinations that are session names; asked
    only when a destination is no path. Precedence: see resolve_name."""
    wt_keys = clone.worktree_keys()
    root = clone.mail_root()
    box_names = root.box_names() if root is not None else []
    out: List[Target] = []
    if all_worktrees:
        for wt, k in wt_keys:
            if k != clone.own_key and not wt.prunable:
                out.append(Target(wt.path, k, wt.path, git_dir=wt.admin_dir))
        if not out:
            raise MailError("no other worktree in this clone")
        return out
    for dest in dests:
        if dest == "all":
            live = presence.live_boxes(root) if root is not None else {}
            found = [Target(wt.path, k, wt.path, git_dir=wt.admin_dir) for wt, k in wt_keys
                     if k != clone.own_key and not wt.prunable and k.name in live]
            if not found:
                out.append(Target(dest, error="no other worktree has a live session "
                                              "(use --all-worktrees to mail every worktree)"))
            out.extend(found)
            continue
        out.append(resolve_name(clone, dest, wt_keys, box_names, create, _Once(roster)))
    seen: set[str] = set()
    unique: List[Target] = []
    for t in out:
        if t.key is not None and t.key.name in seen:
            continue
        if t.key is not None:
            seen.add(t.key.name)
        unique.append(t)
    return unique


def _looks_like_path(dest: str) -> bool:
    return dest in (".", "..") or "/" in dest or dest.startswith("~") or os.path.isdir(dest)


def _existing(wt_keys: "WorktreeKeys") -> str:
    """The worktrees mail can reach, for error messages: a prunable one is gone."""
    return ", ".join(wt.path for wt, _ in wt_keys if not wt.prunable) or "(none)"


class _Once:
    """The roster, read at most once per send, and only if a destination needs it."""

    def __init__(self, source: "Optional[Callable[[], List[Session]]]") -> None:
        self.source = source
        self.rows: "Optional[List[Session]]" = None

    def sessions(self) -> "List[Session]":
        if self.rows is None:
            try:
                self.rows = self.source() if self.source is not None else []
            except (MailError, OSError):
                self.rows = []  # a box whose sessions cannot be read names nobody; paths still work
        return self.rows

    def has_name(self, name: str) -> bool:
        return self.source is not None and any(s.get("name") == name for s in self.sessions())


def resolve_name(clone: "Clone", dest: str, wt_keys: "WorktreeKeys", box_names: "List[str]",
                 create: bool, names: "_Once") -> Target:
    """One destination. `@<name>` is always a session name. Otherwise a path (it has a `/`, a
    `~`, is `.`/`..`) is a path; a worktree name, a box key prefix or an existing directory's
    name is that, unless a session has the same name: then the destination is refused as
    ambiguous (neither silently shadows the other), and the refusal says how to spell each."""
    if dest.startswith("@") and len(dest) > 1:
        return _by_session_name(dest, dest[1:], wt_keys, names.sessions())
    explicit = dest in (".", "..") or "/" in dest or dest.startswith("~")
    if explicit:
        return _resolve_one(clone, dest, wt_keys, box_names, create)
    plain = _resolve_one(clone, dest, wt_keys, box_names, create)
    if not names.has_name(dest):
        return plain
    if plain.nomatch:
        return _by_session_name(dest, dest, wt_keys, names.sessions())
    meant = plain.path or plain.error or dest
    return Target(dest, error=f"{dest}: ambiguous: it is a session name and also names {meant}; "
                              f"say --to @{dest} for the session, or the worktree's path (--to ./{dest} "
                              f"or an absolute path) for the worktree")


def _by_session_name(dest: str, name: str, wt_keys: "WorktreeKeys", sessions: "List[Session]") -> Target:
    from git_korus_mail.core import roster
    hits = roster.named(sessions, name)
    if not hits:
        unwired = [s for s in sessions if s.get("name") == name]
        if unwired:
            return Target(dest, error=f"{dest}: session {name} runs in {unwired[0]['worktree']}, but no hook of "
                                      f"ours ever ran in it: mail cannot reach it (git korus-mail install)")
        return Target(dest, error=f"{dest}: no session is named {name} (git korus-mail who lists them)")
    one, candidates = roster.pick(hits)
    if one is None:
        listed = "; ".join(f"{s['session']} in {s['worktree']} ({s['state']})" for s in candidates)
        return Target(dest, error=f"{dest}: {len(candidates)} sessions are named {name}: {listed}; "
                                  f"say --to <worktree> --session <id>")
    for wt, k in wt_keys:
        if k.name == one["box"]:
            if wt.prunable:
                return Target(dest, error=f"{dest}: session {name}'s worktree {wt.path} is prunable (its directory is gone)")
            if one["state"] not in roster.LIVE_STATES:
                # Mail for a session that no longer runs is shown only to a resume of it: a new
                # session in that worktree never sees it (issue 21, item 9). The sender chooses.
                return Target(dest, path=wt.path, error=roster.stopped(dest, one, wt.path, "send"), stopped=one)
            return Target(dest, k, wt.path, git_dir=wt.admin_dir, session=one["session"])
    return Target(dest, error=f"{dest}: session {name} ran in {one['worktree']}, which is no worktree of this clone now")


def _resolve_one(clone: "Clone", dest: str, wt_keys: "WorktreeKeys", box_names: "List[str]",
                 create: bool) -> Target:
    known = _existing(wt_keys)
    if _looks_like_path(dest):
        path = os.path.expanduser(dest)
        if not os.path.exists(path) and not create:
            return Target(dest, error=f"{dest}: no such directory; worktrees of this clone: {known}")
        k = keys.key_for(path)
        if k == clone.own_key and dest != ".":
            return Target(dest, error=f"{dest}: that is this worktree; mail yourself with `--to .`")
        for wt, wk in wt_keys:
            if wk == k:
                if wt.prunable:
                    return Target(dest, error=f"{dest}: worktree is prunable (its directory is gone); "
                                          f"worktrees that exist: {known}")
                return Target(dest, k, wt.path, git_dir=wt.admin_dir)
        if k.name in box_names or create:
            return Target(dest, k, k.path)
        return Target(dest, error=f"{dest}: not a worktree of this clone (its worktrees: {known}); "
                                  f"use --create to queue for it anyway")
    # `list` and `send` print a worktree's label, `(ui)` (its key's slug): what the tool prints
    # must work as an address, with or without the parentheses. A name or directory name wins
    # over a label, which only a lowercased, ASCII-folded name can share with another worktree.
    label = dest[1:-1] if len(dest) > 2 and dest[0] == "(" and dest[-1] == ")" else dest
    named = [(wt, k) for wt, k in wt_keys if label in (wt.name, os.path.basename(wt.path))]
    if not named:
        named = [(wt, k) for wt, k in wt_keys if label == k.slug]
    if len(named) == 1:
        wt, k = named[0]
        if k == clone.own_key:
            return Target(dest, error=f"{dest}: that is this worktree; mail yourself with `--to .`")
        if wt.prunable:
            return Target(dest, error=f"{dest}: worktree is prunable (its directory is gone); "
                                          f"worktrees that exist: {known}")
        return Target(dest, k, wt.path, git_dir=wt.admin_dir)
    if len(named) > 1:
        return Target(dest, error=f"{dest}: ambiguous worktree name: " + ", ".join(wt.path for wt, _ in named))
    if len(dest) >= 4:
        candidates: Dict[str, Optional[str]] = {k.name: k.path for _, k in wt_keys}
        for name in box_names:
            candidates.setdefault(name, None)
        hits = [n for n in candidates if n.startswith(dest) or n.rsplit("-", 1)[-1].startswith(dest)]
        if len(hits) == 1:
            name = hits[0]
            live = {k.name for wt, k in wt_keys if not wt.prunable}
            box_path = candidates[name] or _box_path(clone, name)
            if name not in live and not (box_path and os.path.isdir(box_path)):
                # a removed or prunable worktree's box: nobody drains it (its mail can be forwarded)
                return Target(dest, error=f"{dest}: box {name} belongs to no worktree "
                                          f"({box_path or 'path unknown'} is gone); worktrees that exist: {known}")
            box_wt = next((wt for wt, k in wt_keys if k.name == name), None)
            return Target(dest, keys.Key(box_path or name, name, None), box_path,
                          git_dir=box_wt.admin_dir if box_wt is not None else None)
        if len(hits) > 1:
            return Target(dest, error=f"{dest}: ambiguous key prefix: " + ", ".join(sorted(hits)))
    return Target(dest, error=f"{dest}: no worktree, session name or box key matches; worktrees: {known}",
                  nomatch=True)


def _box_path(clone: "Clone", name: str) -> "Optional[str]":
    root = clone.mail_root()
    box = root.box(name) if root is not None else None
    return box.recorded_path() if box is not None else None


def deliver(clone: "Clone", targets: "Sequence[Target]", body: str, kind: str, ttl: int,
            session: "Optional[str]" = None,
            sender_session: "Optional[str]" = None,
            fields: "Optional[Dict[str, Any]]" = None, wake: bool = True,
            sender_launch: "Optional[str]" = None) -> "Tuple[List[Result], bool]":
    """Publish one message per resolved target; returns (results, delivery_off). `session` is
    the recipient session it is for, if any; `sender_session` the session it is sent from, as
    the client names it, and `sender_launch` the process that sends (clients.sender_of);
    `fields` the optional message fields (in_reply_to, thread, wake: store/message.build).

    Each result is {"to", "ok", "error"} for a target not queued, or {"to", "ok", "id", "path",
    "box", "expires_at", "warnings"} for one queued (warnings: what failed after the link).

    All or nothing: every target is checked before the first is published, and one that cannot
    be mailed means none is (issue 21, item 8: a retry of a half-queued send doubled the rest)."""
    # the receiver's backlog, read once (a bad setting refuses the send: MailError, one line);
    # advice only, as any writer can skip it: the drain holds back what passes it (core/limits.py)
    backlog = None if kind == limitconf.ANSWER else limitconf.read(clone.common_dir).backlog
    refused = _refused(clone, targets, session, backlog)
    if refused is not None:
        root = clone.mail_root()
        return refused, bool(root is not None and root.is_off())
    root = clone.mail_root(create=True)
    assert root is not None  # for mypy: create=True makes the root or raises
    sender = sender_record(clone, sender_session, sender_launch)
    results: List[Result] = []
    for t in targets:
        assert t.key is not None  # for mypy: every target here resolved (_refused checked each)
        msg: Optional[Message] = None
        box: Optional[Box] = None
        try:
            msg = message.build(body, t.key.path, t.key.name, sender, kind=kind, ttl_minutes=ttl,
                                session=t.session or session,
                                **{"wake": None if wake else False, **(fields or {})})
            box = root.box(t.key.name, create=True, path=t.key.path, adopt=owner_of(clone, t))
            assert box is not None  # for mypy: create=True makes the box or raises
            full = _full(box, backlog, msg.get("session"))
            if full:
                results.append({"to": t.dest, "ok": False, "error": f"{t.dest}: {full}"})
                continue
            publish.publish(box, msg, message.encode(msg))
        except (MailError, OSError) as exc:
            # MailError: refused before the link (an id already queued counts: that link is not ours)
            if isinstance(exc, MailError) or not _is_queued(box, msg):
                results.append({"to": t.dest, "ok": False, "error": str(exc)})
                continue
            # the link exists, so the message is queued: what failed after it is a warning
            warnings = [f"publishing finished with an error: {_why(exc)}"]
        else:
            warnings = []
        assert msg is not None  # for mypy: a message that is not queued was skipped above
        # The message is queued once its inbox link exists. What follows is bookkeeping: its
        # failure is a warning, never "not queued" (a retry would deliver the message twice).
        try:
            _record_sent(root, clone, msg, t)
        except (MailError, OSError) as exc:
            warnings.append(f"not recorded in this worktree's sent/ (status will not follow it): {_why(exc)}")
        root.journal("sent", id=msg["id"], box=t.key.name, sender=sender["path"], kind=kind)
        warnings.extend(root.take_journal_faults())
        results.append({"to": t.dest, "ok": True, "id": msg["id"], "path": t.path, "box": t.key.name,
                        "session": msg.get("session"), "expires_at": msg["expires_at"], "warnings": warnings})
    return results, root.is_off()


def sender_record(clone: "Clone", session: "Optional[str]", launch: "Optional[str]") -> "Sender":
    """A message's `from`: this worktree, its branch, the sending session and launch (the last
    written only when known, so a message without one is the file it always was). The limits
    tell senders apart by all of path, session and launch (core/limits.py)."""
    own = clone.own_worktree()
    sender: "Sender" = {"path": clone.own_key.path, "branch": own.branch if own else None, "session": session}
    if launch is not None:
        sender["launch"] = launch
    return sender


def _refused(clone: "Clone", targets: "Sequence[Target]", session: "Optional[str]",
             backlog: "Optional[int]") -> "Optional[List[Result]]":
    """None when every target can be mailed now; else the results of a send refused as a whole:
    each target that cannot (unresolved, its name contradicts --session, its box full) with its
    reason, every other one naming those (so the sender knows what to fix or drop)."""
    why: "Dict[int, str]" = {}
    root = clone.mail_root()
    for i, t in enumerate(targets):
        box = root.box(t.key.name) if root is not None and t.key is not None and not t.error else None
        full = _full(box, backlog, t.session or session) if box is not None else None
        if t.error or full or (t.session and session and t.session != session):
            why[i] = t.error or (f"{t.dest}: {full}" if full else
                                 f"{t.dest} is session {t.session}, but --session says {session}")
    bad = ", ".join(targets[i].dest for i in sorted(why))
    return [{"to": t.dest, "ok": False, "error": why.get(i) or f"{t.dest}: nothing is queued while {bad} "
             f"cannot be mailed; fix or drop it, then send again"} for i, t in enumerate(targets)] if why else None


def _full(box: "Box", backlog: "Optional[int]", session: "Optional[str]") -> "Optional[str]":
    """Why a box takes no more for a message filtered for `session` (None: for any session),
    or None. What counts is the queued mail the message's reader can read, as the drain counts
    it (core/limits.py): mail for every session, and mail for `session` itself; never mail for
    another session, which its own session alone can read (docs/DESIGN.md, "Limits")."""
    if backlog is None:
        return None  # an answer: always accepted
    ids = box.inbox_ids()[0]  # messages by their names: junk is none
    if len(ids) < backlog:
        return None  # room whoever reads: no message needs reading
    from git_korus_mail.store.message import Invalid, expires_at
    from git_korus_mail.store.files import NotRegular, TooLarge
    now = time.time()
    unread = 0
    for msg_id in ids:
        try:
            queued, _st = box.load(msg_id)
        except (OSError, MailError, Invalid, NotRegular, TooLarge):
            continue  # gone meanwhile, or junk the drain quarantines: nobody reads it
        if expires_at(queued) <= now:
            continue  # expired: it leaves at the next show, unread
        if not queued.get("session") or queued.get("session") == session:
            unread += 1
            if unread >= backlog:
                break
    if unread < backlog:
        return None
    whose = f"unread messages for session {session}" if session else "unread messages"
    return (f"its box holds {unread} {whose}, the limit (git config korus-mail.backlog is {backlog}); "
            f"nothing queued: send again once they are read")


def _is_queued(box: "Optional[Box]", msg: "Optional[Message]") -> bool:
    """Whether the message's inbox link exists: the one fact that makes it queued."""
    if box is None or msg is None:
        return False
    try:
        return box.has("inbox", msg["id"] + MSG_SUFFIX)
    except (MailError, OSError):
        return False


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def owner_of(clone: "Clone", target: Target) -> "Optional[Callable[[Box], None]]":
    """The destination's worktree identity, for a box this send makes first (see wtident)."""
    git_dir = target.git_dir
    if git_dir is None:
        return None

    def adopt(box: "Box") -> None:
        from git_korus_mail.store import forwarding, wtident
        forwarding.first_use(box, wtident.of_git_dir(git_dir, clone.common_dir))
    return adopt


def _record_sent(root: "MailRoot", clone: "Clone", msg: "Message", target: Target) -> None:
    """Index the message so `status` can follow it to its fate: in the sender's own box when
    it is a worktree (or already has a box), else in the mail root's sent/, so a sender in
    /tmp, .git/mail or a bare repository leaves no box behind that nobody drains."""
    assert target.key is not None  # for mypy: only a resolved target is sent to
    sent.record(root, clone.own_box(create=True), msg, target.key.name, target.path, clone.own_key.path)


def check_ttl(value: "Union[int, str, None]") -> int:
    """Minutes (an int, or the text typed) within 1..MAX_TTL_MINUTES: every TTL sent must be one the drain honours
    (a ttl past year 9999 once queued mail the drain then quarantined as "bad expires_at")."""
    if value is None:
        return message.DEFAULT_TTL_MINUTES
    allowed = f"use 1 to {message.MAX_TTL_MINUTES} minutes (10 years)"
    try:
        ttl = int(value)
    except ValueError:
        raise UsageError(f"--ttl {value!r}: minutes as a whole number; {allowed}") from None
    if not 1 <= ttl <= message.MAX_TTL_MINUTES:
        raise UsageError(f"--ttl {value}: out of range; {allowed}")
    return ttl
