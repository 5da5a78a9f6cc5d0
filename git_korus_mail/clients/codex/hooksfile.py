"""Codex's hooks.json: the entries install writes, checks and removes, and the file on disk.

Codex reads hooks.json beside each config layer in Claude Code's shape ({"hooks": {Event:
[{"matcher"?, "hooks": [handler]}]}}). Two places are ours to wire (docs/CLIENTS.md, "Codex
CLI: what install writes"): each worktree's `.codex/hooks.json` (Codex 0.171.0 reads a linked
worktree's hooks from the main worktree's file, and only when the linked worktree has a
.codex/ of its own), or the user's `$CODEX_HOME/hooks.json` with a repo anchor.

The editing and the restoring are shared with Claude Code (wiring/hookdoc.py); what is
Codex's own stays here: its events and timeouts, and the plain form it writes a file in.
"""

import json
import os

from git_korus_mail.clients.codex import preedit
from git_korus_mail.clients.codex.protocol import EVENTS, END_EVENT
from git_korus_mail.wiring import hookdoc

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.clients.interface import Doc, Group
    from git_korus_mail.wiring.hookdoc import Files

HOOK_TIMEOUT = 30   # seconds; a drain takes milliseconds
END_TIMEOUT = 3     # Codex clamps SessionEnd to 3 s, with a warning at every start above it
STUB_TAIL = "/mail/hooks/codex-hook"  # every clone's Codex stub ends so: the mark of our entries
PROJECT_FILE = os.path.join(".codex", "hooks.json")
EXCLUDE_LINE = ".codex/hooks.json"
EXCLUDE_COVERING = {EXCLUDE_LINE, "/" + EXCLUDE_LINE, ".codex", ".codex/", "/.codex", "/.codex/"}
BadHooks = hookdoc.BadHooks


def codex_home() -> str:
    return os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")


def user_hooks_path() -> str:
    return os.path.join(codex_home(), "hooks.json")


hook_command = hookdoc.hook_command


def wanted_groups(stub: str, repo: "Optional[str]" = None) -> "Dict[str, Group]":
    out: "Dict[str, Group]" = {}
    for event in EVENTS:
        group: "Group" = {"matcher": "*"} if event == "PostToolUse" else {}
        group["hooks"] = [{"type": "command", "command": hook_command(stub, event, repo),
                           "timeout": END_TIMEOUT if event == END_EVENT else HOOK_TIMEOUT}]
        out[event] = group
    # before an edit (reservations, clients/codex/preedit.py): apply_patch only; with no
    # reservation in the clone the stub answers it in sh (hooks/hook.sh)
    out[preedit.PRE_EDIT_EVENT] = {"matcher": preedit.MATCHER, "hooks": [
        {"type": "command", "command": hook_command(stub, preedit.PRE_EDIT_EVENT, repo), "timeout": HOOK_TIMEOUT}]}
    return out


def stub_of(hook: object) -> "Optional[str]":
    """The stub path a handler calls when it is one of ours (any clone's), else None."""
    return hookdoc.stub_of(hook, STUB_TAIL)


validate = hookdoc.validate


def merge(doc: "Doc", stub: str, repo: "Optional[str]" = None, force: bool = False) -> "Doc":
    return hookdoc.merge(doc, stub, STUB_TAIL, wanted_groups(stub, repo), force)


def remove(doc: "Doc", stub: str) -> "Tuple[Doc, int]":
    return hookdoc.remove(doc, stub, STUB_TAIL)


def callers(doc: object) -> "List[Tuple[str, str]]":
    return hookdoc.callers(doc, STUB_TAIL)


def check(doc: "Doc", stub: str, repo: "Optional[str]" = None) -> "List[str]":
    try:
        validate(doc)
    except BadHooks as exc:
        return [str(exc)]
    return hookdoc.event_problems(doc, stub, STUB_TAIL, wanted_groups(stub, repo), too_few="entries missing")


# -- the file on disk ------------------------------------------------------------------
read = hookdoc.read  # (raw bytes or None, parsed dict or None); MailError when we cannot merge


def dump(data: "Doc", raw: "Optional[bytes]") -> bytes:
    """`data` as JSON in the style of the file it came from (indent 2 for a new one)."""
    text = raw.decode("utf-8") if raw else ""
    out = json.dumps(data, indent=2, ensure_ascii=not text or text.isascii())
    if not text or text.endswith("\n"):
        out += "\n"
    return out.encode("utf-8")


def wire_file(path: str, stub: str, repo: "Optional[str]", force: bool, files: "Files") -> str:
    """Merge our entries into one hooks.json; `files` is the scope's record of files. makedirs:
    $CODEX_HOME itself may not exist yet."""
    return hookdoc.wire_file(path, stub, STUB_TAIL, files, dump=dump, force=force, mkdir=os.makedirs,
                             merged=lambda base: merge(base, stub, repo, force=force))


def unwire_file(path: str, stub: str, rec: "Optional[Dict[str, Any]]") -> "Optional[str]":
    """Take our entries out of one hooks.json, restoring its bytes where we can."""
    return hookdoc.unwire_file(path, stub, STUB_TAIL, rec, dump=dump)
