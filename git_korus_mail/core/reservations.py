"""File reservations (issue 29): "I am changing these paths", said by a session or the person,
told to every *other* session before it edits one of them (docs/DESIGN.md, "Reservations").

A reservation is advisory: it never stops a shell command, and it lapses on its own at its TTL
or when its holder's client process is gone, so it is never a lock a dead process holds. A
session's first edit of another's advisory reservation is refused once, to tell its model
before the edit lands (the told-once refusal: before_edit); repeating it goes through. One made
with `--block` refuses every edit of the editing tools, and a commit (the commit guard), with
the reason and the way round it (docs/HOOKS.md, "Before an edit").

Paths are git pathspecs relative to the repository root (the top of whichever worktree a path is
in), matched here in pure Python by core/pathspec.py: no pygit2 and no `re` on the hook path, and bounded (its
limits, and at most store/reservations.MAX_RECORDS records read).
"""

import time

from git_korus_mail.core.pathspec import MAX_PATHSPECS, BadPathspec, check_pathspecs, overlap, pathspecs_match
from git_korus_mail.core.reservations_tell import block_reason, tell, told_once_reason
from git_korus_mail.store import reservations as records

__all__ = ["BadPathspec", "block_reason", "check_pathspecs", "pathspecs_match", "tell", "told_once_reason"]  # re-exported: callers use this module

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple

    from git_korus_mail.store.files import MailRoot

DEFAULT_TTL_MINUTES = 240       # "a few hours" (the issue); --ttl changes it
MAX_TTL_MINUTES = 7 * 24 * 60   # a week: past that it is no reservation but a policy
MAX_NOTE = 500
PERSON = "the person"           # how a reservation made from a terminal names its holder


