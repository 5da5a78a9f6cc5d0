"""The store's wake-up FIFOs, one implementation for both of its kinds (docs/STORE.md): the
watcher's `watch/.<session>@<launch>.signal` (store/watch.py) and the waiting ask's
`mail/waits/<qid>.signal` (store/answers.py). A FIFO here is a wake-up only, never data: the
waiter still reads the records it waits for, so a lost or extra byte costs at most a look.

Loaded by store/watch.py, which the hook's hot path may import: nothing here is imported at
module level but os, which every Python start has already loaded.
"""

import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Optional

    from git_korus_mail.store.fsafe import Dir

# O_CLOEXEC: no process the waiter or the poker starts inherits the descriptor
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_fifo(d: "Dir", name: str) -> "Optional[int]":
    """The waiter's end of the FIFO `name` in `d`, made 0600 if missing: a descriptor that becomes
    readable when someone pokes it, or None where no FIFO can be had (the caller then only polls).
    Opened read and write, so it never reads an end of file; one left by a killed waiter serves
    again once proved a FIFO of ours (a FIFO, owned by this user)."""
    import stat
    try:
        try:
            os.mkfifo(name, 0o600, dir_fd=d.fd)
            os.chmod(name, 0o600, dir_fd=d.fd)  # the umask cut it; before the open, which needs the read bit
        except FileExistsError:
            pass
        fd = os.open(name, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | _CLOEXEC, dir_fd=d.fd)
    except (OSError, NotImplementedError):
        return None
    st = os.fstat(fd)
    if not stat.S_ISFIFO(st.st_mode) or st.st_uid != os.getuid():
        os.close(fd)
        return None
    return fd


def await_fifo(fd: int, timeout: float) -> "Optional[bool]":
    """Wait up to `timeout` seconds on the FIFO `fd` (open_fifo): True when poked (the FIFO is
    emptied, so the next wait blocks again), False when the time passed, None when it cannot be
    waited on (the caller then sleeps instead)."""
    import select
    try:
        ready, _w, _x = select.select([fd], [], [], timeout)
        if not ready:
            return False
        os.read(fd, 4096)
    except BlockingIOError:
        return False  # another reader emptied it: nothing to wake for
    except (OSError, ValueError):  # ValueError: a descriptor past select's limit
        return None
    return True


def poke_fifo(d: "Dir", name: str) -> None:
    """Wake whoever waits on the FIFO `name` in `d`. Never blocks and never fails the caller: no
    FIFO, no reader (a killed waiter's FIFO: the O_NONBLOCK open fails at once, ENXIO), a full
    pipe or anything else is only no wake-up, and the waiter's own looks find what it waits for
    all the same."""
    import stat
    try:
        fd = os.open(name, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | _CLOEXEC, dir_fd=d.fd)
    except OSError:
        return
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):  # a regular file of that name is not written to
            os.write(fd, b"!")
    except OSError:
        pass
    finally:
        os.close(fd)
