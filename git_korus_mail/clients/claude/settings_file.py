"""Claude Code's settings files on disk: where they are (each worktree's
.claude/settings.local.json, or the user's settings.json in $CLAUDE_CONFIG_DIR), reading one
we can merge into, writing it back in its own style, and taking our entries out again.
The JSON shape itself is settings.py's."""

import json
import os
import re

from git_korus_mail.clients.claude import settings as claude
from git_korus_mail.errors import MailError
from git_korus_mail.wiring import files as wfiles

LOCAL_SETTINGS = os.path.join(".claude", "settings.local.json")
EXCLUDE_LINE = ".claude/settings.local.json"
EXCLUDE_COVERING = {EXCLUDE_LINE, "/" + EXCLUDE_LINE, ".claude", ".claude/", "/.claude", "/.claude/"}


def read_settings(path):
    """(raw bytes or None when absent, parsed dict or None). MailError when the file is not
    a settings document we can merge into; the file is never touched then."""
    raw = wfiles.read_bytes(path)
    if raw is None:
        return None, None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise MailError(f"{path} is not valid JSON ({exc}); left it untouched: fix it and run install again") from None
    try:
        claude.validate_settings(data)
    except claude.BadSettings as exc:
        raise MailError(f"{path}: {exc}; left it untouched: fix it and run install again") from None
    return raw, data


def dump_like(data, raw):
    """Serialise `data` in the style of the file it came from: its indent (2 for a new or
    trivial file), its line ends, its final newline, raw non-ASCII or escaped."""
    text = raw.decode("utf-8") if raw else ""
    indent = 2
    if text.strip() and "\n" not in text.strip():
        indent = None if text.strip() not in ("{}",) else 2
    else:
        m = re.search(r"^([ \t]+)\S", text, re.M)
        if m:
            ws = m.group(1)
            indent = ws if "\t" in ws else len(ws)
    ascii_only = not text or text.isascii()
    out = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    if not text or text.endswith("\n"):
        out += "\n"
    if "\r\n" in text:
        out = out.replace("\n", "\r\n")
    return out.encode("utf-8")


def user_settings_path():
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(base, "settings.json")


def local_targets(clone, only_own=False):
    """[(settings path, worktree)] for the worktrees install wires, and the prunable ones skipped."""
    wts = clone.worktrees
    if only_own:
        own = clone.own_worktree()
        wts = [own] if own is not None else []
    targets, skipped = [], []
    for wt in wts:
        if wt.prunable or not os.path.isdir(wt.path):
            skipped.append(wt)
        else:
            targets.append((os.path.join(wt.path, LOCAL_SETTINGS), wt))
    return targets, skipped


def wire_file(path, stub, repo, force, files, urgent=False):
    """Merge our entries into one settings file; `files` is the scope's record of files;
    `urgent`: with the wake-up tier's watcher."""
    for _attempt in range(3):
        raw, data = read_settings(path)
        base = data if data is not None else {}
        new = claude.merge_settings(base, stub, repo, force=force, urgent=urgent)
        if new == base and not force:
            return "current"
        created_dir = False
        if raw is None and not os.path.isdir(os.path.dirname(path)):
            os.mkdir(os.path.dirname(path))
            created_dir = True
        if path not in files:
            had_ours = any(s == stub for _e, s in claude.callers(base))
            files[path] = {"created": raw is None, "created_dir": created_dir,
                           "original": None if (raw is None or had_ours) else raw.decode("utf-8")}
        out = dump_like(new, raw)
        if raw is not None and out == raw and not force:
            return "current"
        mode = wfiles.mode_of(path, wfiles.default_file_mode())
        if wfiles.write_atomic(path, out, mode, expect=raw):
            return "created" if raw is None else "updated"
    raise MailError(f"{path} kept changing while install merged into it; run install again")


def unwire_file(path, stub, rec):
    """Take our entries out of one settings file, restoring it as it was where we can."""
    raw, data = read_settings(path)
    if data is None:
        return "absent"
    new, removed = claude.remove_settings(data, stub)
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
    _replace_or_fail(path, dump_like(new, raw), raw)
    return "updated"


def _replace_or_fail(path, data, raw):
    if not wfiles.write_atomic(path, data, wfiles.mode_of(path, 0o644), expect=raw):
        raise MailError(f"{path} changed while uninstall ran; run uninstall again")
