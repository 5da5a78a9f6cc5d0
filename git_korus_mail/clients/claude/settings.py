"""Claude Code's settings documents: the hook entries install writes, checks and removes.

JSON-shape knowledge only: what goes in is Claude Code's (the watcher, the timeouts), the
editing is shared with Codex (wiring/hookdoc.py); file I/O lives in settings_file.py. A matcher
group is {"matcher"?: str, "hooks": [hook]}; hooks from .claude/settings.local.json,
.claude/settings.json and the user's settings.json all run, and a command string identical
in several files runs once.
"""

from git_korus_mail.clients.claude.protocol import CONSUME_EVENT, EDIT_TOOLS, EVENTS, PRE_EDIT_EVENT, WATCH_ARG
from git_korus_mail.wiring import hookdoc

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.clients.interface import Doc, Group

HOOK_TIMEOUT = 30          # seconds; a drain takes milliseconds, a cold start well under 1 s
# The watcher waits core/wake.REACH (900 s) inside this, so a wake is never confused with a kill
# (docs/DESIGN.md R12); measured on 2.1.332 in docs/HOOKS.md, "The wake-up tier".
WATCH_TIMEOUT = 1200
REWAKE_SUMMARY = "korus-mail: new mail"  # the <summary> line of Claude Code's wake notification
REWAKE_MESSAGE = "korus-mail:"           # replaces its "Stop hook blocking error from ..." prefix
STUB_TAIL = "/mail/hooks/claude-hook"  # every clone's stub ends so: the mark of our entries
BadSettings = hookdoc.BadHooks  # a settings document we cannot merge into without guessing
hook_command = hookdoc.hook_command  # `'<stub>' <Event> [--repo '<clone>']`


def watch_hook(stub: str, repo: "Optional[str]" = None) -> "Dict[str, Any]":
    """The wake-up tier's entry (install --urgent): the watcher, beside the drain at Stop. Both
    async and asyncRewake: asyncRewake alone runs in the foreground under `-p` (DESIGN R12)."""
    return {"type": "command", "command": hook_command(stub, WATCH_ARG, repo), "async": True,
            "asyncRewake": True, "timeout": WATCH_TIMEOUT, "rewakeSummary": REWAKE_SUMMARY,
            "rewakeMessage": REWAKE_MESSAGE}


def wanted_groups(stub: str, repo: "Optional[str]" = None, urgent: bool = False) -> "Dict[str, Group]":
    """{event: the matcher group install puts in a settings file}; with `urgent`, the Stop group
    holds the watcher too.

    No matcher means every source at SessionStart; PostToolUse names "*" so the
    entry reads as "every tool" to a person editing the file."""
    out: "Dict[str, Group]" = {}
    for event in EVENTS:
        group: "Group" = {"matcher": "*"} if event == "PostToolUse" else {}
        group["hooks"] = [{"type": "command", "command": hook_command(stub, event, repo),
                           "timeout": HOOK_TIMEOUT}]
        if urgent and event == CONSUME_EVENT:
            group["hooks"].append(watch_hook(stub, repo))
        out[event] = group
    # before an edit: only the editing tools (reservations; the stub answers in sh when none exist)
    out[PRE_EDIT_EVENT] = {"matcher": "|".join(EDIT_TOOLS),
                           "hooks": [{"type": "command", "command": hook_command(stub, PRE_EDIT_EVENT, repo),
                                      "timeout": HOOK_TIMEOUT}]}
    return out


def has_watcher(settings: object, stub: str) -> bool:
    """Whether the document holds our watcher entry for `stub` (the wake-up tier is armed there)."""
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    groups = hooks.get(CONSUME_EVENT) if isinstance(hooks, dict) else None
    return any(isinstance(g, dict) and any(stub_of(h) == stub and h.get("asyncRewake") is True
                                           for h in (g.get("hooks") or ()) if isinstance(h, dict))
               for g in (groups if isinstance(groups, list) else ()))


def stub_of(hook: object) -> "Optional[str]":
    """The stub path a hook entry calls when it is one of ours (any clone's), else None."""
    return hookdoc.stub_of(hook, STUB_TAIL)


def validate_settings(settings: object) -> None:
    """Raise BadSettings when the document's hook section is not the shape Claude Code reads."""
    hookdoc.validate(settings)


def merge_settings(settings: "Doc", stub: str, repo: "Optional[str]" = None, force: bool = False,
                   urgent: bool = False) -> "Doc":
    """A copy of `settings` with our entries for `stub`; equal to the input when they are current
    (wiring/hookdoc.py); `force` puts them back afresh, `urgent` with the watcher."""
    return hookdoc.merge(settings, stub, STUB_TAIL, wanted_groups(stub, repo, urgent), force)


def remove_settings(settings: "Doc", stub: str) -> "Tuple[Doc, int]":
    """(a copy of `settings` without our entries for `stub`, number of hooks removed)."""
    return hookdoc.remove(settings, stub, STUB_TAIL)


def callers(settings: object) -> "List[Tuple[str, str]]":
    """[(event, stub path)] for every entry of ours (any clone's) in a settings document."""
    return hookdoc.callers(settings, STUB_TAIL)


def check_settings(settings: "Doc", stub: str, repo: "Optional[str]" = None,
                   urgent: "Optional[bool]" = None) -> "List[str]":
    """Problems with our entries for `stub` in one settings document ([] when wired right).
    `urgent`: whether the wake-up tier must be armed there; None accepts either form."""
    try:
        validate_settings(settings)
    except BadSettings as exc:
        return [str(exc)]
    problems: "List[str]" = []
    if settings.get("disableAllHooks") is True:
        problems.append('"disableAllHooks" is true: no hook runs from this file')
    if urgent is None:
        urgent = has_watcher(settings, stub)
    return problems + hookdoc.event_problems(settings, stub, STUB_TAIL, wanted_groups(stub, repo, urgent),
                                             too_few="the wake-up tier's watcher is missing (install --urgent arms it)")
