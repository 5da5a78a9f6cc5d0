"""Claude Code: the hook protocol (JSON in on stdin, JSON out on stdout) and its settings files.

Everything client-specific lives here, so a second client is one more module.
Facts this follows (Claude Code 2.1.332, observed):
- every payload carries session_id, transcript_path, cwd, hook_event_name;
- `hookSpecificOutput.additionalContext` reaches the model at SessionStart,
  UserPromptSubmit and PostToolUse; at Stop it would start another turn, so the
  drain never uses it there;
- `systemMessage` reaches only the user: the channel for faults;
- context over 10,000 characters is not sent inline (it is saved to a file), so the
  drain's cap sits well below it;
- a wrong type in the output drops the whole output: we print only our own keys
  and only strings;
- the session id survives `--resume` and `--continue`, so it does not tell two
  processes apart; every hook's environment names the Claude Code process in
  CLAUDE_PID and its account in CLAUDE_CONFIG_DIR (`launch_of`, `account_of`).
"""

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)

SHOW_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse")
CONSUME_EVENT = "Stop"
END_EVENT = "SessionEnd"
EVENTS = SHOW_EVENTS + (CONSUME_EVENT, END_EVENT)
INLINE_LIMIT = 10_000  # Claude Code's inline limit for additionalContext / plain stdout
MAX_CWD = 4096  # PATH_MAX on Linux: no longer path can name a directory a session runs in


class Payload:
    """The fields of a hook payload the drain uses."""

    __slots__ = ("event", "session", "cwd", "source", "raw")

    def __init__(self, event, session, cwd, source, raw):
        self.event, self.session, self.cwd, self.source, self.raw = event, session, cwd, source, raw


class BadPayload(Exception):
    pass


def read_payload(data):
    """Parse stdin bytes; BadPayload when it is not a hook payload we can act on."""
    try:
        raw = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        raise BadPayload("stdin is not JSON") from None
    if not isinstance(raw, dict):
        raise BadPayload("stdin is not a JSON object")
    event = raw.get("hook_event_name")
    session = raw.get("session_id")
    cwd = raw.get("cwd")
    if not isinstance(event, str) or not event:
        raise BadPayload("no hook_event_name")
    if not isinstance(session, str) or not session:
        raise BadPayload("no session_id")
    if not isinstance(cwd, str) or not cwd:
        raise BadPayload("no cwd")
    if "\0" in cwd:
        raise BadPayload("cwd contains a NUL character")
    if len(cwd) > MAX_CWD:
        raise BadPayload(f"cwd is {len(cwd)} characters long, over {MAX_CWD}")
    source = raw.get("source") if isinstance(raw.get("source"), str) else None
    return Payload(event, session, cwd, source, raw)


def launch_of(environ):
    """The Claude Code process running this hook (launch.Launch), from CLAUDE_PID; a
    launch.NoLaunch when Claude Code named none (a hand-run drain, an older client)."""
    from git_korus_mail.launch import Launch, NoLaunch
    raw = environ.get("CLAUDE_PID")
    if not raw:
        return NoLaunch("CLAUDE_PID is not set")
    try:
        pid = int(raw)
    except ValueError:
        return NoLaunch("CLAUDE_PID is not a process id")
    return Launch.of_process("claude", pid)


def account_of(environ):
    """Which Claude Code account (config dir) the session runs under, when it says."""
    return environ.get("CLAUDE_CONFIG_DIR") or None


def context_output(event, text, notice=None):
    """Output that puts `text` into the model's context at a showing event (and, when given,
    `notice` before the user only)."""
    out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    if notice:
        out["systemMessage"] = notice
    return json.dumps(out, ensure_ascii=True)


def user_notice_output(text):
    """Output shown to the user only (faults at Stop): the model never sees it."""
    return json.dumps({"systemMessage": text}, ensure_ascii=True)


