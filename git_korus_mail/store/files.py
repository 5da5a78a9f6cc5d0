"""The on-disk queue inside the clone's git common dir: the files backend of the store
(docs/STORE.md). MailRoot and Box live here, with reading. What else is done to a box is a
function over it in the module of its job, imported where it is used: its records in
records.py, its moves (consume, expire, cancel, repair) in moves.py, a limit's drop in
drops.py, publication in publish.py; the file names are in layout.py. This module imports none
of those (they import it): a Box has no method of theirs, and an event with an empty box loads
none of them (hot path).

Everything lives under `<git-common-dir>/mail/`: nothing under .git can enter a
commit, and it is no ref namespace, so `push --mirror` cannot carry it either.

State transitions of one message (each arrow is one link or unlink; a crash
between two of them is repaired by the next reader, see `moves.repair`):

    tmp/x --link--> inbox/<id>.json --unlink tmp/x                     (publish)
    inbox --claim--> receipt (excl. link) --link--> seen --unlink inbox (consume)
    inbox --claim--> link expired --> notice --> unlink inbox          (expire)

Exactly-once consumption rests on the receipt: `receipts/<id>.json` is created
exclusively (staged in tmp/ and hard-linked into place, which fails when it exists,
and never leaves a torn receipt), so at most one session ever consumes a message,
whatever the claims did. A receipt exists iff the message reached seen/.
"""

import os
import stat
import time

from git_korus_mail.errors import MailError
# the refusals callers outside store/ catch: re-exported (`as`) so they never import fsafe
from git_korus_mail.store.fsafe import SMALL_FILE, Dir  # noqa: F401 - SMALL_FILE: for callers
from git_korus_mail.store.fsafe import NotOwned as NotOwned, NotRegular as NotRegular, TooLarge as TooLarge
from git_korus_mail.store.layout import (ARRIVED, BOX_SUBDIRS, CANCELLED, FAST_DIR, FINAL, MAIL_DIR, MSG_SUFFIX, OFF_FILE,  # noqa: F401 - for callers
                                         PRUNE_EVERY, PRUNED_STAMP, PRUNING_DIR, TMP_MAX_AGE, WATCH_DIR, WHY_SUFFIX,
                                         WORKTREE_FILE, mail_root_path, quarantine_name,
                                         staging_name)
# stamps, message, journal: loaded where used (hot path)

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

    from git_korus_mail.store.journal import Cursor
    from git_korus_mail.store.message import Message


