"""Claude Code's own session registry, read for `who` (docs/CLIENTS.md, "The session registry").

Claude Code 2.1.332 keeps one file per running process, `<config dir>/sessions/<pid>.json`,
with the process's pid and start time (`procStart`, clock ticks since boot), its current
session id, cwd, name (derived from the folder, or set by `/rename`), status (busy / idle),
kind and entrypoint. It is a claim, not a fact: a process killed with SIGKILL leaves its file
behind, and the session id it holds may be older than the one our hooks saw last. The roster
(core/roster.py) checks each entry against the process and against our presence records; this
module only reads the files and turns them into client-free terms.
"""

import os

from git_korus_mail import fastjson as json  # not the json package: SessionStart reads one entry (hot path)

from git_korus_mail.clients.claude import NAME as NAME  # re-exported: clients.registries() tells registries by it
from git_korus_mail.clients.claude import surface_of

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    Entry = Dict[str, Any]  # one registry entry in client-free terms (the roster's row shape, core/roster.py)

MAX_ENTRY_BYTES = 64 * 1024  # an entry is ~700 bytes; a bigger file is not one
MAX_ENTRIES = 1000           # files read per config dir: a flood costs a bounded read
STATUS = {"busy": "working", "idle": "idle"}


def default_root() -> str:
    """The config dir of a session whose hooks named none: Claude Code's default, ~/.claude."""
    return os.path.join(os.path.expanduser("~"), ".claude")


def name_of(config_root: "Optional[str]", pid: int, start: "Optional[int]") -> "Optional[str]":
    """The name the registry gives the process `pid` that started at `start`; None when its
    entry is missing or belongs to another process."""
    root = config_root or default_root()
    entry = _entry(os.path.join(root, "sessions", f"{pid}.json"), root)
    if entry is None or entry["pid"] != pid or start is None or entry["start"] != start:
        return None
    name: "Optional[str]" = entry["name"]
    return name


def last_activity(config_root: "Optional[str]", cwd: "Optional[str]", session: "Optional[str]") -> "Optional[float]":
    """When the session last wrote its transcript (epoch seconds), None when unknown. Claude Code
    appends to `<config dir>/projects/<slug>/<session>.jsonl` (slug: the cwd with every character
    but an ASCII letter or digit replaced by `-`) as the turn goes: a sign of life that tool
    calls answered by the stub's fast path leave nowhere else (docs/HOOKS.md, "The fast path")."""
    if not cwd or not session or "/" in session or session.startswith("."):
        return None
    slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
    try:
        return os.stat(os.path.join(config_root or default_root(), "projects", slug, session + ".jsonl")).st_mtime
    except (OSError, ValueError):
        return None


def sessions(config_root: "Optional[str]") -> "List[Entry]":
    """The entries of `config_root`'s registry (None: the default config dir), each a dict:
    client, config_root, pid, start (int or None), session, cwd, name, status (working / idle /
    None), surface, kind, updated_at (epoch seconds or None). Unreadable files are skipped."""
    root = config_root or default_root()
    folder = os.path.join(root, "sessions")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and n[:-5].isdigit())
    except OSError:
        return []
    out: "List[Entry]" = []
    for name in names[:MAX_ENTRIES]:
        entry = _entry(os.path.join(folder, name), root)
        if entry is not None:
            out.append(entry)
    return out


def _entry(path: str, root: str) -> "Optional[Entry]":
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_ENTRY_BYTES:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None  # a file Claude Code is rewriting, or not one of its entries
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    start = data.get("procStart")
    entrypoint = _text(data.get("entrypoint"))
    stamp = data.get("statusUpdatedAt", data.get("updatedAt"))
    status = data.get("status")
    return {
        "client": NAME,
        "config_root": root,
        "pid": pid,
        "start": int(start) if isinstance(start, str) and start.isdigit() else None,
        "session": _text(data.get("sessionId")),
        "cwd": _text(data.get("cwd")),
        "name": _text(data.get("name")),
        "status": STATUS.get(status) if isinstance(status, str) else None,
        "surface": surface_of(entrypoint) if entrypoint else None,
        "kind": _text(data.get("kind")),
        "updated_at": stamp / 1000.0 if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else None,
    }


def _text(value: object) -> "Optional[str]":
    return value if isinstance(value, str) and value and len(value) <= 4096 else None
