"""Which Gemini CLI process runs a hook or a command, proved from /proc (docs/CLIENTS.md, "Gemini
CLI: launch").

Gemini CLI is a node script: its process is `node .../gemini` (the npm bin link) or `node
.../bundle/gemini.js`, and it starts every hook command itself (0.61.0, observed: the hook's
parent), and the model's shell commands as `bash -c` children. So the nearest ancestor whose
executable is node and whose script is Gemini's is the launch. A hook's environment also names
the session (GEMINI_SESSION_ID): when it names another session than the payload, the claim is
not proved and there is no launch (mail is shown, not consumed).
"""

import os

from git_korus_mail.store.launch import Launch as Launch  # re-exported: protocol.py names it through here
from git_korus_mail.store.launch import NoLaunch, parent_of

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import List, Mapping, Optional

    from git_korus_mail.store.launch import AnyLaunch

CLIENT = "gemini"
MAX_DEPTH = 4  # drain <- stub <- (a shell) <- gemini; one level spare
COMMAND_DEPTH = 16  # a shell tool call: bash -c, a pipeline, git, our helper ...
SCRIPT_NAMES = ("gemini", "gemini.js")


def _argv(pid: int) -> "List[str]":
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def is_gemini(pid: int) -> bool:
    """Whether process `pid` is Gemini CLI: node running Gemini's script (its first argument that
    is no node option)."""
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe")).replace(" (deleted)", "")
    except OSError:
        return False
    if not exe.startswith("node"):
        return False
    for arg in _argv(pid)[1:]:
        if arg.startswith("-"):
            continue
        return os.path.basename(arg) in SCRIPT_NAMES
    return False


def gemini_ancestor(start_pid: "Optional[int]" = None, depth: int = MAX_DEPTH) -> "Optional[int]":
    """The nearest ancestor of `start_pid` (default: this process; itself excluded) that is
    Gemini CLI, or None within `depth` levels."""
    pid = os.getpid() if start_pid is None else start_pid
    for _level in range(depth):
        parent = parent_of(pid)
        if parent is None or parent <= 1:
            return None
        if is_gemini(parent):
            return parent
        pid = parent
    return None


def launch_of(session: str, environ: "Mapping[str, str]", start_pid: "Optional[int]" = None) -> "AnyLaunch":
    """The Gemini process that runs this hook (launch.Launch), or a NoLaunch saying why not."""
    named = environ.get("GEMINI_SESSION_ID")
    if named and named != session:
        return NoLaunch("GEMINI_SESSION_ID names another session than the hook's payload")
    pid = gemini_ancestor(start_pid)
    if pid is None:
        return NoLaunch("no gemini process among this hook's parents")
    return Launch.of_process(CLIENT, pid)


def surface_of(pid: int) -> str:
    """Where a session runs, from its process's arguments: `headless` (-p / --prompt, the
    non-interactive mode) or `terminal` (the interactive UI)."""
    for arg in _argv(pid)[1:]:
        if arg in ("-p", "--prompt") or arg.startswith("--prompt="):
            return "headless"
    return "terminal"
