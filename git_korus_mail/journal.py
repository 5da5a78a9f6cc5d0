"""The append-only journal: one JSON line per event, every one with its time.

Lines are single O_APPEND writes, so concurrent writers interleave whole lines.
The file is rotated past a size bound; rotation takes a lock (portalocker) so two
writers cannot both rotate and lose the older half. The lock is imported only
then, which keeps it off the hook hot path.
"""

import os
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.message import utc_stamp

NAME = "journal.jsonl"
ROTATED = "journal.1.jsonl"
MAX_BYTES = 4 * 1024 * 1024


def append(root_dir, event, **fields):
    """Record `event` (sent, shown, consumed, expired, quarantined, claim-broken, ...)."""
    rec = {"at": utc_stamp(time.time()), "event": event}
    rec.update({k: v for k, v in fields.items() if v is not None})
    line = (json.dumps(rec, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")
    fd = os.open(NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                 0o600, dir_fd=root_dir.fd)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o077:
            os.fchmod(fd, 0o600)
        os.write(fd, line)
        size = st.st_size + len(line)
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        _rotate(root_dir)


def _rotate(root_dir):
    import portalocker
    lock_path = os.path.join(root_dir.path, "journal.lock")
    # NON_BLOCKING makes portalocker retry until the timeout (a blocking lock ignores it, and warns)
    flags = portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
    with portalocker.Lock(lock_path, mode="a", timeout=5, flags=flags):
        try:
            if os.stat(NAME, dir_fd=root_dir.fd).st_size <= MAX_BYTES:
                return  # another writer rotated while we waited
        except FileNotFoundError:
            return
        os.rename(NAME, ROTATED, src_dir_fd=root_dir.fd, dst_dir_fd=root_dir.fd)


def read(root_dir, limit=None):
    """Journal records, oldest first (the rotated half, then the live one)."""
    out = []
    for name in (ROTATED, NAME):
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=root_dir.fd)
        except FileNotFoundError:
            continue
        with os.fdopen(fd, "rb") as f:
            for raw in f:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue  # a torn line from a killed writer: skip, never fail a report
                if isinstance(rec, dict):
                    out.append(rec)
    return out[-limit:] if limit else out
