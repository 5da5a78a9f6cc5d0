"""File reservations on disk: one record per reservation, and the stub's signal (docs/STORE.md,
"Reservations").

    mail/RESERVED                   exists while any record may exist (the hook stub's one test)
    mail/reservations/<id>.json     one reservation, written whole once (staged, then linked)
    mail/reservations/<id>.told-<session key>
                                    that session was told of it (create-only; ends with it)

A record is never rewritten: a reservation ends by the unlink of its file (dropped, or swept
once lapsed), so a relay can carry the records as they are, create-only, like messages.

The signal is kept honest by order and one lock (flock on reservations/ itself, which a killed
process cannot keep): a reserve makes the signal *before* it links the record, and an end
removes the signal only *after* it saw, under the lock, that no record is left. A crash can
therefore leave a signal without records (the next edit's hook starts Python once, finds
nothing, and costs no more than that), never a record without the signal, which would let the
stub skip a live reservation. Without working locks the signal is never removed.

A told record says one session's model was told of one reservation before an edit (the
told-once refusal: docs/HOOKS.md, "Before an edit"). It is made only after the telling answer
was written, create-only (two parallel hooks of one session: one makes it, the other finds it
made), under the lock and only while its reservation's record stands, and it is unlinked before
that record is: so no told record outlives its reservation, and a reservation dropped and made
again (a new id) is told again.
"""

import os
import time

from git_korus_mail import crash
from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.store.fsafe import Dir

SIGNAL = "RESERVED"
DIR = "reservations"
SUFFIX = ".json"
FORMAT_VERSION = 1
MAX_RECORDS = 1000      # records read at most per look: a bounded match on the hook path
LOCK_PATIENCE = 10.0    # seconds a writer waits for the lock (held for a few file operations; polled)
_ID_CHARS = frozenset("0123456789abcdefTZ-")
TOLD = ".told-"         # <id>.told-<session key>: that session was told of reservation <id>
_KEY_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_")


