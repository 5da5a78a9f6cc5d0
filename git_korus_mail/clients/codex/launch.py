"""Which Codex process runs a hook, proved from /proc (docs/CLIENTS.md, "Codex CLI: launch identity").

Codex names no process and no session in a hook's environment, and its hooks may run as
children of a background daemon that serves several sessions. What can be proved instead:
- the hook's ancestry: Codex starts the hook command itself, so the nearest ancestor whose
  executable is named `codex` (the native binary; the npm wrapper is `node`) is the process
  that ran this hook. A few levels are walked: our stub and a shell may sit in between;
- the session: that process holds the session's transcript (the payload's transcript_path,
  a rollout file named after the session id) open while the session lives. When the
  transcript exists and that process does not hold it, the claim is not proved: no launch.

A transcript that does not exist (an ephemeral session, or SessionStart before the first
write) leaves the ancestry alone as the proof. Costs a few small /proc reads per hook event,
and one readlink per open file of the Codex process when a transcript is named.
"""

import os

from git_korus_mail.store.launch import Launch as Launch  # re-exported: protocol.py names it through here
from git_korus_mail.store.launch import NoLaunch

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Optional

    from git_korus_mail.store.launch import AnyLaunch

CLIENT = "codex"
EXECUTABLE = "codex"
MAX_DEPTH = 4  # drain <- stub <- (a shell) <- codex; one level spare


def _ppid(pid: int) -> "Optional[int]":
    """The parent of a running process; None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _exe_name(pid: int) -> "Optional[str]":
    """The file name of a process's executable (a replaced binary still counts), or None."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    if exe.endswith(" (deleted)"):
        exe = exe[:-len(" (deleted)")]
    return os.path.basename(exe)


def is_codex(pid: int) -> bool:
    """Whether process `pid` runs Codex's native binary."""
    return _exe_name(pid) == EXECUTABLE


def codex_ancestor(start_pid: int) -> "Optional[int]":
    """The nearest ancestor of `start_pid` (itself excluded) whose executable is Codex's native
    binary, or None within MAX_DEPTH levels."""
    pid = start_pid
    for _level in range(MAX_DEPTH):
        parent = _ppid(pid)
        if parent is None or parent <= 1:
            return None
        pid = parent
        if _exe_name(pid) == EXECUTABLE:
            return pid
    return None


def holds_open(pid: int, path: str) -> bool:
    """True when process `pid` has `path` open (compared by real path)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                return True
        except OSError:
            continue
    return False


def launch_of(transcript: "Optional[str]", start_pid: "Optional[int]" = None) -> "AnyLaunch":
    """The Codex process that runs this hook (launch.Launch), or a NoLaunch saying what could
    not be proved. `transcript`: the payload's transcript_path, or None."""
    pid = codex_ancestor(os.getpid() if start_pid is None else start_pid)
    if pid is None:
        return NoLaunch(f"no {EXECUTABLE} process among this hook's parents")
    if transcript:
        real = os.path.realpath(transcript)
        if os.path.exists(real) and not holds_open(pid, real):
            return NoLaunch(f"the {EXECUTABLE} process {pid} does not hold this session's transcript open",
                            pid=pid)
    return Launch.of_process(CLIENT, pid)
