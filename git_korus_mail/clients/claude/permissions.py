"""Claude Code's permission rules, read and never written: whether the settings Claude Code
reads in a worktree hold an allow rule that lets the model run `git korus-mail` (docs/CLIENTS.md,
"Claude Code: its permission mode").

In its default permission mode (`-p`'s) Claude Code refuses a Bash call that no allow rule
covers, and the model's tool result is only "This command requires approval"; in auto mode (the
terminal UI's default in 2.1.332) a server-side check judges the call instead. An allow rule is
applied before either. Our hooks need no permission: they show and consume mail in every mode. Only the model's own `send`, `ask` and `reply` need the rule, and the rule is the person's
to add: install says it, doctor notes whether it is there (never a failure), and nothing here
writes it (a rule written in silence would change what the model may do).
"""

import fnmatch
import json
import os

from git_korus_mail.clients.claude.settings_file import user_settings_path

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Optional, Tuple

ALLOW_RULE = "Bash(git korus-mail:*)"
ALLOW_LINE = '"permissions": {"allow": ["' + ALLOW_RULE + '"]}'
REFUSAL = "This command requires approval"  # the model's tool result when no rule covers the call
# commands the rule must cover, as the model runs them (a rule for `send` alone is not enough)
SAMPLES = ("git korus-mail send --to ../web hello", "git korus-mail ask --to ../web what",
           "git korus-mail reply 20261202T043722Z-x -- an answer")
SHARED = os.path.join(".claude", "settings.json")  # its rules apply only in a folder the person trusted
LOCAL = os.path.join(".claude", "settings.local.json")


def covers(rule: object) -> bool:
    """Does the allow rule `rule` let `git korus-mail ...` run? `Bash` and `Bash(*)` allow every
    command; `Bash(PREFIX:*)` is a prefix rule, and `*` in `Bash(...)` a wildcard."""
    if not isinstance(rule, str):
        return False
    rule = rule.strip()
    if rule == "Bash":
        return True
    if not (rule.startswith("Bash(") and rule.endswith(")")):
        return False
    inner = rule[len("Bash("):-1].strip()
    if inner.endswith(":*"):
        inner = inner[:-2].rstrip() + " *"
    return all(fnmatch.fnmatchcase(sample, inner) for sample in SAMPLES)


def _allows(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            data: "Any" = json.load(f)
    except (OSError, ValueError):
        return False  # absent or broken: verify names a broken file of ours; this is only a note
    perms = data.get("permissions") if isinstance(data, dict) else None
    rules = perms.get("allow") if isinstance(perms, dict) else None
    return isinstance(rules, list) and any(covers(r) for r in rules)


def _trusted(cwd: str) -> bool:
    """Has the person accepted Claude Code's trust dialog for `cwd` (`projects[<dir>]
    .hasTrustDialogAccepted` in its .claude.json)? Observed: the allow rules of a worktree's
    .claude/settings.json apply only then (its .claude/settings.local.json's always)."""
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    path = os.path.join(config, ".claude.json") if config else os.path.join(os.path.expanduser("~"), ".claude.json")
    try:
        with open(path, encoding="utf-8") as f:
            data: "Any" = json.load(f)
    except (OSError, ValueError):
        return False
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return False
    for key in {cwd, os.path.realpath(cwd)}:
        entry = projects.get(key)
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
    return False


def allowed_by(cwd: "Optional[str]") -> "Tuple[Optional[str], Optional[str]]":
    """(the first settings file Claude Code reads in `cwd` whose allow rule covers `git korus-mail`
    and applies, or None; a worktree's .claude/settings.json whose rule does not apply because the
    folder is not trusted, or None). Only the user's file when `cwd` is None."""
    if cwd and _allows(os.path.join(cwd, LOCAL)):
        return os.path.join(cwd, LOCAL), None
    if _allows(user_settings_path()):
        return user_settings_path(), None
    shared = os.path.join(cwd, SHARED) if cwd else None
    if shared and _allows(shared):
        return (shared, None) if _trusted(cwd or "") else (None, shared)
    return None, None


def advice(where: str) -> str:
    """What the person is told when no rule lets the model run `git korus-mail` in `where`."""
    return (f"in Claude Code's default permission mode the model's own `git korus-mail` (send, ask, reply) "
            f"is refused (\"{REFUSAL}\"), and in auto mode it is left to Claude Code's own check; our hooks "
            f"show and consume mail without a rule. To let the model run it, add {ALLOW_LINE} to "
            f"{user_settings_path()} (or a worktree's .claude/settings.local.json; a .claude/settings.json rule "
            f"applies only once you trusted the folder in Claude Code); install does not ({where})")