def new_id(now: float) -> str:
    """`<UTC time>-<8 hex>`: sorts by creation, unique without coordination."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + "-" + os.urandom(4).hex()


def valid_id(rid: "Any") -> bool:
    return isinstance(rid, str) and 10 <= len(rid) <= 40 and set(rid) <= _ID_CHARS


def encode(rec: "Dict[str, Any]") -> bytes:
    """The record's bytes: sorted keys, 7-bit (tests/test_reservations.py pins them)."""
    return (json.dumps(rec, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")


def has_signal(root: "MailRoot") -> bool:
    return root.dir.exists(SIGNAL)


def create(root: "MailRoot", rec: "Dict[str, Any]") -> None:
    """Store a new reservation (`rec["id"]` names it): the signal first, then the record,
    staged in tmp/ and linked, so no reader ever sees a torn one. FileExistsError for an id
    already stored."""
    if not valid_id(rec.get("id")):
        raise ValueError("a reservation needs a valid id")
    d = root.dir.ensure_sub(DIR)
    fd = _lock(d)
    if fd is None:
        # an end holding the lock may be about to remove the signal: never link behind its back
        from git_korus_mail.errors import MailError
        raise MailError("the reservations are busy (another reserve or drop holds their lock): try again")
    try:
        if not root.dir.exists(SIGNAL):
            try:
                root.dir.create_exclusive(SIGNAL, b"reservations exist (docs/STORE.md)\n", sync=False)
            except FileExistsError:
                pass
        crash.point("reserve:signaled")
        d.create_staged(rec["id"] + SUFFIX, encode(rec), root.tmp, "reserve")
    finally:
        _unlock(fd)


def records(root: "MailRoot", limit: int = MAX_RECORDS) -> "List[Dict[str, Any]]":
    """Every stored record, oldest first, at most `limit` of them; a file that is not a record
    of ours is skipped (read as absent, as the store reads every small record)."""
    d = root.dir.open_sub(DIR)
    if d is None:
        return []
    out: "List[Dict[str, Any]]" = []
    try:
        for name in sorted(d.names())[:limit]:
            if not name.endswith(SUFFIX) or not valid_id(name[:-len(SUFFIX)]):
                continue
            rec = d.read_json(name)
            if isinstance(rec, dict) and rec.get("v") == FORMAT_VERSION and rec.get("id") == name[:-len(SUFFIX)]:
                out.append(rec)
    finally:
        d.close()
    return out


def remove(root: "MailRoot", ids: "List[str]") -> "List[str]":
    """End the reservations `ids` (unlink their records, their told records first); the ids this
    call removed. Then, under the same lock, the signal goes when no record is left."""
    d = root.dir.open_sub(DIR)
    if d is None:
        return []
    fd = _lock(d)
    try:
        _unlink_told(d, ids)
        gone = [rid for rid in ids if valid_id(rid) and d.unlink_quiet(rid + SUFFIX)]
        crash.point("release:unlinked")
        if fd is not None and fd >= 0 and not any(n.endswith(SUFFIX) for n in d.names()):
            crash.point("release:looked")  # the gap the lock closes: a reserve now would be hidden
            root.dir.unlink_quiet(SIGNAL)
        return gone
    finally:
        _unlock(fd)
        d.close()


def told_key(session: str) -> str:
    """A session id as a file name's part: itself when it is plainly one (the clients' ids are
    UUIDs), else `h` and a digest of it (an id someone chose names no other file)."""
    if 0 < len(session) <= 80 and set(session) <= _KEY_CHARS:
        return session
    import hashlib
    return "h" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def told_name(rid: str, session: str) -> str:
    return rid + TOLD + told_key(session)


def encode_told(rid: str, session: str, at: str) -> bytes:
    """A told record's bytes (tests/test_reserve_told.py pins them)."""
    return encode({"v": FORMAT_VERSION, "id": rid, "session": session, "at": at})


def was_told(root: "MailRoot", rid: str, session: str) -> bool:
    """Whether `session` was told of reservation `rid` (one stat: the hook's path)."""
    return valid_id(rid) and root.dir.exists(DIR + "/" + told_name(rid, session))


def mark_told(root: "MailRoot", rid: str, session: str, at: str) -> bool:
    """Record that `session` was told of reservation `rid`, create-only; True when this call
    made the record. Under the lock, and only while the reservation's record stands: a drop that
    holds the lock has unlinked (or will unlink) the told records before the record, so none is
    left behind. False (nothing made) when it was made already, the reservation is gone, or the
    lock stayed busy: the session is then refused once more, which is harmless."""
    if not valid_id(rid):
        return False
    d = root.dir.open_sub(DIR)
    if d is None:
        return False
    fd = _lock(d)
    try:
        if fd is None or not d.exists(rid + SUFFIX):
            return False
        try:
            d.create_staged(told_name(rid, session), encode_told(rid, session, at), root.tmp, "told", sync=False)
        except FileExistsError:
            return False  # a parallel hook of the same session recorded it: it was told too
        return True
    finally:
        _unlock(fd)
        d.close()


def _unlink_told(d: "Dir", ids: "List[str]") -> None:
    """Unlink the told records of `ids`, and any whose reservation's record is gone (a told
    record made without the lock: none is, but a file system without locks has no lock)."""
    names = d.names()
    stored = {n[:-len(SUFFIX)] for n in names if n.endswith(SUFFIX)}
    ending = set(ids)
    for n in names:
        rid, sep, _ = n.partition(TOLD)
        if sep and (rid in ending or rid not in stored):
            d.unlink_quiet(n)


def clear_stale_signal(root: "MailRoot") -> bool:
    """Remove a signal no record stands behind (a crash between its steps); True when removed."""
    d = root.dir.open_sub(DIR)
    if d is None:
        # no directory: no record can exist, and a reserve makes the directory before the signal
        return root.dir.unlink_quiet(SIGNAL)
    fd = _lock(d)
    try:
        if fd is not None and fd >= 0 and not any(n.endswith(SUFFIX) for n in d.names()):
            _unlink_told(d, [])
            return root.dir.unlink_quiet(SIGNAL)
        return False
    finally:
        _unlock(fd)
        d.close()


def _lock(d: "Dir") -> "Optional[int]":
    """flock(2) on a descriptor of reservations/ (exclusive): the descriptor; None when it
    stayed busy; -1 when this file system has no locks. Neither None nor -1 may remove the
    signal (its callers check)."""
    import fcntl
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0), dir_fd=d.fd)
    pause, waited = 0.002, 0.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if waited >= LOCK_PATIENCE:
                os.close(fd)
                return None
        except OSError:
            os.close(fd)
            return -1
        time.sleep(pause)
        waited += pause
        pause = min(pause * 2, 0.01)  # short: a long sleep loses the lock to busier writers


def _unlock(fd: "Optional[int]") -> None:
    if fd is not None and fd >= 0:
        os.close(fd)  # closing the descriptor drops its flock


def told_records(root: "MailRoot") -> "List[Tuple[str, bool]]":
    """(told record's name, whether its reservation's record stands) for each told record: doctor."""
    d = root.dir.open_sub(DIR)
    if d is None:
        return []
    try:
        names = d.names()
    finally:
        d.close()
    stored = {n[:-len(SUFFIX)] for n in names if n.endswith(SUFFIX)}
    return [(n, n.partition(TOLD)[0] in stored) for n in sorted(names) if TOLD in n]


def counts(root: "MailRoot") -> "Tuple[bool, int]":
    """(signal present, record files) for doctor and tests."""
    d = root.dir.open_sub(DIR)
    n = 0
    if d is not None:
        n = sum(1 for name in d.names() if name.endswith(SUFFIX))
        d.close()
    return has_signal(root), n
