"""A launch: one run of the client process that carries a session.

A session id is not a launch. Claude Code keeps the id across `--resume` and
`--continue`, so two processes, one after the other, can carry the same id, and a
process killed with SIGKILL runs no end phase. Display markers must therefore say
which *process* displayed a message, not only which session id it had (see
docs/CONTRACT.md, "Display markers").

Client-free: the client module (clients/claude/) knows where its process id comes from
and hands it here; this module knows only processes. A launch is the client's pid
plus that process's start time (field 22 of /proc/<pid>/stat, clock ticks since
boot) and the boot id, so neither a reused pid nor a reboot can pass for it.
Reading it costs two small /proc reads (the process's stat and the boot id), done only when an
event needs the launch (a marker, a consume, a presence rewrite: core/drain.py asks lazily).
The /proc readers live here, not in claims.py, so that identifying a launch loads nothing else;
claims.py judges claim owners with them.
"""

import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Literal, Optional, Union

    from git_korus_mail.store.shapes import LaunchRecord

    AnyLaunch = Union["Launch", "NoLaunch"]

UNKNOWN_TAG = "unknown"


def _read_text(path: str) -> "Optional[str]":
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None


def proc_stat(pid: int) -> "Optional[tuple[str, int]]":
    """(state letter, start time in clock ticks since boot) of a process: fields 3 and 22 of
    /proc/<pid>/stat. None when /proc does not show it."""
    text = _read_text(f"/proc/{pid}/stat")
    if not text:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    rest = text[text.rfind(")") + 2:].split()
    try:
        return rest[0], int(rest[19])
    except (IndexError, ValueError):
        return None


def proc_start_time(pid: int) -> "Optional[int]":
    """Start time in clock ticks since boot (field 22 of /proc/<pid>/stat), None when /proc
    does not show it."""
    st = proc_stat(pid)
    return None if st is None else st[1]


DEAD_STATES = ("Z", "X", "x")  # a zombie has exited (only its exit status is left unread); X: dying


def process_runs(pid: int, start: "Optional[int]") -> "tuple[bool, str]":
    """The one liveness rule for a process of this pid namespace (docs/STORE.md, "Liveness"):
    (False, why) when `pid` provably no longer runs the process that started at `start`: it is
    gone, a zombie, or a newer process with the same pid; else (True, what is known). A start
    of None matches any process with that pid (a system without /proc recorded none)."""
    st = proc_stat(pid)
    if st is not None:
        state, now_start = st
        if state in DEAD_STATES:
            return False, f"pid {pid} has exited (a zombie whose parent has not reaped it)"
        if start is not None and now_start != start:
            return False, f"pid {pid} now belongs to a newer process"  # the pid was reused
        if start is not None:
            return True, f"pid {pid} runs, with the start time recorded"
        return True, f"pid {pid} runs (no start time was recorded, so a reused pid is not ruled out)"
    try:
        os.kill(pid, 0)  # /proc does not show it (none here, or hidden): ask the kernel
    except ProcessLookupError:
        return False, f"pid {pid} no longer runs"
    except (PermissionError, OverflowError):
        pass  # it exists (another user's), or not a pid this system has: unsure is alive
    return True, f"pid {pid} runs (its start time could not be compared, so a reused pid is not ruled out)"


def parent_of(pid: int) -> "Optional[int]":
    """The parent of a running process (field 4 of /proc/<pid>/stat); None when it is gone or
    unreadable."""
    text = _read_text(f"/proc/{pid}/stat")
    if not text:
        return None
    try:
        return int(text[text.rfind(")") + 2:].split()[1])
    except (IndexError, ValueError):
        return None


def ancestry(pid: int, depth: int) -> "list[int]":
    """`pid`'s parent, its parent's parent, ... up to `depth` of them, stopping before pid 1 (or
    the init of this pid namespace) and where /proc shows no parent."""
    out: "list[int]" = []
    while len(out) < depth:
        ppid = parent_of(pid)
        if ppid is None or ppid <= 1:
            break
        out.append(ppid)
        pid = ppid
    return out


def hook_start(client_pid: "Optional[int]") -> "Optional[int]":
    """When the client started the hook process this one runs in: the start time (ticks since
    boot) of the ancestor whose parent is `client_pid` (the client spawns `sh -c <command>`,
    which runs the stub, which runs us); this process's own start time when no ancestor is.
    Every wiring of one event is started at once, before any of them answers: store/events.py."""
    pid = os.getpid()
    if client_pid:
        cur = pid
        for _ in range(8):
            parent = parent_of(cur)
            if parent is None or parent <= 1:
                break
            if parent == client_pid:
                return proc_start_time(cur)
            cur = parent
    return proc_start_time(pid)


