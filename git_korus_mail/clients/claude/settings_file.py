"""Claude Code's settings files on disk: where they are (each worktree's
.claude/settings.local.json, or the user's settings.json in $CLAUDE_CONFIG_DIR), reading one
we can merge into, writing it back in its own style (its indent and line ends: a user's file),
and taking our entries out again. The JSON shape itself is settings.py's; reading, merging
and restoring are shared with Codex (wiring/hookdoc.py)."""

import json
import os
import re

from git_korus_mail.clients.claude import settings as claude
from git_korus_mail.wiring import hookdoc

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple, Union

    from git_korus_mail.clients.interface import Doc
    from git_korus_mail.core.clone import Clone
    from git_korus_mail.core.gitrepo import Worktree
    from git_korus_mail.wiring.hookdoc import Files

LOCAL_SETTINGS = os.path.join(".claude", "settings.local.json")
EXCLUDE_LINE = ".claude/settings.local.json"
EXCLUDE_COVERING = {EXCLUDE_LINE, "/" + EXCLUDE_LINE, ".claude", ".claude/", "/.claude", "/.claude/"}


def read_settings(path: str) -> "Tuple[Optional[bytes], Optional[Doc]]":
    """(raw bytes or None when absent, parsed dict or None). MailError when the file is not
    a settings document we can merge into; the file is never touched then."""
    return hookdoc.read(path)


def dump_like(data: "Doc", raw: "Optional[bytes]") -> bytes:
    """Serialise `data` in the style of the file it came from: its indent (2 for a new or
    trivial file), its line ends, its final newline, raw non-ASCII or escaped."""
    text = raw.decode("utf-8") if raw else ""
    indent: "Union[int, str, None]" = 2
    if text.strip() and "\n" not in text.strip():
        indent = None if text.strip() not in ("{}",) else 2
    else:
        m = re.search(r"^([ \t]+)\S", text, re.M)
        if m:
            ws = m.group(1)
            indent = ws if "\t" in ws else len(ws)
    ascii_only = not text or text.isascii()
    out = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    if not text or text.endswith("\n"):
        out += "\n"
    if "\r\n" in text:
        out = out.replace("\n", "\r\n")
    return out.encode("utf-8")


def user_settings_path() -> str:
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(base, "settings.json")


def local_targets(clone: "Clone", only_own: bool = False) -> "Tuple[List[Tuple[str, Worktree]], List[Worktree]]":
    """[(settings path, worktree)] for the worktrees install wires, and the prunable ones skipped."""
    return hookdoc.worktree_targets(clone, LOCAL_SETTINGS, only_own)


def wire_file(path: str, stub: str, repo: "Optional[str]", force: bool, files: "Files", urgent: bool = False) -> str:
    """Merge our entries into one settings file (wiring/hookdoc.py); `files` is the scope's
    record of files; `urgent`: with the wake-up tier's watcher."""
    return hookdoc.wire_file(path, stub, claude.STUB_TAIL, files, dump=dump_like, force=force,
                             merged=lambda base: claude.merge_settings(base, stub, repo, force=force, urgent=urgent))


def unwire_file(path: str, stub: str, rec: "Optional[Dict[str, Any]]") -> "Optional[str]":
    """Take our entries out of one settings file, restoring it as it was where we can."""
    return hookdoc.unwire_file(path, stub, claude.STUB_TAIL, rec, dump=dump_like)
