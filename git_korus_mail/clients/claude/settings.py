"""Claude Code's settings documents: the hook entries install writes, checks and removes.

JSON-shape knowledge only; file I/O, locking and git wiring live with install. A matcher
group is {"matcher"?: str, "hooks": [hook]}; hooks from .claude/settings.local.json,
.claude/settings.json and the user's settings.json all run, and a command string identical
in several files runs once.
"""

from git_korus_mail.clients.claude.protocol import CONSUME_EVENT, EVENTS, WATCH_ARG
from git_korus_mail.shell import sh_quote

HOOK_TIMEOUT = 30          # seconds; a drain takes milliseconds, a cold start well under 1 s
# The watcher waits core/wake.REACH (900 s) inside this, so a wake is never confused with a kill
# (docs/DESIGN.md R12); measured on 2.1.332 in docs/HOOKS.md, "The wake-up tier".
WATCH_TIMEOUT = 1200
REWAKE_SUMMARY = "korus-mail: new mail"  # the <summary> line of Claude Code's wake notification
REWAKE_MESSAGE = "korus-mail:"           # replaces its "Stop hook blocking error from ..." prefix
STUB_TAIL = "/mail/hooks/claude-hook"  # every clone's stub ends so: the mark of our entries
_QUOTED_HEAD = None


class BadSettings(Exception):
    """A settings document we cannot merge into without guessing; the text says where."""


def hook_command(stub, event, repo=None):
    """`'<stub>' <Event> [--repo '<clone>']`: the stub takes the event only for its fault form."""
    cmd = f"{sh_quote(stub)} {event}"
    if repo:
        cmd += f" --repo {sh_quote(repo)}"
    return cmd


def watch_hook(stub, repo=None):
    """The wake-up tier's entry (install --urgent): the watcher, beside the drain at Stop. Both
    async and asyncRewake: asyncRewake alone runs in the foreground under `-p` (DESIGN R12)."""
    return {"type": "command", "command": hook_command(stub, WATCH_ARG, repo), "async": True,
            "asyncRewake": True, "timeout": WATCH_TIMEOUT, "rewakeSummary": REWAKE_SUMMARY,
            "rewakeMessage": REWAKE_MESSAGE}


def wanted_groups(stub, repo=None, urgent=False):
    """{event: the matcher group install puts in a settings file}; with `urgent`, the Stop group
    holds the watcher too.

    No matcher means every source at SessionStart; PostToolUse names "*" so the
    entry reads as "every tool" to a person editing the file."""
    out = {}
    for event in EVENTS:
        group = {"matcher": "*"} if event == "PostToolUse" else {}
        group["hooks"] = [{"type": "command", "command": hook_command(stub, event, repo),
                           "timeout": HOOK_TIMEOUT}]
        if urgent and event == CONSUME_EVENT:
            group["hooks"].append(watch_hook(stub, repo))
        out[event] = group
    return out


def has_watcher(settings, stub):
    """Whether the document holds our watcher entry for `stub` (the wake-up tier is armed there)."""
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    groups = hooks.get(CONSUME_EVENT) if isinstance(hooks, dict) else None
    return any(isinstance(g, dict) and any(stub_of(h) == stub and h.get("asyncRewake") is True
                                           for h in (g.get("hooks") or ()) if isinstance(h, dict))
               for g in (groups if isinstance(groups, list) else ()))


def stub_of(hook):
    """The stub path a hook entry calls when it is one of ours (any clone's), else None."""
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return None
    cmd = hook.get("command")
    if not isinstance(cmd, str):
        return None
    global _QUOTED_HEAD
    if _QUOTED_HEAD is None:
        import re
        _QUOTED_HEAD = re.compile(r"'((?:[^']|'\\'')*)'(?: |$)")
    m = _QUOTED_HEAD.match(cmd)
    if not m:
        return None
    path = m.group(1).replace("'\\''", "'")
    return path if path.endswith(STUB_TAIL) else None


