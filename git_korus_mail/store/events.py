"""Event claims: `events/<session>@<launch>.<key>`, so that one hook event is answered once however
many wirings of the client run it (docs/HOOKS.md, "One answer per event").

A client may run the hooks of every settings file it reads, in parallel; with korus-mail wired in
two scopes, two drains get the same event (the same payload, the same client process) at the
same moment. `key` is what the client module says identifies the event (a digest of its payload).
The first drain to link the claim answers the event; a twin finds the name taken and waits for
the holder's lock, which the kernel drops when the holder ends, however it ends:
- the holder wrote `"state": "answered"` (its output is out) after the twin's hook process was
  started: they serve one event, and the twin stays silent;
- the holder did not answer (it was killed, or its output failed): the twin takes it over.
A claim answered *before* this hook process was started belongs to an earlier event with the
same payload (two compactions in one turn; tests that repeat a payload): the client starts an
event's hooks only after the previous event's hooks ended, so it is taken over. Both times are
clock ticks since boot (the hook process's start time from /proc, store/launch.py `hook_start`).
A twin that cannot get the lock within WAIT seconds leaves the event to the live holder. Files
older than KEEP are swept.
"""

import os
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail import crash

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Optional

    from git_korus_mail.store.files import Box

SUB = "events"
TWIN_WINDOW = 2.0  # without /proc (no start time): seconds after an answer a twin stays silent
WAIT = 20.0  # seconds a twin waits for a live holder before it leaves the event to it
POLL = 0.005
KEEP = 3600  # seconds an event claim is kept (its twins come within milliseconds)
SWEEP_FILES = 200
_READ = 4096
_FLAGS = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class Claim:
    """This process's hold on one event: its lock lasts until `release` or the process's end."""

    __slots__ = ("fd", "size")

    def __init__(self, fd: int, size: int = 0) -> None:
        self.fd, self.size = fd, size  # size: the bytes in the file (0 for a new one)

    def _write(self, state: str) -> None:
        data = json.dumps({"at": round(time.time(), 3), "pid": os.getpid(), "state": state,
                           "ticks": now_ticks()}, sort_keys=True).encode()
        # padded over the last record with spaces (JSON allows them) rather than truncated
        # first: one metadata update less at every show that has mail to claim, each a wait
        # on the file system's journal under load (issue 26, the woken drain)
        os.pwrite(self.fd, data.ljust(self.size), 0)
        self.size = max(self.size, len(data))

    def answered(self) -> None:
        """The event's answer is out: a twin that comes now stays silent."""
        self._write("answered")

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def now_ticks() -> "Optional[float]":
    """Clock ticks since boot, the unit of a process's start time in /proc (None without it)."""
    try:
        return round(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"), 1)
    except (AttributeError, OSError, ValueError):
        return None


def name_of(session_dir: str, launch_tag: str, key: str) -> str:
    return f"{session_dir}@{launch_tag}.{key}"


def claim(box: "Box", session_dir: str, launch_tag: str, key: str,
          started: "Optional[int]") -> "Optional[Claim]":
    """Claim the event `key` of this launch for a hook process started at `started` (ticks since
    boot; None: unknown): a Claim when this process answers it, None when a twin answers it (it
    did since `started`, or a live one is doing it). OSError when the claim cannot be taken at
    all (the caller then answers, as if alone)."""
    import fcntl  # only with an event to claim: never on the empty-box path
    events = box.ensure_sub(SUB)
    name = name_of(session_dir, launch_tag, key)
    tmp = box.root.tmp
    staged = f"event.{key[:16]}.{os.getpid()}.{os.urandom(4).hex()}"
    fd = os.open(staged, _FLAGS | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=tmp.fd)
    linked = False
    try:
        os.fchmod(fd, 0o600)  # whatever the umask: every file of the store is 0600 (tests/test_umask.py)
        # locked before it is visible: a twin that opens the name always finds it held
        fcntl.flock(fd, fcntl.LOCK_EX)
        mine = Claim(fd)
        mine._write("answering")
        try:
            tmp.link_to(staged, events, name)
            linked = True
        except FileExistsError:
            pass
    finally:
        tmp.unlink_quiet(staged)
        if not linked:
            os.close(fd)
    if linked:
        crash.point("event:claimed")
        return mine
    return _join(events.fd, name, fcntl, started)


def _join(dir_fd: int, name: str, fcntl: "object", started: "Optional[int]") -> "Optional[Claim]":
    """The name is taken: wait for its holder, then stay silent or take it over."""
    fd = os.open(name, _FLAGS, dir_fd=dir_fd)
    st = os.fstat(fd)
    if (st.st_mode & 0o170000) != 0o100000 or st.st_uid != os.getuid():
        os.close(fd)
        raise OSError(f"events/{name} is not a claim of ours")
    deadline = time.monotonic() + WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # type: ignore[attr-defined]
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None  # a live holder answers (or has): never two answers
            time.sleep(POLL)
    try:
        rec = json.loads(os.pread(fd, _READ, 0).decode("utf-8", "replace"))
    except ValueError:
        rec = None
    if isinstance(rec, dict) and rec.get("state") == "answered" and _same_event(rec, started):
        os.close(fd)
        return None
    took = Claim(fd, os.fstat(fd).st_size)  # a holder that died before its answer was out, or an older event's claim
    took._write("answering")
    return took


def _same_event(rec: "dict[str, object]", started: "Optional[int]") -> bool:
    """Whether an answered claim answered this very event: after this hook process started.
    A start time counts whole clock ticks (10 ms), so a process started in the tick the answer
    was written in may have started after it: that is the next event with the same payload (a
    client starts it once the last one's hooks ended), and it is answered again. Twins start
    together and are answered tens of ms later, in a later tick."""
    ticks, at = rec.get("ticks"), rec.get("at")
    if started is not None and isinstance(ticks, (int, float)):
        return started < int(ticks)
    return isinstance(at, (int, float)) and 0 <= time.time() - at <= TWIN_WINDOW


def sweep(box: "Box", now: float, keep: float = KEEP, files: int = SWEEP_FILES) -> int:
    """Remove event claims older than `keep` (a few per run); returns how many."""
    d = box.open_sub(SUB)
    if d is None:
        return 0
    removed = 0
    for name in d.names():
        if removed >= files:
            break
        try:
            if now - d.lstat(name).st_mtime > keep:
                removed += d.unlink_quiet(name)
        except OSError:
            continue  # housekeeping: judged again at the next run
    return removed