class MailRoot:
    """`<common>/mail/`, opened safely. `create=False` returns None from `open` when absent."""

    def __init__(self, common_dir: str, root_dir: Dir) -> None:
        self.common_dir = common_dir
        self.dir = root_dir
        self.path = root_dir.path
        self._tmp: "Optional[Dir]" = None
        self.journal_faults: "list[str]" = []  # journal appends that failed, for the caller to report

    def take_journal_faults(self) -> "list[str]":
        """The journal faults so far, once each (deduplicated, in order)."""
        out = list(dict.fromkeys(self.journal_faults))
        self.journal_faults = []
        return out

    @classmethod
    def open(cls, common_dir: str, create: bool = False) -> "Optional[MailRoot]":
        path = mail_root_path(common_dir)
        try:
            d = Dir.open_path(path, create=create)
        except FileNotFoundError:
            if create:
                raise MailError(f"cannot create {path}") from None
            return None
        return cls(common_dir, d)

    # -- global switches and staging ---------------------------------------
    def close(self) -> None:
        self.dir.close()

    def lstat(self, name: str) -> "os.stat_result":
        """lstat of a file directly under the mail root (doctor checks the journal's files)."""
        return self.dir.lstat(name)

    def read_journal(self, limit: "Optional[int]" = None) -> "list[dict[str, Any]]":
        """The journal's records, oldest first (see journal.read)."""
        from git_korus_mail.store import journal
        return journal.read(self.dir, limit=limit)

    def read_journal_since(self, cursor: "Optional[Cursor]" = None
                           ) -> "tuple[list[dict[str, Any]], Cursor]":
        """The records written since `cursor` (None: all) and the cursor after them, across a
        rotation (journal.read_new: `log --follow`)."""
        from git_korus_mail.store import journal
        return journal.read_new(self.dir, cursor)

    def has_stamp(self, key: str) -> bool:
        """Whether the fast path's stamp `key` (store/fastpath.py) exists: one lstat."""
        return os.path.lexists(os.path.join(self.path, FAST_DIR, key))

    def is_off(self) -> bool:
        return self.dir.exists(OFF_FILE)

    def set_off(self, off: bool) -> bool:
        if off:
            from git_korus_mail.stamps import utc_stamp
            try:
                self.dir.create_exclusive(OFF_FILE, f"delivery turned off at {utc_stamp(time.time())}\n".encode())
                return True
            except FileExistsError:
                return False
        return self.dir.unlink_quiet(OFF_FILE)

    @property
    def tmp(self) -> Dir:
        if self._tmp is None:
            self._tmp = self.dir.ensure_sub("tmp")
        return self._tmp

    def journal(self, event: str, **fields: "Any") -> bool:
        """Append a journal line; True when written. Never raises for a journal that cannot be
        written: the journal is history, the links and receipts are the truth, so a failed line
        must not turn a done move into a reported failure. The fault is kept in
        `journal_faults` for the caller to report (docs/HOOKS.md)."""
        from git_korus_mail.store import journal
        try:
            journal.append(self.dir, event, **fields)
            return True
        except (OSError, MailError) as exc:
            text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            self.journal_faults.append(f"journal line not written ({event}): {text}")
            return False
        except Exception as exc:  # noqa: BLE001 - e.g. portalocker's timeout while rotating: reported, not fatal
            self.journal_faults.append(f"journal trouble after {event}: {type(exc).__name__}: {exc}")
            return False

    # -- boxes ---------------------------------------------------------------
    def boxes_dir(self, create: bool = False) -> "Optional[Dir]":
        if create:
            return self.dir.ensure_sub("box")
        return self.dir.open_sub("box")

    def box(self, key_name: str, create: bool = False, path: "Optional[str]" = None,
            adopt: "Optional[Callable[[Box], None]]" = None) -> "Optional[Box]":
        """The box named `key_name`; None when it does not exist and create is False.

        `adopt`, when given, is called with a box first made here for a worktree (or whose first
        use a killed process left unfinished): the caller's `forwarding.first_use(box, identity)`,
        so that the box adopts the queue of that worktree's older box. A callback, because
        forwarding.py imports this module, and because only a new box needs it loaded (hot path)."""
        boxes = self.boxes_dir(create=create)
        if boxes is None:
            return None
        d = boxes.ensure_sub(key_name) if create else boxes.open_sub(key_name)
        if d is None:
            return None
        box = Box(self, key_name, d)
        # `worktree` is the last file a box's first use writes, so its presence says all of it
        # was done: one stat per hook event, not a read, and no scan unless the box is new
        if create and path is not None and not d.exists(WORKTREE_FILE):
            self._first_use(box, path, adopt)
        return box

    def _first_use(self, box: "Box", path: str, adopt: "Optional[Callable[[Box], None]]") -> None:
        """Record the path; then `adopt` takes over a moved worktree's queue and records the
        worktree identity (forwarding.first_use).

        A process killed anywhere in here leaves `worktree` absent, so the next one redoes it all
        (each step is idempotent: see forwarding)."""
        if not box.dir.exists("path"):
            # the box name is a hash of this very path; write_replace: complete or absent, never torn
            box.dir.write_replace("path", (path + "\n").encode("utf-8", "surrogateescape"), self.tmp)
        if adopt is not None:  # who it belongs to is for a caller that knows (the drain always does)
            adopt(box)

    def box_names(self) -> "list[str]":
        boxes = self.boxes_dir()
        if boxes is None:
            return []
        return sorted(n for n in boxes.names() if not n.startswith("."))

    def boxes(self) -> "list[Box]":
        """Every box that can be opened, in name order. One the store refuses (a symlink, another
        user's, group-writable: MailError) is left out, so a bad directory hides only itself
        from a listing; doctor names it (commands/doctor.py walks box_names itself for that)."""
        out: "list[Box]" = []
        for name in self.box_names():
            try:
                box = self.box(name)
            except MailError:
                continue
            if box is not None:
                out.append(box)
        return out

    def tmp_entries(self) -> "list[tuple[str, os.stat_result]]":
        """[(name, lstat)] of the staging area, without creating it (doctor, uninstall)."""
        tmp = self.dir.open_sub("tmp")
        out: "list[tuple[str, os.stat_result]]" = []
        if tmp is None:
            return out
        for name in tmp.names():
            try:
                out.append((name, tmp.lstat(name)))
            except FileNotFoundError:
                continue
        return out

    def tmp_path(self) -> str:
        return os.path.join(self.path, "tmp")

    def ensure_dir_path(self, name: str) -> str:
        """The path of `name` directly under the mail root, made (0700) when absent (install's hooks/)."""
        return self.dir.ensure_sub(name).path

    def sweep_tmp(self, now: "Optional[float]" = None) -> int:
        """Remove staging files older than 36 h: the only thing a crashed sender leaves."""
        now = time.time() if now is None else now
        removed = 0
        for name in self.tmp.names():
            try:
                st = self.tmp.lstat(name)
            except FileNotFoundError:
                continue
            if now - st.st_mtime > TMP_MAX_AGE and not stat.S_ISDIR(st.st_mode):
                removed += self.tmp.unlink_quiet(name)
        return removed