class Reservation:
    """One reservation as stored (store/reservations.py), read-only. `holder` is the session id
    (None: the person, from a terminal); `launch` the holder's process as `<client>:<tag>`
    (`session:<tag>` for a terminal's Unix session), which is what lapses it."""

    __slots__ = ("id", "pathspecs", "holder", "launch", "client", "box", "worktree", "branch",
                 "since", "until", "note", "block")
    id: str
    pathspecs: "Tuple[str, ...]"
    holder: "Optional[str]"
    launch: "Optional[str]"
    client: "Optional[str]"
    box: str
    worktree: str
    branch: "Optional[str]"
    since: float
    until: float
    note: str
    block: bool

    def __init__(self, id: str, pathspecs: "Tuple[str, ...]", holder: "Optional[str]",
                 launch: "Optional[str]", client: "Optional[str]", box: str, worktree: str,
                 branch: "Optional[str]", since: float, until: float, note: str, block: bool) -> None:
        for name, value in (("id", id), ("pathspecs", pathspecs), ("holder", holder), ("launch", launch),
                            ("client", client), ("box", box), ("worktree", worktree), ("branch", branch),
                            ("since", since), ("until", until), ("note", note), ("block", block)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Reservation is read-only")

    def __repr__(self) -> str:
        return f"Reservation({self.id!r}, {self.pathspecs!r}, holder={self.holder!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reservation) and self.record() == other.record()

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def by_person(self) -> bool:
        return self.holder is None

    def holder_label(self) -> str:
        return PERSON if self.holder is None else f"session {self.holder}"

    def record(self) -> "Dict[str, Any]":
        """The record's fields as stored (docs/STORE.md, "Reservations")."""
        from git_korus_mail.stamps import utc_stamp
        return {"v": records.FORMAT_VERSION, "id": self.id, "paths": list(self.pathspecs),
                "holder": {"session": self.holder, "launch": self.launch, "client": self.client},
                "box": self.box, "worktree": self.worktree, "branch": self.branch,
                "since": utc_stamp(self.since), "until": utc_stamp(self.until), "note": self.note,
                "block": self.block}

    @classmethod
    def from_record(cls, rec: "Dict[str, Any]") -> "Optional[Reservation]":
        """The reservation a stored record holds; None when it is not shaped like ours."""
        holder = rec.get("holder")
        paths = rec.get("paths")
        if not isinstance(holder, dict) or not isinstance(paths, list) or not paths:
            return None
        if not all(isinstance(p, str) and p for p in paths[:MAX_PATHSPECS]):
            return None
        try:
            since, until = _when(rec.get("since")), _when(rec.get("until"))
        except ValueError:
            return None
        session, launch, client = holder.get("session"), holder.get("launch"), holder.get("client")
        box, worktree, branch = rec.get("box"), rec.get("worktree"), rec.get("branch")
        note, block = rec.get("note"), rec.get("block")
        if not (_opt_str(session) and _opt_str(launch) and _opt_str(client) and _opt_str(branch)
                and isinstance(box, str) and isinstance(worktree, str) and isinstance(note, str)
                and isinstance(block, bool)):
            return None
        return cls(rec["id"], tuple(paths[:MAX_PATHSPECS]), session, launch, client, box, worktree,
                   branch, since, until, note, block)

    def lapsed(self, now: float) -> "Optional[str]":
        """Why this reservation no longer holds ("ttl", "gone"), or None while it holds. A
        holder's client process that provably ended lapses it (the liveness rule of
        docs/STORE.md); the person's terminal does not: only the TTL ends theirs."""
        if now >= self.until:
            return "ttl"
        launch = self.launch
        if launch and self.holder is not None:
            client, _, tag = launch.partition(":")
            if tag and client != "session":
                from git_korus_mail.store.launch import ended
                if ended(tag):
                    return "gone"
        return None

    def matches(self, path: str) -> bool:
        """Whether the repository-relative `path` is one this reservation names."""
        return pathspecs_match(self.pathspecs, path)


def _when(value: object) -> float:
    """A stored time in seconds: the form utc_stamp writes read by slices (every edit's hook
    with reservations reads two a record), anything else by the strict reader (ValueError)."""
    from git_korus_mail.stamps import epoch, parse_stamp
    s = value
    if (isinstance(s, str) and len(s) == 27 and s.isascii() and s[4] == "-" and s[7] == "-" and s[10] == "T"
            and s[13] == ":" and s[16] == ":" and s[19] == "." and s[26] == "Z"
            and (s[:4] + s[5:7] + s[8:10] + s[11:13] + s[14:16] + s[17:19] + s[20:26]).isdigit()):
        return epoch(int(s[:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]),
                     int(s[17:19])) + int(s[20:26]) / 1e6
    return parse_stamp(s)


def _opt_str(v: object) -> bool:
    return v is None or isinstance(v, str)


# -- reading and deciding ------------------------------------------------------
def all_stored(root: "MailRoot") -> "List[Reservation]":
    """Every stored reservation, lapsed or not, oldest first."""
    out = []
    for rec in records.records(root):
        r = Reservation.from_record(rec)
        if r is not None:
            out.append(r)
    return out


def active(root: "MailRoot", now: "Optional[float]" = None) -> "List[Reservation]":
    """The reservations that hold now: lapsed ones (past their TTL, or their holder's client
    process gone) are left out."""
    now = time.time() if now is None else now
    return [r for r in all_stored(root) if r.lapsed(now) is None]


def is_mine(r: Reservation, session: "Optional[str]") -> bool:
    """A session's own reservations are its own (never told to it); the person's are the
    person's (session None)."""
    return r.holder == session


def conflicts(root: "MailRoot", paths: "Sequence[str]", mine: "Optional[str]" = None,
              now: "Optional[float]" = None, held: "Optional[List[Reservation]]" = None
              ) -> "List[Tuple[Reservation, List[str]]]":
    """[(reservation, the paths of `paths` it names)] for every active reservation of someone
    other than `mine` (a session id; None: the person) that names one of the repository-relative
    `paths`. `held`: the active reservations, when the caller has them already."""
    out = []
    for r in (active(root, now) if held is None else held):
        if is_mine(r, mine):
            continue
        hit = [p for p in paths if r.matches(p)]
        if hit:
            out.append((r, hit))
    return out


def overlapping(held: "Sequence[Reservation]", pathspecs: "Sequence[str]", mine: "Optional[str]"
                ) -> "List[Reservation]":
    """Others' reservations that a new one of `pathspecs` overlaps: one names a path the other
    names, as far as can be told without a file list (a pathspec of one matches the other's
    fixed leading part, either way). Told to the second, who may still reserve."""
    out = []
    for r in held:
        if is_mine(r, mine):
            continue
        if any(overlap(a, b) for a in pathspecs for b in r.pathspecs):
            out.append(r)
    return out


# -- making and ending ----------------------------------------------------------
class Holder:
    """Who reserves: a session (its id, its client process as `<client>:<tag>`, the client's
    name) or the person (session None, launch `session:<tag>` of the terminal)."""

    __slots__ = ("session", "launch", "client")

    def __init__(self, session: "Optional[str]", launch: "Optional[str]", client: "Optional[str]") -> None:
        self.session, self.launch, self.client = session, launch, client


def reserve(root: "MailRoot", pathspecs: "Sequence[str]", holder: Holder, box: str, worktree: str,
            branch: "Optional[str]", ttl_minutes: float = DEFAULT_TTL_MINUTES, note: str = "",
            block: bool = False, now: "Optional[float]" = None) -> "Tuple[Reservation, List[Reservation]]":
    """Store a new reservation; (it, the active reservations of others it overlaps, which the
    caller tells: advisory, never silent). Lapsed records are swept first (journaled `lapsed`)."""
    now = time.time() if now is None else now
    specs = check_pathspecs(pathspecs)
    if not 0 < ttl_minutes <= MAX_TTL_MINUTES:
        raise ValueError(f"--ttl must be 1 to {MAX_TTL_MINUTES} minutes")
    if len(note) > MAX_NOTE:
        raise ValueError(f"--note is {len(note)} characters, over {MAX_NOTE}")
    held = sweep(root, now)
    r = Reservation(records.new_id(now), tuple(specs), holder.session, holder.launch, holder.client, box,
                    worktree, branch, now, now + ttl_minutes * 60, note, block)
    records.create(root, r.record())
    root.journal("reserved", id=r.id, paths=list(r.pathspecs), session=r.holder, worktree=worktree,
                 branch=branch, until=r.record()["until"], block=block, note=note[:200] or None)
    return r, overlapping(held, specs, holder.session)


def sweep(root: "MailRoot", now: "Optional[float]" = None) -> "List[Reservation]":
    """End every lapsed reservation (journaled `lapsed`, with why) and clear a signal no record
    stands behind; the reservations that still hold."""
    now = time.time() if now is None else now
    keep, gone = [], []
    for r in all_stored(root):
        why = r.lapsed(now)
        if why is None:
            keep.append(r)
        else:
            gone.append((r, why))
    if gone:
        removed = set(records.remove(root, [r.id for r, _ in gone]))
        for r, why in gone:
            if r.id in removed:
                root.journal("lapsed", id=r.id, paths=list(r.pathspecs), session=r.holder, why=why)
    elif not keep and records.has_signal(root):
        records.clear_stale_signal(root)
    return keep


def drop(root: "MailRoot", what: "Sequence[str]", session: "Optional[str]", force: bool = False,
         now: "Optional[float]" = None) -> "Tuple[List[Reservation], List[str], List[Reservation]]":
    """End reservations: each of `what` names a reservation id, or a pathspec one of them was made
    with. Only the caller's own (`session`; None: the person's) unless `force`. Returns (ended,
    the words that named none, others' reservations they named, left standing without force)."""
    held = sweep(root, now)
    chosen: "Dict[str, Reservation]" = {}
    unmatched: "List[str]" = []
    refused: "Dict[str, Reservation]" = {}
    for w in what:
        hits = [r for r in held if r.id == w or w in r.pathspecs
                or (w.startswith("./") and w[2:] in r.pathspecs)]
        if not hits:
            unmatched.append(w)
        for r in hits:
            if force or is_mine(r, session):
                chosen[r.id] = r
            else:
                refused[r.id] = r
    removed = set(records.remove(root, list(chosen))) if chosen else set()
    ended = [r for rid, r in chosen.items() if rid in removed]
    for r in ended:
        root.journal("released", id=r.id, paths=list(r.pathspecs), session=r.holder, by=session,
                     forced=not is_mine(r, session) or None)
    return ended, unmatched, list(refused.values())


# -- before an edit (the clients' pre-tool hooks) ------------------------------
def repo_relative(path: str, cwd: str, common_dir: str) -> "Optional[str]":
    """`path` (absolute, or relative to `cwd`) as a path relative to the top of the worktree it
    lies in, when that worktree is one of the clone at `common_dir`; None otherwise (outside
    every worktree, another clone's, or where only git could say). A file not yet written is
    placed by its nearest existing directory. Pure Python (core/discover.py), no pygit2."""
    import os
    from git_korus_mail.core.discover import NotModelled, fast_locate
    full = os.path.normpath(os.path.join(cwd, path))
    probe = os.path.dirname(full)
    while probe and not os.path.isdir(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    try:
        loc = fast_locate(probe)
    except NotModelled:
        return None
    if loc is None or loc.worktree is None:
        return None
    if os.path.realpath(loc.common_dir) != os.path.realpath(common_dir):
        return None
    real = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
    rel = os.path.relpath(real, loc.worktree)
    if rel == "." or rel.startswith("../") or rel == "..":
        return None
    return rel.replace(os.sep, "/")


class BeforeEdit:
    """What a pre-tool hook answers for an edit of others' reserved paths: `text` (the tell, or
    a refusal's reason), `refuse` (the edit is refused through the client's decision field), and
    `told` (the advisory reservations whose told record the hook makes once its answer is out:
    record_told). A tuple's first two places stay (text, refuse) for older callers."""

    __slots__ = ("text", "refuse", "told")

    def __init__(self, text: str, refuse: bool, told: "Tuple[str, ...]" = ()) -> None:
        self.text, self.refuse, self.told = text, refuse, told

    def __getitem__(self, i: int) -> object:
        return (self.text, self.refuse)[i]

    def __repr__(self) -> str:
        return f"BeforeEdit(refuse={self.refuse!r}, told={self.told!r})"


def before_edit(root: "MailRoot", paths: "Sequence[str]", cwd: str, session: "Optional[str]",
                now: "Optional[float]" = None) -> "Optional[BeforeEdit]":
    """What a session about to edit `paths` (as its tool names them: absolute, or relative to
    `cwd`) must be told, or None when no other holder's active reservation names one of them
    or the session was told of every one that does. The one call a client's pre-tool hook
    makes (each client's, through commands/drain.py: docs/HOOKS.md, "Before an edit").

    The told-once refusal: the pinned clients show a pre-tool hook's context to the model only
    after the tool ran, or not at all, but every one of them honours a refusal before it
    (docs/CLIENTS.md, "Reservations before an edit"). So the first edit a session makes of an advisory reservation's paths is
    refused, its reason the tell and the word that repeating the edit goes through; once the
    hook's answer is out it records the session as told (record_told), and later edits of that
    reservation's paths go on in silence. A `--block` one refuses every time. Without a session
    (no one to record) the tell is context, as before, and nothing is refused for it.

    Lapsed records found here are swept (journaled `lapsed`) and a signal no record stands
    behind is removed: otherwise a session that reserved and exited would cost every later edit
    in the clone a Python start until someone ran `reserve` again."""
    now = time.time() if now is None else now
    stored = all_stored(root)
    held = [r for r in stored if r.lapsed(now) is None]
    if len(held) < len(stored) or not stored:
        sweep(root, now)
    rel = [r for r in (repo_relative(p, cwd, root.common_dir) for p in paths if isinstance(p, str) and p)
           if r is not None]
    if not rel:
        return None
    found = conflicts(root, rel, mine=session, now=now, held=held)
    if not found:
        return None
    if any(r.block for r, _ in found):
        return BeforeEdit(block_reason(found, cwd, now), True)
    if session is None:
        return BeforeEdit(tell(found, cwd, now), False)
    new = [(r, hit) for r, hit in found if not records.was_told(root, r.id, session)]
    if not new:
        return None  # told before, and it chose to go on: no word per edit (docs/HOOKS.md)
    return BeforeEdit(told_once_reason(new, cwd, now), True, tuple(r.id for r, _ in new))


def record_told(root: "MailRoot", told: "Sequence[str]", session: str, now: "Optional[float]" = None) -> "List[str]":
    """Record `session` as told of the reservations `told` (ids), after the refusal that told it
    was written out: never before, so a crash between the two leaves a session refused once
    more (harmless), never one recorded as told that was not. The ids recorded by this call."""
    from git_korus_mail.stamps import utc_stamp
    at = utc_stamp(time.time() if now is None else now)
    made = [rid for rid in told if records.mark_told(root, rid, session, at)]
    for rid in made:
        root.journal("told", id=rid, session=session)  # `log`: whom a refusal told, once
    return made


def root_of(start: str) -> "Optional[MailRoot]":
    """The mail root of the clone `start` lies in (the hook's cwd or --repo), None when it has
    none: found in pure Python where it can be (core/discover.py), pygit2 only where not."""
    from git_korus_mail.core.discover import NotModelled, fast_locate
    from git_korus_mail.store.files import MailRoot
    try:
        loc = fast_locate(start)
        common = loc.common_dir if loc is not None else None
    except NotModelled:
        from git_korus_mail.core.clone import Clone
        common = Clone(repo_opt=start).common_dir
    return MailRoot.open(common) if common is not None else None
