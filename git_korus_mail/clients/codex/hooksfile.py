"""Codex's hooks.json: the entries install writes, checks and removes, and the file on disk.

Codex reads hooks.json beside each config layer in Claude Code's shape ({"hooks": {Event:
[{"matcher"?, "hooks": [handler]}]}}). Two places are ours to wire (docs/CLIENTS.md, "Codex
CLI: what install writes"): each worktree's `.codex/hooks.json` (Codex 0.171.0 reads a linked
worktree's hooks from the main worktree's file, and only when the linked worktree has a
.codex/ of its own), or the user's `$CODEX_HOME/hooks.json` with a repo anchor.

The entries and the file are shared with Gemini (clients/hookfile.py, on wiring/hookdoc.py, which
Claude Code's settings use too); Codex's values stay here: its events and timeouts.
"""

import os

from git_korus_mail.clients import hookfile
from git_korus_mail.clients.codex import preedit
from git_korus_mail.clients.codex.protocol import EVENTS, END_EVENT

HOOK_TIMEOUT = 30   # seconds; a drain takes milliseconds
END_TIMEOUT = 3     # Codex clamps SessionEnd to 3 s, with a warning at every start above it
STUB_TAIL = "/mail/hooks/codex-hook"  # every clone's Codex stub ends so: the mark of our entries
PROJECT_FILE = os.path.join(".codex", "hooks.json")
EXCLUDE_LINE = ".codex/hooks.json"
EXCLUDE_COVERING = {EXCLUDE_LINE, "/" + EXCLUDE_LINE, ".codex", ".codex/", "/.codex", "/.codex/"}


def codex_home() -> str:
    return os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")


def user_hooks_path() -> str:
    return os.path.join(codex_home(), "hooks.json")


# Codex's values (clients/hookfile.HookFile, which callers use through FILE): PostToolUse matches
# every tool; seconds; and before an edit (reservations, clients/codex/preedit.py) apply_patch
# only; with no reservation in the clone the stub answers it in sh (hooks/hook.sh)
FILE = hookfile.HookFile(STUB_TAIL, EVENTS, ("PostToolUse",), HOOK_TIMEOUT, {END_EVENT: END_TIMEOUT},
                         matchers={preedit.PRE_EDIT_EVENT: preedit.MATCHER})
