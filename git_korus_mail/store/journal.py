"""The append-only journal: one JSON line per event, every one with its time.

Lines are single O_APPEND writes, so concurrent writers interleave whole lines.
The file is rotated past a size bound; rotation takes a lock (portalocker) so two
writers cannot both rotate and lose the older half. The lock is imported only
then, which keeps it off the hook hot path.

The journal and its lock are files in the store like any other, so they get the
same rules (docs/CONTRACT.md): opened without following a symlink and without
blocking (a FIFO planted there must hang nothing), and used only when they are a
regular file of ours with one link. A hard link to some victim file is refused:
never appended to, never chmod-ed. The journal is history, not truth: receipts
and links are (see core/report.py), so a refused journal costs lines, never mail.
"""

import errno
import os
import stat
import time

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Iterator, Optional

    from git_korus_mail.store.fsafe import Dir

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.errors import MailError
from git_korus_mail.stamps import utc_stamp

NAME = "journal.jsonl"
ROTATED = "journal.1.jsonl"
MAX_BYTES = 4 * 1024 * 1024


LOCK = "journal.lock"
LOCK_TIMEOUT = 5  # seconds a rotator waits for another one
_NOFOLLOW = os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def append(root_dir: "Dir", event: str, **fields: "Any") -> None:
    """Record `event` (sent, shown, consumed, expired, quarantined, claim-broken, ...).

    Raises MailError for a journal that is not a plain file of ours, OSError when it
    cannot be written."""
    rec = {"at": utc_stamp(time.time()), "event": event}
    rec.update({k: v for k, v in fields.items() if v is not None})
    line = (json.dumps(rec, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")
    fd = open_own(root_dir, NAME, os.O_WRONLY | os.O_APPEND, rotated_ok=True)
    for _ in range(3):
        if os.fstat(fd).st_nlink != 0:
            break
        # rotated away twice between our open and now (renamed to .1, then renamed over):
        # the name holds a newer file, which is where this line belongs
        os.close(fd)
        fd = open_own(root_dir, NAME, os.O_WRONLY | os.O_APPEND, rotated_ok=True)
    try:
        size = os.fstat(fd).st_size
        os.write(fd, line)
        size += len(line)
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        _rotate(root_dir)


def open_own(root_dir: "Dir", name: str, flags: int, rotated_ok: bool = False) -> int:
    """Open (creating 0600) a file of the mail root that must be a regular file of ours with
    one link; the returned fd has mode 0600 whatever the umask. MailError otherwise.
    `rotated_ok`: no links is no refusal (a rotation unlinked it after our open; append retries)."""
    path = os.path.join(root_dir.path, name)
    try:
        fd = os.open(name, flags | os.O_CREAT | _NOFOLLOW, 0o600, dir_fd=root_dir.fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MailError(f"{path} is a symlink; refusing to follow it") from None
        if exc.errno == errno.ENXIO:
            raise MailError(f"{path} is a fifo, not a file; refusing it") from None
        if exc.errno == errno.EACCES:
            fd = _reopen_unwritable(root_dir, name, flags, path)
        else:
            raise
    try:
        st = os.fstat(fd)
        problem = None if (rotated_ok and st.st_nlink == 0) else refusal(st)
        if problem:
            raise MailError(f"{path} {problem}; refusing to write into it")
        if stat.S_IMODE(st.st_mode) != 0o600:
            os.fchmod(fd, 0o600)  # a umask of 0277 made it 0400 once: that must not last
    except BaseException:
        os.close(fd)
        raise
    return fd


def refusal(st: os.stat_result) -> "Optional[str]":
    """Why a journal file with this stat is not ours to use, or None."""
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by you"
    if st.st_nlink != 1:
        return f"has {st.st_nlink} links (a hard link to another file)"
    return None


def _reopen_unwritable(root_dir: "Dir", name: str, flags: int, path: str) -> int:
    """Our own journal left read-only (an old run under umask 0277): checked through a
    read-only fd, made 0600, then opened again as asked."""
    try:
        ro = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=root_dir.fd)
    except OSError as exc:
        raise MailError(f"cannot open {path}: {exc.strerror}") from None
    try:
        st = os.fstat(ro)
        problem = refusal(st)
        if problem:
            raise MailError(f"{path} {problem}; refusing to write into it")
        os.fchmod(ro, 0o600)
    finally:
        os.close(ro)
    return os.open(name, flags | _NOFOLLOW, dir_fd=root_dir.fd)


def _rotate(root_dir: "Dir") -> None:
    import portalocker
    fd = open_own(root_dir, LOCK, os.O_RDWR)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                portalocker.lock(fd, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
                break
            except portalocker.LockException:
                if time.monotonic() >= deadline:
                    raise MailError(f"{os.path.join(root_dir.path, LOCK)}: held by another writer for "
                                    f"{LOCK_TIMEOUT}s; journal not rotated") from None
                time.sleep(0.01)
        try:
            st = os.stat(NAME, dir_fd=root_dir.fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if st.st_size <= MAX_BYTES or refusal(st):
            return  # another writer rotated while we waited (or it is not ours to move)
        os.rename(NAME, ROTATED, src_dir_fd=root_dir.fd, dst_dir_fd=root_dir.fd)
    finally:
        os.close(fd)  # closing drops the lock


def has(root_dir: "Dir", event: str, msg_id: str) -> bool:
    """True when the journal holds an `event` line for message `msg_id`. Reads both halves
    (at most 2 x MAX_BYTES): for repairs of a dead process's work, never for a hot path."""
    needle = json.dumps(msg_id).encode("ascii", "backslashreplace")
    for name in (ROTATED, NAME):
        for raw in _lines(root_dir, name):
            if needle not in raw:
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("event") == event and rec.get("id") == msg_id:
                return True
    return False


# What a report reads of each half: its last READ_BOUND bytes. A half is at most MAX_BYTES and a
# line when rotation works; when it cannot (its lock held past LOCK_TIMEOUT, again and again) the
# live file grows, and `status` or a repair must still cost what a normal journal costs, never a
# read of all of it (issue 26: a 1 GB journal made `status` take 101 s and 4.4 GB of memory).
READ_BOUND = 2 * MAX_BYTES


def _lines(root_dir: "Dir", name: str) -> "Iterator[bytes]":
    """The lines of the last READ_BOUND bytes of the journal file `name`, the first whole one on."""
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=root_dir.fd)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if refusal(st):
            return
        if st.st_size > READ_BOUND:
            f.seek(st.st_size - READ_BOUND - 1)
            f.readline()  # the rest of a line cut by the bound (or the newline just before it)
        yield from f


def read(root_dir: "Dir", limit: "Optional[int]" = None) -> "list[dict[str, Any]]":
    """Journal records, oldest first (the rotated half, then the live one), from the last
    READ_BOUND bytes of each; with `limit`, the rotated half only when the live one has fewer.
    A journal that is no regular file of ours is skipped: reports never block on it or read a
    victim."""
    halves: "list[list[dict[str, Any]]]" = []
    for name in (NAME, ROTATED):  # newest first, so a limit met by the live half reads no more
        recs = []
        for raw in _lines(root_dir, name):
            try:
                rec = json.loads(raw)
            except ValueError:
                continue  # a torn line from a killed writer: skip, never fail a report
            if isinstance(rec, dict):
                recs.append(rec)
        halves.insert(0, recs)
        if limit and sum(len(h) for h in halves) >= limit:
            break
    out = [rec for half in halves for rec in half]
    return out[-limit:] if limit else out


class Cursor:
    """Where a reader of the journal stands: the live file (device, inode) and the offset of the
    first byte it has not read. A rotation renames that file to ROTATED, so a cursor whose inode
    is no longer the live one finishes the rotated file first (`log --follow`, docs/STORE.md)."""

    __slots__ = ("dev", "ino", "offset")

    def __init__(self, dev: int = -1, ino: int = -1, offset: int = 0) -> None:
        self.dev, self.ino, self.offset = dev, ino, offset


def read_new(root_dir: "Dir", cursor: "Optional[Cursor]" = None) -> "tuple[list[dict[str, Any]], Cursor]":
    """The records written since `cursor` (None: every record, oldest first) and the cursor after
    them. Only whole lines are taken: a line still being written (or torn by a killed writer and
    not yet followed by another) waits for its newline. It only reads."""
    records: "list[dict[str, Any]]" = []
    after = Cursor(cursor.dev, cursor.ino, cursor.offset) if cursor is not None else Cursor()
    live = _open_read(root_dir, NAME)
    if live is None:
        return records, _rest_of_rotated(root_dir, after, records)  # the next append makes it again
    try:
        st = os.fstat(live)
        if (st.st_dev, st.st_ino) != (after.dev, after.ino):
            _rest_of_rotated(root_dir, after, records)
            after = Cursor(st.st_dev, st.st_ino, 0)
        after.offset += _take(live, after.offset, records)
        return records, after
    finally:
        os.close(live)


def _rest_of_rotated(root_dir: "Dir", after: "Cursor", records: "list[dict[str, Any]]") -> "Cursor":
    """The live file is not the one the cursor stood in: that one was rotated (read the rest of
    it), or this is the first read (all of the rotated half), or it was rotated twice since the
    last read (the file we stood in is gone, and the rotated one is wholly new to us)."""
    rotated = _open_read(root_dir, ROTATED)
    if rotated is None:
        return after
    try:
        st = os.fstat(rotated)
        start = after.offset if (st.st_dev, st.st_ino) == (after.dev, after.ino) else 0
        return Cursor(st.st_dev, st.st_ino, start + _take(rotated, start, records))
    finally:
        os.close(rotated)


def _open_read(root_dir: "Dir", name: str) -> "Optional[int]":
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=root_dir.fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            return None
        raise
    if refusal(os.fstat(fd)):
        os.close(fd)
        return None
    return fd


def _take(fd: int, offset: int, into: "list[dict[str, Any]]") -> int:
    """Append the records of the whole lines from `offset` on; the bytes consumed."""
    used = 0
    with os.fdopen(os.dup(fd), "rb") as f:
        f.seek(offset)
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # not yet whole: read again next time from its start
            used += len(raw)
            try:
                rec = json.loads(raw)
            except ValueError:
                continue  # a torn line followed by others: skipped, as `read` does
            if isinstance(rec, dict):
                into.append(rec)
    return used
