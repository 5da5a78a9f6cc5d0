"""Codex's hooks.json: the entries install writes, checks and removes, and the file on disk.

Codex reads hooks.json beside each config layer in Claude Code's shape ({"hooks": {Event:
[{"matcher"?, "hooks": [handler]}]}}). Two places are ours to wire (docs/CLIENTS.md, "Codex
CLI: what install writes"): each worktree's `.codex/hooks.json` (Codex 0.171.0 reads a linked
worktree's hooks from the main worktree's file, and only when the linked worktree has a
.codex/ of its own), or the user's `$CODEX_HOME/hooks.json` with a repo anchor.
"""

import copy
import json
import os

from git_korus_mail.clients.codex.protocol import EVENTS, END_EVENT
from git_korus_mail.errors import MailError
from git_korus_mail.shell import sh_quote
from git_korus_mail.wiring import files as wfiles

HOOK_TIMEOUT = 30   # seconds; a drain takes milliseconds
END_TIMEOUT = 3     # Codex clamps SessionEnd to 3 s, with a warning at every start above it
STUB_TAIL = "/mail/hooks/codex-hook"  # every clone's Codex stub ends so: the mark of our entries
PROJECT_FILE = os.path.join(".codex", "hooks.json")
EXCLUDE_LINE = ".codex/hooks.json"
EXCLUDE_COVERING = {EXCLUDE_LINE, "/" + EXCLUDE_LINE, ".codex", ".codex/", "/.codex", "/.codex/"}


class BadHooks(Exception):
    pass


def codex_home():
    return os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")


def user_hooks_path():
    return os.path.join(codex_home(), "hooks.json")


def hook_command(stub, event, repo=None):
    cmd = f"{sh_quote(stub)} {event}"
    if repo:
        cmd += f" --repo {sh_quote(repo)}"
    return cmd


def wanted_groups(stub, repo=None):
    out = {}
    for event in EVENTS:
        group = {"matcher": "*"} if event == "PostToolUse" else {}
        group["hooks"] = [{"type": "command", "command": hook_command(stub, event, repo),
                           "timeout": END_TIMEOUT if event == END_EVENT else HOOK_TIMEOUT}]
        out[event] = group
    return out


def stub_of(hook):
    """The stub path a handler calls when it is one of ours (any clone's), else None."""
    if not isinstance(hook, dict) or hook.get("type") != "command" or not isinstance(hook.get("command"), str):
        return None
    cmd = hook["command"]
    if not cmd.startswith("'"):
        return None
    i, path = 1, []
    while i < len(cmd):  # the shell quoting sh_quote writes: '...' with '\'' for a quote
        if cmd.startswith("'\\''", i):
            path.append("'")
            i += 4
        elif cmd[i] == "'":
            break
        else:
            path.append(cmd[i])
            i += 1
    else:
        return None
    found = "".join(path)
    return found if found.endswith(STUB_TAIL) else None


def validate(doc):
    if not isinstance(doc, dict):
        raise BadHooks("the top level is not a JSON object")
    hooks = doc.get("hooks")
    if hooks is None:
        return
    if not isinstance(hooks, dict):
        raise BadHooks('"hooks" is not an object')
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise BadHooks(f'"hooks.{event}" is not a list')
        for i, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                raise BadHooks(f'"hooks.{event}[{i}]" is not a matcher group with a "hooks" list')


def _without_ours(groups, stub):
    out, removed = [], 0
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list):
            out.append(group)
            continue
        kept = [h for h in hooks if stub_of(h) != stub]
        removed += len(hooks) - len(kept)
        if len(kept) == len(hooks):
            out.append(group)
        elif kept:
            out.append(dict(group, hooks=kept))
    return out, removed


def _is_current(groups, want, stub):
    ours = [g for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            and any(stub_of(h) == stub for h in g["hooks"])]
    return len(ours) == 1 and ours[0] == want


def merge(doc, stub, repo=None, force=False):
    validate(doc)
    new = copy.deepcopy(doc)
    hooks = new.setdefault("hooks", {})
    for event, want in wanted_groups(stub, repo).items():
        groups = hooks.get(event, [])
        if not force and _is_current(groups, want, stub):
            continue
        groups, _ = _without_ours(groups, stub)
        hooks[event] = groups + [want]
    return new


def remove(doc, stub):
    validate(doc)
    new = copy.deepcopy(doc)
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


def callers(doc):
    out = []
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for group in groups if isinstance(groups, list) else ():
            for hook in (group.get("hooks") or ()) if isinstance(group, dict) else ():
                path = stub_of(hook)
                if path is not None:
                    out.append((event, path))
    return out


def check(doc, stub, repo=None):
    try:
        validate(doc)
    except BadHooks as exc:
        return [str(exc)]
    problems = []
    hooks = doc.get("hooks") or {}
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


# -- the file on disk ------------------------------------------------------------------
def read(path):
    """(raw bytes or None when absent, parsed dict or None). MailError when we cannot merge."""
    raw = wfiles.read_bytes(path)
    if raw is None:
        return None, None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise MailError(f"{path} is not valid JSON ({exc}); left it untouched: fix it and run install again") from None
    try:
        validate(data)
    except BadHooks as exc:
        raise MailError(f"{path}: {exc}; left it untouched: fix it and run install again") from None
    return raw, data


def dump(data, raw):
    """`data` as JSON in the style of the file it came from (indent 2 for a new one)."""
    text = raw.decode("utf-8") if raw else ""
    out = json.dumps(data, indent=2, ensure_ascii=not text or text.isascii())
    if not text or text.endswith("\n"):
        out += "\n"
    return out.encode("utf-8")


def wire_file(path, stub, repo, force, files):
    """Merge our entries into one hooks.json; `files` is the scope's record of files."""
    for _attempt in range(3):
        raw, data = read(path)
        base = data if data is not None else {}
        new = merge(base, stub, repo, force=force)
        if new == base and not force:
            return "current"
        created_dir = False
        if raw is None and not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path))
            created_dir = True
        if path not in files:
            had_ours = any(s == stub for _e, s in callers(base))
            files[path] = {"created": raw is None, "created_dir": created_dir,
                           "original": None if (raw is None or had_ours) else raw.decode("utf-8")}
        out = dump(new, raw)
        if raw is not None and out == raw and not force:
            return "current"
        if wfiles.write_atomic(path, out, wfiles.mode_of(path, wfiles.default_file_mode()), expect=raw):
            return "created" if raw is None else "updated"
    raise MailError(f"{path} kept changing while install merged into it; run install again")


def unwire_file(path, stub, rec):
    """Take our entries out of one hooks.json, restoring its bytes where we can."""
    raw, data = read(path)
    if data is None:
        return "absent"
    new, removed = remove(data, stub)
    if not removed and rec is None:
        return None
    rec = rec or {}
    if rec.get("created") and new == {}:
        os.unlink(path)
        if rec.get("created_dir"):
            try:
                os.rmdir(os.path.dirname(path))
            except OSError:
                pass
        return "deleted"
    original = rec.get("original")
    if original is not None:
        try:
            same = (json.loads(original) if original.strip() else {}) == new
        except ValueError:
            same = False
        if same:
            if original.encode("utf-8") != raw:
                _replace(path, original.encode("utf-8"), raw)
            return "restored"
    if not removed:
        return None
    _replace(path, dump(new, raw), raw)
    return "updated"


def _replace(path, data, raw):
    if not wfiles.write_atomic(path, data, wfiles.mode_of(path, 0o644), expect=raw):
        raise MailError(f"{path} changed while uninstall ran; run uninstall again")
