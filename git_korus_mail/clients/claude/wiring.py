"""Claude Code's install wiring, in the terms install, uninstall and doctor ask every client for
(clients.installers): its stub, its settings files per scope, its exclude line, and the proof
that the wiring works."""

import os

from git_korus_mail.clients.claude import permissions, settings_file, stub, verify
from git_korus_mail.clients.claude.protocol import OPENING_EVENT
from git_korus_mail.wiring.postcheckout import POST_CHECKOUT_ENV, repo_anchor

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import IO, Iterable, List, Optional, Tuple

    from git_korus_mail.clients.interface import ScopeRec, Wired
    from git_korus_mail.core.clone import Clone
    from git_korus_mail.core.gitrepo import Worktree
    from git_korus_mail.wiring.record import Record

NAME = "claude"
EXCLUDE_LINE = settings_file.EXCLUDE_LINE
EXCLUDE_COVERING = settings_file.EXCLUDE_COVERING
VERIFIED_AS = f"the stub answers {OPENING_EVENT}"  # what a verified settings file proves (doctor says it)
stub_path = stub.stub_path
write_stub = stub.write_stub
render_stub = stub.render_stub
read_settings = settings_file.read_settings
wire_file = settings_file.wire_file
unwire_file = settings_file.unwire_file
check = verify.verify
wired_files = verify.wired_files


def settings_targets(clone: "Clone", scope: str, only_own: bool = False) -> "Tuple[Wired, List[Worktree]]":
    """([(settings path, repo anchor or None, cwd)] install wires for `scope`, prunable
    worktrees skipped). `only_own`: just the worktree install runs in (post-checkout)."""
    if scope == "local":
        targets, skipped = settings_file.local_targets(clone, only_own)
        return [(path, None, wt.path) for path, wt in targets], skipped
    anchor = repo_anchor(clone)
    return [(settings_file.user_settings_path(), anchor, anchor)], []


def unwire_candidates(clone: "Clone", scope: str, recorded: "Iterable[str]") -> "List[str]":
    """The settings files uninstall looks at for `scope`: those install recorded, then those
    where our entries may be without a record (a damaged or older record)."""
    if scope == "local":
        found = [p for p, _wt in settings_file.local_targets(clone)[0]]
    else:
        found = [settings_file.user_settings_path()]
    return list(recorded) + [p for p in found if p not in recorded]


WAKE_TIER = True  # install --urgent adds the watcher (docs/HOOKS.md, "The wake-up tier")
NEEDS_POST_CHECKOUT = True  # each worktree has its own settings file: `git worktree add` must wire it
EXCLUDE_KEY = "exclude"  # where installed.json records the exclude line


def after_wiring(clone: "Clone", scope: str, wired: "Wired", scope_rec: "ScopeRec",
                 out: "IO[str]") -> "List[Tuple[str, str]]":
    """Claude Code runs the settings files as they are; install only says which allow rule the
    model's own `git korus-mail` needs in Claude Code's default permission mode, and writes none
    (clients/claude/permissions.py)."""
    if os.environ.get(POST_CHECKOUT_ENV):
        return []
    missing = [cwd for _p, _r, cwd in wired if permissions.allowed_by(cwd)[0] is None]
    if missing:
        out.write(f"claude permissions  {permissions.advice('not allowed in ' + ', '.join(missing))}\n")
    return []


def doctor_notes(wired: "Wired") -> "List[Tuple[str, str]]":
    """[(where, detail)] for doctor, a note and never a problem: whether the settings Claude Code
    reads there let the model run `git korus-mail` in its default permission mode."""
    notes: "List[Tuple[str, str]]" = []
    for _path, repo, cwd in wired:
        by, untrusted = permissions.allowed_by(None if repo else cwd)
        if by:
            detail = (f"the model may run `git korus-mail` in Claude Code's default permission mode "
                      f"(an allow rule in {by})")
        elif untrusted:
            detail = permissions.advice(f"the rule in {untrusted} does not apply: this folder is not trusted "
                                        f"in Claude Code; a note, not a fault")
        else:
            detail = permissions.advice("a note, not a fault")
        notes.append((repo or cwd, detail))
    return notes


def after_unwiring(scope_rec: "ScopeRec", out: "IO[str]") -> None:
    return None


def watcher_armed(path: str, stub: str) -> "Optional[bool]":
    """Whether the settings file at `path` holds the wake-up tier's watcher for `stub`
    (None when the file cannot be read: verify reports that)."""
    from git_korus_mail.clients.claude import settings
    from git_korus_mail.errors import MailError
    try:
        _raw, data = read_settings(path)
    except (MailError, OSError):
        return None
    return data is not None and settings.has_watcher(data, stub)


def wake_findings(record: "Record", stub: str, wired: "Wired") -> "List[Tuple[bool, str, str, Optional[str]]]":
    """[(ok, settings path, detail, fix)] for doctor: the watcher entry in every file of a scope
    that install --urgent armed, and any file where the tier is armed."""
    out: "List[Tuple[bool, str, str, Optional[str]]]" = []
    for path, repo, _cwd in wired:
        scope = record.scope("user" if repo else "local") or {}
        armed = watcher_armed(path, stub)
        if armed:
            out.append((True, path, "the wake-up tier is armed: idle sessions are woken by new mail", None))
        elif armed is False and scope.get("urgent"):
            out.append((False, path, "install --urgent armed the wake-up tier, but this file has no watcher "
                        "entry: idle sessions here get mail at their next prompt", "git korus-mail install --urgent"))
    return out