def fault_output(event, text):
    """A fault in the form the event shows: the user's channel; at SessionStart the model's too,
    because that is where a reader decides whether mail works at all."""
    if event == "SessionStart":
        return json.dumps({"systemMessage": text,
                           "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                          ensure_ascii=True)
    return user_notice_output(text)


# -- settings files: the hook entries install writes ------------------------------
# JSON-shape knowledge of Claude Code's settings lives here; file I/O, locking and
# git wiring live in install.py. A matcher group is {"matcher"?: str, "hooks": [hook]};
# hooks from .claude/settings.local.json, .claude/settings.json and the user's
# settings.json all run, and a command string identical in several files runs once.

HOOK_TIMEOUT = 30          # seconds; a drain takes milliseconds, a cold start well under 1 s
STUB_TAIL = "/mail/hooks/claude-hook"  # every clone's stub ends so: the mark of our entries
_QUOTED_HEAD = None


class BadSettings(Exception):
    """A settings document we cannot merge into without guessing; the text says where."""


def sh_quote(text):
    """Single-quote for the shell Claude Code runs hook commands with (/bin/sh), whatever the text holds."""
    return "'" + text.replace("'", "'\\''") + "'"


def hook_command(stub, event, repo=None):
    """`'<stub>' <Event> [--repo '<clone>']`: the stub takes the event only for its fault form."""
    cmd = f"{sh_quote(stub)} {event}"
    if repo:
        cmd += f" --repo {sh_quote(repo)}"
    return cmd


def wanted_groups(stub, repo=None):
    """{event: the matcher group install puts in a settings file}.

    No matcher means every source at SessionStart; PostToolUse names "*" so the
    entry reads as "every tool" to a person editing the file."""
    out = {}
    for event in EVENTS:
        group = {"matcher": "*"} if event == "PostToolUse" else {}
        group["hooks"] = [{"type": "command", "command": hook_command(stub, event, repo),
                           "timeout": HOOK_TIMEOUT}]
        out[event] = group
    return out


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


def merge_settings(settings, stub, repo=None, force=False):
    """A copy of `settings` with our entries for `stub`; equal to the input when they are current.

    Stale entries of this stub (another anchor, another timeout) are replaced, never
    duplicated. `force` puts them back afresh (last in each event) even when current."""
    import copy
    validate_settings(settings)
    new = copy.deepcopy(settings)
    hooks = new.get("hooks")
    if hooks is None:
        hooks = new["hooks"] = {}
    for event, want in wanted_groups(stub, repo).items():
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


def check_settings(settings, stub, repo=None):
    """Problems with our entries for `stub` in one settings document ([] when wired right)."""
    try:
        validate_settings(settings)
    except BadSettings as exc:
        return [str(exc)]
    problems = []
    if settings.get("disableAllHooks") is True:
        problems.append('"disableAllHooks" is true: no hook runs from this file')
    hooks = settings.get("hooks") or {}
    for event, want in wanted_groups(stub, repo).items():
        groups = hooks.get(event, [])
        mine = sum(1 for g in groups for h in g["hooks"] if stub_of(h) == stub)
        if mine == 0:
            problems.append(f"{event}: no entry")
        elif mine > 1:
            problems.append(f"{event}: {mine} entries (expected one)")
        elif not _is_current(groups, want, stub):
            problems.append(f"{event}: entry differs from what install writes (stale)")
    return problems


def check_answer(event, stdout):
    """None when a hook's stdout is an answer Claude Code accepts at `event` and carries no
    fault; otherwise what is wrong. Empty output is accepted (the hook said nothing)."""
    text = stdout.strip()
    if not text:
        return None
    try:
        answer = json.loads(text)
    except ValueError:
        return f"output is not JSON: {text[:120]!r}"
    if not isinstance(answer, dict):
        return "output is not a JSON object"
    spec = answer.get("hookSpecificOutput")
    if spec is not None:
        if not isinstance(spec, dict) or spec.get("hookEventName") != event:
            return f"hookSpecificOutput.hookEventName is not {event}"
        if "additionalContext" in spec and not isinstance(spec["additionalContext"], str):
            return "hookSpecificOutput.additionalContext is not a string"
    message = answer.get("systemMessage")
    if message is not None:
        # the channel faults use: a drain that reports one is not working
        return f"the hook reported: {message}" if isinstance(message, str) else "systemMessage is not a string"
    return None
