"""Gemini CLI's settings.json: the hook entries install writes, checks and removes, and the file.

Gemini reads hooks from `.gemini/settings.json` in the project and `~/.gemini/settings.json` for
the user, under "hooks", in Claude Code's shape ({"hooks": {Event: [{"matcher"?, "hooks":
[handler]}]}}), beside every other setting of the person's (docs/CLIENTS.md, "Gemini CLI: what
install writes"). Timeouts are in milliseconds. The editing and the restoring are shared
(wiring/hookdoc.py); Gemini's events, timeouts and file style stay here.
"""

import json
import os

from git_korus_mail.clients.gemini import preedit
from git_korus_mail.clients.gemini.protocol import EVENTS, END_EVENT
from git_korus_mail.wiring import hookdoc

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.clients.interface import Doc, Group
    from git_korus_mail.wiring.hookdoc import Files

HOOK_TIMEOUT_MS = 30000  # a drain takes milliseconds; Gemini's default is 60000
END_TIMEOUT_MS = 3000    # SessionEnd is best effort: Gemini does not wait for it
STUB_TAIL = "/mail/hooks/gemini-hook"  # every clone's Gemini stub ends so: the mark of our entries
PROJECT_FILE = os.path.join(".gemini", "settings.json")
EXCLUDE_LINE = ".gemini/settings.json"
EXCLUDE_COVERING = {EXCLUDE_LINE, "/" + EXCLUDE_LINE, ".gemini", ".gemini/", "/.gemini", "/.gemini/"}
BadHooks = hookdoc.BadHooks


def user_settings_path() -> str:
    return os.path.join(os.path.expanduser("~"), ".gemini", "settings.json")


hook_command = hookdoc.hook_command


def wanted_groups(stub: str, repo: "Optional[str]" = None) -> "Dict[str, Group]":
    out: "Dict[str, Group]" = {}
    for event in EVENTS:
        group: "Group" = {"matcher": "*"} if event == "AfterTool" else {}
        group["hooks"] = [{"type": "command", "command": hook_command(stub, event, repo),
                           "timeout": END_TIMEOUT_MS if event == END_EVENT else HOOK_TIMEOUT_MS}]
        out[event] = group
    # before an edit (reservations, clients/gemini/preedit.py): the editing tools only; with no
    # reservation in the clone the stub answers it in sh (hooks/hook.sh)
    out[preedit.PRE_EDIT_EVENT] = {"matcher": preedit.MATCHER, "hooks": [
        {"type": "command", "command": hook_command(stub, preedit.PRE_EDIT_EVENT, repo), "timeout": HOOK_TIMEOUT_MS}]}
    return out


def stub_of(hook: object) -> "Optional[str]":
    return hookdoc.stub_of(hook, STUB_TAIL)


def validate(doc: object) -> None:
    """hookdoc's check, but Gemini keeps its hook switches (hooksConfig) beside "hooks", never
    inside: anything else in "hooks" that is not a list is a shape we do not merge into."""
    hookdoc.validate(doc)


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
    problems = hookdoc.event_problems(doc, stub, STUB_TAIL, wanted_groups(stub, repo), too_few="entries missing")
    conf = doc.get("hooksConfig")
    if isinstance(conf, dict) and conf.get("enabled") is False:
        problems.append("hooksConfig.enabled is false in this file: Gemini runs no hook from it")
    return problems


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
    """Merge our entries into one settings.json; `files` is the scope's record of files.
    makedirs: ~/.gemini itself may not exist yet."""
    return hookdoc.wire_file(path, stub, STUB_TAIL, files, dump=dump, force=force, mkdir=os.makedirs,
                             merged=lambda base: merge(base, stub, repo, force=force))


def unwire_file(path: str, stub: str, rec: "Optional[Dict[str, Any]]") -> "Optional[str]":
    """Take our entries out of one settings.json, restoring its bytes where we can."""
    return hookdoc.unwire_file(path, stub, STUB_TAIL, rec, dump=dump)
