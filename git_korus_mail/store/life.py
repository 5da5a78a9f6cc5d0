"""Life locks: proof that a process runs, valid in any pid namespace (docs/STORE.md, "Liveness").

A pid names a process only inside its own pid namespace: a client may run the model's commands
in a namespace of their own (docs/DESIGN.md R5a), so an `ask` or a `reply` there records a pid
that means nothing to the hooks outside it. A process that may own a record others must judge (a
wait, a claim) therefore takes a life lock first: `mail/live/<pid>-<start>-<hex>`, a file it
holds an exclusive POSIX record lock on (fcntl F_SETLK, `lockf`) for its whole life. The kernel
drops the lock when the process exits, however it dies and whatever namespace it ran in, and
before it becomes a zombie; so a judge that can take a shared lock has proof that the owner is
gone, and one that cannot, that it runs.

A POSIX lock, not flock(2): it belongs to the process, so a child (forked, or a program it runs)
never inherits it and cannot keep a dead owner looking alive. Its one trap, that closing *any*
descriptor of the file drops the process's lock, is why the owner never opens its own file again
(`state` answers for it without looking). The file is made and locked in tmp/ before it is linked
into live/, so no judge ever finds it unlocked while its owner lives. Files of owners that ended
are removed a few at a time by the next process that takes a lock, and by an owner's normal exit.
"""

import errno
import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Optional

    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.store.fsafe import Dir

LIVE_DIR = "live"
SWEEP = 8  # other owners' files judged per lock taken: bounded work
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_held: "dict[str, tuple[str, int, Dir]]" = {}  # mail root path -> (token, locked descriptor, live/) there
_owner_pid = 0  # a forked child is not the owner: it holds none of these locks (they are per process)


def token(root: "MailRoot") -> "Optional[str]":
    """This process's life token in `root`, when it holds a lock there (it called `hold`). An
    owner record names a token only for the root its lock is in: a token without its file in
    a root would read there as a dead owner."""
    held = _held.get(root.path) if _owner_pid == os.getpid() else None
    return held[0] if held is not None else None


def hold(root: "MailRoot") -> "Optional[str]":
    """Take this process's life lock in `root` (once per process and root) and return its token;
    None when the store or the system cannot give one (a read-only mail root, no locks): the
    owner is then judged by its pid alone, as before."""
    global _owner_pid
    if _owner_pid != os.getpid():
        _held.clear()  # a forked child: its parent's locks are not its own
        _owner_pid = os.getpid()
    tok = token(root)
    if tok is not None:
        return tok
    import fcntl

    from git_korus_mail.store.launch import proc_start_time
    pid = os.getpid()
    start = proc_start_time(pid)
    name = f"{pid}-{'x' if start is None else start}-{os.urandom(4).hex()}"
    from git_korus_mail.errors import MailError
    try:
        live = root.dir.ensure_sub(LIVE_DIR)
        tmp = root.tmp
        staged = f"live.{name}.{pid}.{os.urandom(4).hex()}"  # a staging name like create_staged's
        fd = os.open(staged, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o600, dir_fd=tmp.fd)
    except (OSError, MailError):
        return None  # a read-only root (a sandbox), a planted symlink: the command goes on without
    try:
        os.fchmod(fd, 0o600)  # whatever the umask: judges (this user) must open it to read
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        tmp.link_to(staged, live, name)
    except OSError:
        os.close(fd)
        tmp.unlink_quiet(staged)
        live.close()
        return None
    tmp.unlink_quiet(staged)
    _held[root.path] = (name, fd, live)
    _sweep(live, name)
    import atexit
    atexit.register(_release, root.path)
    return name


def _release(root_path: str) -> None:
    """At a normal exit: remove our file while the lock is still ours (a judge then finds no
    file, which also reads as ended). A killed process leaves it to the sweep."""
    held = _held.get(root_path) if _owner_pid == os.getpid() else None
    if held is not None:
        try:
            held[2].unlink_quiet(held[0])
        except OSError:
            pass  # the mail root was purged meanwhile (uninstall --purge)


def valid(tok: "object") -> bool:
    """`<pid>-<start or x>-<8 hex>`: a name we write, and a single path component."""
    if not isinstance(tok, str) or len(tok) > 64:
        return False
    parts = tok.split("-")
    return (len(parts) == 3 and parts[0].isdigit() and (parts[1] == "x" or parts[1].isdigit())
            and len(parts[2]) == 8 and all(c in "0123456789abcdef" for c in parts[2]))


def state(root: "MailRoot", tok: "object") -> "Optional[str]":
    """"alive" (its owner holds the lock), "dead" (the lock is free, or its file is gone: the owner
    ended) or None (nothing can be told: not a token of ours, a file not ours, no locks here)."""
    if not valid(tok):
        return None
    assert isinstance(tok, str)  # for mypy: valid() checked it
    if tok == token(root):
        return "alive"  # ours: opening it again and closing that would drop our own lock
    d = root.dir.open_sub(LIVE_DIR)
    if d is None:
        return "dead"  # the file was linked here before any record named it: gone with its owner
    try:
        return _try(d, tok, remove=False)
    finally:
        d.close()


def _try(d: "Dir", name: str, remove: bool) -> "Optional[str]":
    import fcntl
    import stat
    try:
        # a shared lock needs a descriptor open for reading, an exclusive one for writing
        fd = os.open(name, (os.O_RDWR if remove else os.O_RDONLY) | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC,
                     dir_fd=d.fd)
    except FileNotFoundError:
        return "dead"
    except OSError:
        return None  # a symlink or another odd thing planted here: proves nothing
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        try:
            fcntl.lockf(fd, (fcntl.LOCK_EX if remove else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                return "alive"
            return None  # ENOLCK and the like: this file system cannot tell
        # (closing fd below drops our probe lock: this process holds no other lock on this file)
        if remove:
            d.unlink_quiet(name)  # while we hold the lock: no owner can be using this name
        return "dead"
    finally:
        os.close(fd)


def _sweep(live: "Dir", keep: str) -> None:
    """Remove a few files whose owners ended (a killed owner leaves its file behind)."""
    judged = 0
    for name in live.names():
        if judged >= SWEEP:
            break
        if name == keep or not valid(name):
            continue
        judged += 1
        try:
            _try(live, name, remove=True)
        except OSError:
            continue