class Box:
    """One recipient's box: its directories and the reading of them. Subdirectories are opened
    lazily and created on first need. What is done to a box (records.py, moves.py, drops.py,
    publish.py, and the rest of store/) are functions over it, which files.py never imports."""

    def __init__(self, root: MailRoot, name: str, d: Dir) -> None:
        self.root = root
        self.name = name
        self.dir = d
        self._subs: "dict[str, Dir]" = {}

    def may_need_repair(self) -> bool:
        """Whether claiming/ holds anything: only then can moves.repair have work (a dead
        mover's half-done move). One directory read that spares an event with an empty box
        loading moves.py (hot path)."""
        claiming = self.open_sub("claiming")
        return claiming is not None and bool(claiming.names())

    def inbox_mtime_ns(self) -> "Optional[int]":
        """The inbox's mtime in ns, None without an inbox. Taken before a listing, it dates what
        the listing saw (the fast path's stamp, store/fastpath.py): the same open directory
        serves both."""
        d = self.open_sub("inbox")
        return None if d is None else os.fstat(d.fd).st_mtime_ns

    def prune_due(self, now: float) -> bool:
        """Whether retention (store/retention.py) should prune this box now: its last prune is a
        day old (or none ran), and it holds a final state, an unfinished prune, or records that
        can outlive their use (sent, quarantine, sessions, arrived). A stat or a few, asked at every
        opening show, so here and not in retention.py (hot path)."""
        try:
            if now - self.dir.lstat(PRUNED_STAMP).st_mtime < PRUNE_EVERY:
                return False
        except FileNotFoundError:
            pass
        if any(self.dir.exists(sub) for sub in FINAL + (PRUNING_DIR,)):
            return True
        # records alone are no older than their box: a box made today has none to prune
        try:
            young = now - self.dir.lstat(WORKTREE_FILE).st_mtime < PRUNE_EVERY
        except FileNotFoundError:
            young = False
        return not young and any(self.dir.exists(sub) for sub in ("sent", "quarantine", "sessions", ARRIVED))

    def has_arrivals(self) -> bool:
        """Whether relayed mail ever arrived in this box (arrived/ exists): one directory open
        that spares a drain judging local mail loading store/arrivals.py (hot path)."""
        return self.open_sub(ARRIVED) is not None

    def has_watchers(self) -> bool:
        """Whether any launch of this box ever armed a wake-up watcher (watch/ exists): one
        directory open that spares a prompt loading store/watch.py when none did (hot path)."""
        return self.open_sub(WATCH_DIR) is not None

    def nothing_to_show(self) -> bool:
        """Whether the inbox holds no file at all and no move is half done (no claim): a show then
        has nothing to offer, repair or quarantine. Two directory reads (hot path)."""
        return not self.names("inbox") and not self.names("claiming")

    def ensure_sub(self, name: str) -> Dir:
        """A subdirectory, created when absent: for writers only."""
        d = self._subs.get(name)
        if d is None:
            d = self._subs[name] = self.dir.ensure_sub(name)
        return d

    def open_sub(self, name: str) -> "Optional[Dir]":
        """A subdirectory, or None when absent. Never creates: what every read uses."""
        d = self._subs.get(name)
        if d is None:
            d = self.dir.open_sub(name)
            if d is not None:
                self._subs[name] = d
        return d

    def has(self, sub: str, name: str) -> bool:
        """Whether `sub/name` exists; an absent subdirectory is not created to find out."""
        d = self.open_sub(sub)
        return d is not None and d.exists(name)

    def path_of(self, sub: str) -> str:
        """Where `sub` is or would be, for messages to people and to the model (never opened)."""
        return os.path.join(self.dir.path, sub)

    def ensure_inbox(self) -> None:
        """Open (making) the inbox: a refused one (symlink, owner, mode) raises MailError here."""
        self.ensure_sub("inbox")

    def recorded_path(self) -> "Optional[str]":
        try:
            data, _ = self.dir.read_regular("path", 64 * 1024)
        except (FileNotFoundError, NotRegular, TooLarge):
            return None
        return data.decode("utf-8", "surrogateescape").rstrip("\n")

    def names(self, sub: str) -> "list[str]":
        d = self.open_sub(sub)
        return d.names() if d is not None else []

    def inbox_ids(self) -> "tuple[list[str], list[str]]":
        """Queued ids, oldest first. Names not shaped like a message are returned separately."""
        ids: "list[str]" = []
        odd: "list[str]" = []
        names = self.names("inbox")
        if names:
            from git_korus_mail.store.message import valid_id
        for n in names:
            if n.endswith(MSG_SUFFIX) and valid_id(n[:-len(MSG_SUFFIX)]):
                ids.append(n[:-len(MSG_SUFFIX)])
            elif not n.startswith("."):
                odd.append(n)  # junk by its name alone: it never sorts ahead of real mail
        ids.sort()
        return ids, odd

    def clear_notices(self, names: "list[str]") -> None:
        """Remove expiry notices once told; here, not in records.py: every show runs it (hot path)."""
        d = self.open_sub("notices")
        if d is not None:
            for name in names:
                d.unlink_quiet(name)

    def count(self, sub: str) -> int:
        return sum(1 for n in self.names(sub) if not n.startswith("."))

    # -- reading one message -------------------------------------------------
    def load(self, msg_id: str, sub: str = "inbox") -> "tuple[Message, os.stat_result]":
        """Read and validate a message. Raises Invalid / NotRegular / TooLarge / FileNotFoundError."""
        d = self.open_sub(sub)
        if d is None:
            raise FileNotFoundError(msg_id)
        from git_korus_mail.store.message import MAX_FILE_BYTES, parse
        data, st = d.read_regular(msg_id + MSG_SUFFIX, MAX_FILE_BYTES)
        return parse(data, expected_id=msg_id), st