def validate_settings(settings):
    """Raise BadSettings when the document's hook section is not the shape Claude Code reads.

    We refuse rather than repair: rewriting a section we do not understand could
    drop someone else's hooks."""
    if not isinstance(settings, dict):
        raise BadSettings("the top level is not a JSON object")
    hooks = settings.get("hooks")
    if hooks is None:
        return
    if not isinstance(hooks, dict):
        raise BadSettings('"hooks" is not an object')
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise BadSettings(f'"hooks.{event}" is not a list')
        for i, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                raise BadSettings(f'"hooks.{event}[{i}]" is not a matcher group with a "hooks" list')


def _without_ours(groups, stub):
    """(groups with our hooks for `stub` taken out, how many were taken). A group left
    empty by the removal goes too; foreign hooks and groups keep their place."""
    out, removed = [], 0
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list):
            out.append(group)
            continue
        kept = [h for h in hooks if stub_of(h) != stub]
        if len(kept) == len(hooks):
            out.append(group)
            continue
        removed += len(hooks) - len(kept)
        if kept:
            out.append(dict(group, hooks=kept))
    return out, removed


def _is_current(groups, want, stub):
    """True when our only hook for `stub` in this event sits alone in a group equal to `want`."""
    ours = [g for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            and any(stub_of(h) == stub for h in g["hooks"])]
    return len(ours) == 1 and ours[0] == want


def merge_settings(settings, stub, repo=None, force=False, urgent=False):
    """A copy of `settings` with our entries for `stub`; equal to the input when they are current.

    Stale entries of this stub (another anchor, another timeout) are replaced, never
    duplicated. `force` puts them back afresh (last in each event) even when current."""
    import copy
    validate_settings(settings)
    new = copy.deepcopy(settings)
    hooks = new.get("hooks")
    if hooks is None:
        hooks = new["hooks"] = {}
    for event, want in wanted_groups(stub, repo, urgent).items():
        groups = hooks.get(event, [])
        if not force and _is_current(groups, want, stub):
            continue
        groups, _ = _without_ours(groups, stub)
        hooks[event] = groups + [want]
    return new


def remove_settings(settings, stub):
    """(a copy of `settings` without our entries for `stub`, number of hooks removed).

    An event list, or the "hooks" object, emptied by the removal is dropped; one that
    was empty before stays as it was."""
    import copy
    validate_settings(settings)
    new = copy.deepcopy(settings)
    hooks = new.get("hooks")
    if not hooks:
        return new, 0
    total = 0
    for event in list(hooks):
        groups, removed = _without_ours(hooks[event], stub)
        if removed:
            total += removed
            if groups:
                hooks[event] = groups
            else:
                del hooks[event]
    if total and not hooks:
        del new["hooks"]
    return new, total


def callers(settings):
    """[(event, stub path)] for every entry of ours (any clone's) in a settings document."""
    out = []
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else ():
            for hook in (group.get("hooks") or ()) if isinstance(group, dict) else ():
                path = stub_of(hook)
                if path is not None:
                    out.append((event, path))
    return out


def check_settings(settings, stub, repo=None, urgent=None):
    """Problems with our entries for `stub` in one settings document ([] when wired right).
    `urgent`: whether the wake-up tier must be armed there; None accepts either form."""
    try:
        validate_settings(settings)
    except BadSettings as exc:
        return [str(exc)]
    problems = []
    if settings.get("disableAllHooks") is True:
        problems.append('"disableAllHooks" is true: no hook runs from this file')
    hooks = settings.get("hooks") or {}
    if urgent is None:
        urgent = has_watcher(settings, stub)
    for event, want in wanted_groups(stub, repo, urgent).items():
        groups = hooks.get(event, [])
        mine = sum(1 for g in groups for h in g["hooks"] if stub_of(h) == stub)
        expected = len(want["hooks"])
        if mine == 0:
            problems.append(f"{event}: no entry")
        elif mine < expected:
            problems.append(f"{event}: the wake-up tier's watcher is missing (install --urgent arms it)")
        elif mine > expected:
            problems.append(f"{event}: {mine} entries (expected {'one' if expected == 1 else expected})")
        elif not _is_current(groups, want, stub):
            problems.append(f"{event}: entry differs from what install writes (stale)")
    return problems


