"""Gemini CLI's settings.json: the hook entries install writes, checks and removes, and the file.

Gemini reads hooks from `.gemini/settings.json` in the project and `~/.gemini/settings.json` for
the user, under "hooks", in Claude Code's shape ({"hooks": {Event: [{"matcher"?, "hooks":
[handler]}]}}), beside every other setting of the person's (docs/CLIENTS.md, "Gemini CLI: what
install writes"). Timeouts are in milliseconds. The entries and the file are shared with Codex
(clients/hookfile.py, on wiring/hookdoc.py); Gemini's values stay here.
"""

import os

from git_korus_mail.clients import hookfile
from git_korus_mail.clients.gemini import preedit
from git_korus_mail.clients.gemini.protocol import EVENTS, END_EVENT

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import List

    from git_korus_mail.clients.interface import Doc

HOOK_TIMEOUT_MS = 30000  # a drain takes milliseconds; Gemini's default is 60000
END_TIMEOUT_MS = 3000    # SessionEnd is best effort: Gemini does not wait for it
STUB_TAIL = "/mail/hooks/gemini-hook"  # every clone's Gemini stub ends so: the mark of our entries
PROJECT_FILE = os.path.join(".gemini", "settings.json")
EXCLUDE_LINE = ".gemini/settings.json"
EXCLUDE_COVERING = {EXCLUDE_LINE, "/" + EXCLUDE_LINE, ".gemini", ".gemini/", "/.gemini", "/.gemini/"}


def user_settings_path() -> str:
    return os.path.join(os.path.expanduser("~"), ".gemini", "settings.json")


def _switched_off(doc: "Doc") -> "List[str]":
    """Gemini keeps its hook switches (hooksConfig) beside "hooks", never inside: the file's
    entries are right, but Gemini runs none of them."""
    conf = doc.get("hooksConfig")
    if isinstance(conf, dict) and conf.get("enabled") is False:
        return ["hooksConfig.enabled is false in this file: Gemini runs no hook from it"]
    return []


# Gemini's values (clients/hookfile.HookFile, which callers use through FILE): AfterTool matches
# every tool; milliseconds; and before an edit (reservations, clients/gemini/preedit.py) the
# editing tools only; with no reservation in the clone the stub answers it in sh (hooks/hook.sh)
FILE = hookfile.HookFile(STUB_TAIL, EVENTS, ("AfterTool",), HOOK_TIMEOUT_MS, {END_EVENT: END_TIMEOUT_MS},
                         extra_check=_switched_off, matchers={preedit.PRE_EDIT_EVENT: preedit.MATCHER})