def boot_id() -> "Optional[str]":
    return _read_text("/proc/sys/kernel/random/boot_id")


def pid_ns() -> "Optional[str]":
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def host() -> str:
    return os.uname().nodename  # not socket.gethostname(): importing socket costs the hot path


class Launch:
    """A client process as far as we can identify it. `known` is False when the client
    named no process we can see: then nothing may be consumed on its word (see `NoLaunch`)."""

    __slots__ = ("client", "pid", "start", "boot")
    known: "Literal[True]" = True  # literal, so `if not launch.known` tells mypy which class it is

    def __init__(self, client: str, pid: int, start: "Optional[int]", boot: "Optional[str]") -> None:
        self.client = client
        self.pid = pid
        self.start = start  # None on a system without /proc (the pid alone is then the identity)
        self.boot = boot

    @classmethod
    def of_process(cls, client: str, pid: "Any") -> "AnyLaunch":
        """The launch of a running process `pid`; a NoLaunch when it cannot be identified."""
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            return NoLaunch("the client gave no process id")
        start = proc_start_time(pid)
        if start is None and os.path.isdir("/proc/self"):
            # a /proc that does not list the pid: that process does not run (here)
            return NoLaunch(f"its process {pid} does not run here", pid=pid)
        return cls(client, pid, start, boot_id())

    @property
    def tag(self) -> str:
        """`<pid>-<start>-<boot id[:8]>`: the launch's part of a marker directory name."""
        start = "x" if self.start is None else str(self.start)
        return f"{self.pid}-{start}-{(self.boot or 'x')[:8]}"

    def record(self) -> "LaunchRecord":
        """What a marker directory, a marker and a receipt say about the launch. Shaped like a
        claim owner (pid, start, boot, pidns, host), so claims.owner_is_dead judges it."""
        return {"client": self.client, "tag": self.tag, "pid": self.pid, "start": self.start,
                "boot": self.boot, "pidns": pid_ns(), "host": host()}


class NoLaunch:
    """No identifiable client process (a hand-run drain, or a client that names none).

    The conservative reading: mail is shown and marked so this session is not shown it
    again, but no Stop consumes on such a marker, since nothing ties it to a model that saw it."""

    __slots__ = ("why", "pid")
    known: "Literal[False]" = False
    start = None
    tag = UNKNOWN_TAG

    def __init__(self, why: str, pid: "Optional[int]" = None) -> None:
        self.why = why
        self.pid = pid  # the process the client named, if any (presence reports it gone)

    def record(self) -> None:
        return None


def ended(tag: "Optional[str]") -> bool:
    """Whether the launch `tag` names provably no longer runs (the one liveness rule: another
    boot, its pid gone, a zombie, or a newer process). False when it runs or nothing can tell."""
    parsed = parse_tag(tag) if isinstance(tag, str) else None
    if parsed is None:
        return False
    pid, start, boot8 = parsed
    boot = boot_id()
    if boot8 and boot and not boot.startswith(boot8):
        return True
    return not process_runs(pid, start)[0]


def unix_session_tag() -> "Optional[str]":
    """This process's Unix session as a launch tag (`<leader pid>-<start>-<boot id[:8]>`): the
    terminal, cron job or service that started it. What tells one sender from another when no
    client names one (a shell, a script: docs/DESIGN.md, "Limits"). A leader that is gone leaves
    its start unknown; its id stays taken while the session lives. A leader outside this pid
    namespace is pid 0 there, and the namespace's inode stands in for its start."""
    try:
        sid = os.getsid(0)
    except OSError:
        return None
    if sid == 0:
        # The leader lies outside this pid namespace (a container, a CI runner, `unshare -p`):
        # every process in it that never started a session of its own shares that one session,
        # so they are one sender, named by the namespace (pid 0 is nobody's).
        ns = (pid_ns() or "").rpartition("[")[2].rstrip("]")
        return f"0-{ns if ns.isdigit() else 'x'}-{(boot_id() or 'x')[:8]}"
    if sid < 0:
        return None
    found = Launch.of_process("session", sid)
    return found.tag if found.known else f"{sid}-x-{(boot_id() or 'x')[:8]}"


def parse_tag(tag: str) -> "Optional[tuple[int, Optional[int], Optional[str]]]":
    """(pid, start or None, boot prefix or None) from a tag; None when it is not one."""
    parts = tag.split("-")
    if len(parts) != 3 or not parts[0].isdigit():
        return None
    start = None
    if parts[1] != "x":
        if not parts[1].isdigit():
            return None
        start = int(parts[1])
    return int(parts[0]), start, (None if parts[2] == "x" else parts[2])
