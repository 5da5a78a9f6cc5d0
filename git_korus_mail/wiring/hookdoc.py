"""A hooks document as Claude Code and Codex both read it: {"hooks": {Event: [{"matcher"?,
"hooks": [{"type": "command", "command", ...}]}]}} (docs/CLIENTS.md). Finding our entries in
it, merging them in, taking them out, and the file on disk, read and restored byte for byte.

What a client puts in (its wanted groups), the mark of its entries (the stub's path tail) and
the style it writes a file back in are the client's own (clients/<client>/); this module only
edits the shape both share."""

import copy
import json
import os

from git_korus_mail.errors import MailError
from git_korus_mail.shell import sh_quote
from git_korus_mail.wiring import files as wfiles

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.core.gitrepo import Worktree

    # JSON from a file anyone may have edited: read with isinstance and .get, so Any inside
    Doc = Dict[str, Any]    # a hooks document, as JSON gave it (validate checks its shape)
    Group = Dict[str, Any]  # one matcher group: {"matcher"?, "hooks": [handler, ...]}
    Files = Dict[str, Dict[str, Any]]  # a scope's record of the files it wired (wiring/record.py)


class BadHooks(Exception):
    """A hooks document we cannot merge into without guessing; the text says where."""


def hook_command(stub: str, event: str, repo: "Optional[str]" = None) -> str:
    """`'<stub>' <Event> [--repo '<clone>']`: the stub takes the event only for its fault form."""
    cmd = f"{sh_quote(stub)} {event}"
    if repo:
        cmd += f" --repo {sh_quote(repo)}"
    return cmd


def stub_of(hook: object, tail: str) -> "Optional[str]":
    """The stub path a handler calls when it is one of ours (any clone's: its path ends with
    `tail`), else None. The command must start with the path as sh_quote writes it ('...' with
    '\\'' for a quote), followed by a space or nothing."""
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return None
    cmd = hook.get("command")
    if not isinstance(cmd, str) or not cmd.startswith("'"):
        return None
    i = 1
    path: "List[str]" = []
    while i < len(cmd):
        if cmd.startswith("'\\''", i):
            path.append("'")
            i += 4
        elif cmd[i] == "'":
            break
        else:
            path.append(cmd[i])
            i += 1
    else:
        return None  # no closing quote
    if cmd[i + 1:i + 2] not in ("", " ") and cmd[i + 1:] != "\n":
        return None  # the word goes on past the quotes: another path
    found = "".join(path)
    return found if found.endswith(tail) else None


def validate(doc: object) -> None:
    """Raise BadHooks when the document's hook section is not the shape the clients read.

    We refuse rather than repair: rewriting a section we do not understand could
    drop someone else's hooks."""
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


def _without_ours(groups: "List[Any]", stub: str, tail: str) -> "Tuple[List[Any], int]":
    """(groups with our hooks for `stub` taken out, how many were taken). A group left
    empty by the removal goes too; foreign hooks and groups keep their place."""
    out: "List[Any]" = []
    removed = 0
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list):
            out.append(group)
            continue
        kept = [h for h in hooks if stub_of(h, tail) != stub]
        if len(kept) == len(hooks):
            out.append(group)
            continue
        removed += len(hooks) - len(kept)
        if kept:
            out.append(dict(group, hooks=kept))
    return out, removed


def _is_current(groups: "List[Any]", want: "Group", stub: str, tail: str) -> bool:
    """True when our only hook for `stub` in this event sits alone in a group equal to `want`."""
    ours = [g for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            and any(stub_of(h, tail) == stub for h in g["hooks"])]
    return len(ours) == 1 and ours[0] == want


def merge(doc: "Doc", stub: str, tail: str, wanted: "Mapping[str, Group]", force: bool = False) -> "Doc":
    """A copy of `doc` with the groups `wanted` ({event: group}) for `stub`; equal to the input
    when they are current. Stale entries of this stub (another anchor, another timeout) are
    replaced, never duplicated. `force` puts them back afresh (last in each event)."""
    validate(doc)
    new = copy.deepcopy(doc)
    hooks: "Optional[Dict[str, Any]]" = new.get("hooks")
    if hooks is None:
        hooks = new["hooks"] = {}
    for event, want in wanted.items():
        groups = hooks.get(event, [])
        if not force and _is_current(groups, want, stub, tail):
            continue
        groups, _ = _without_ours(groups, stub, tail)
        hooks[event] = groups + [want]
    return new


def remove(doc: "Doc", stub: str, tail: str) -> "Tuple[Doc, int]":
    """(a copy of `doc` without our entries for `stub`, number of hooks removed).

    An event list, or the "hooks" object, emptied by the removal is dropped; one that
    was empty before stays as it was."""
    validate(doc)
    new = copy.deepcopy(doc)
    hooks = new.get("hooks")
    if not hooks:
        return new, 0
    total = 0
    for event in list(hooks):
        groups, removed = _without_ours(hooks[event], stub, tail)
        if removed:
            total += removed
            if groups:
                hooks[event] = groups
            else:
                del hooks[event]
    if total and not hooks:
        del new["hooks"]
    return new, total


def callers(doc: object, tail: str) -> "List[Tuple[str, str]]":
    """[(event, stub path)] for every entry of ours (any clone's) in a hooks document."""
    out: "List[Tuple[str, str]]" = []
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else ():
            for hook in (group.get("hooks") or ()) if isinstance(group, dict) else ():
                path = stub_of(hook, tail)
                if path is not None:
                    out.append((event, path))
    return out


def event_problems(doc: "Doc", stub: str, tail: str, wanted: "Mapping[str, Group]", too_few: str) -> "List[str]":
    """Problems with our entries for `stub` in a validated document, event by event ([] when
    each event holds exactly the group in `wanted`). `too_few`: what to say when an event has
    some of our hooks but fewer than its wanted group holds."""
    problems: "List[str]" = []
    hooks = doc.get("hooks") or {}
    for event, want in wanted.items():
        groups = hooks.get(event, [])
        mine = sum(1 for g in groups for h in g["hooks"] if stub_of(h, tail) == stub)
        expected = len(want["hooks"])
        if mine == 0:
            problems.append(f"{event}: no entry")
        elif mine < expected:
            problems.append(f"{event}: {too_few}")
        elif mine > expected:
            problems.append(f"{event}: {mine} entries (expected {'one' if expected == 1 else expected})")
        elif not _is_current(groups, want, stub, tail):
            problems.append(f"{event}: entry differs from what install writes (stale)")
    return problems


# -- the files on disk -----------------------------------------------------------------
def worktree_targets(clone: "Clone", relpath: str,
                     only_own: bool = False) -> "Tuple[List[Tuple[str, Worktree]], List[Worktree]]":
    """([(the file at `relpath` in a worktree, that worktree)] for the worktrees install wires,
    [the prunable or missing worktrees skipped]). `only_own`: just the worktree we run in."""
    wts = clone.worktrees
    if only_own:
        own = clone.own_worktree()
        wts = [own] if own is not None else []
    targets: "List[Tuple[str, Worktree]]" = []
    skipped: "List[Worktree]" = []
    for wt in wts:
        if wt.prunable or not os.path.isdir(wt.path):
            skipped.append(wt)
        else:
            targets.append((os.path.join(wt.path, relpath), wt))
    return targets, skipped


def calls_stub(path: str, stub: str, tail: str) -> bool:
    """True when the hooks file at `path` has an entry calling `stub` (or cannot be read: a
    broken file is for the client's verify to report)."""
    try:
        _raw, data = read(path)
    except (MailError, OSError):
        return True
    return data is not None and any(s == stub for _e, s in callers(data, tail))


def read(path: str) -> "Tuple[Optional[bytes], Optional[Doc]]":
    """(raw bytes or None when absent, parsed dict or None). MailError when the file is not
    a hooks document we can merge into; the file is never touched then."""
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


def wire_file(path: str, stub: str, tail: str, files: "Files", merged: "Callable[[Doc], Doc]",
              dump: "Callable[[Doc, Optional[bytes]], bytes]", force: bool = False,
              mkdir: "Callable[[str], None]" = os.mkdir) -> str:
    """Merge our entries into one hooks file; `files` is the scope's record of files (what
    uninstall needs to restore it), `merged(doc)` the document with our entries, `dump(doc,
    raw)` its bytes in the client's style, `mkdir` how the file's folder is made when absent."""
    for _attempt in range(3):
        raw, data = read(path)
        base = data if data is not None else {}
        new = merged(base)
        if new == base and not force:
            return "current"
        created_dir = False
        if raw is None and not os.path.isdir(os.path.dirname(path)):
            mkdir(os.path.dirname(path))
            created_dir = True
        if path not in files:
            had_ours = any(s == stub for _e, s in callers(base, tail))
            files[path] = {"created": raw is None, "created_dir": created_dir,
                           "original": None if (raw is None or had_ours) else raw.decode("utf-8")}
        out = dump(new, raw)
        if raw is not None and out == raw and not force:
            return "current"
        mode = wfiles.mode_of(path, wfiles.default_file_mode())
        if wfiles.write_atomic(path, out, mode, expect=raw):
            return "created" if raw is None else "updated"
    raise MailError(f"{path} kept changing while install merged into it; run install again")


def unwire_file(path: str, stub: str, tail: str, rec: "Optional[Dict[str, Any]]",
                dump: "Callable[[Doc, Optional[bytes]], bytes]") -> "Optional[str]":
    """Take our entries out of one hooks file, restoring it as it was where we can; `rec` is
    what wire_file recorded for it (None: no record), `dump` as for wire_file."""
    raw, data = read(path)
    if data is None:
        return "absent"
    new, removed = remove(data, stub, tail)
    if not removed and rec is None:
        return None
    rec = rec or {}
    if rec.get("created") and new == {}:
        os.unlink(path)
        if rec.get("created_dir"):
            try:
                os.rmdir(os.path.dirname(path))
            except OSError:
                pass  # something else lives there now: keep it
        return "deleted"
    original = rec.get("original")
    if original is not None:
        try:
            same = (json.loads(original) if original.strip() else {}) == new
        except ValueError:
            same = False
        if same:
            # untouched since install apart from our entries: put back the exact bytes
            if original.encode("utf-8") != raw:
                _replace_or_fail(path, original.encode("utf-8"), raw)
            return "restored"
    if not removed:
        return None
    _replace_or_fail(path, dump(new, raw), raw)
    return "updated"


def _replace_or_fail(path: str, data: bytes, raw: "Optional[bytes]") -> None:
    if not wfiles.write_atomic(path, data, wfiles.mode_of(path, 0o644), expect=raw):
        raise MailError(f"{path} changed while uninstall ran; run uninstall again")
