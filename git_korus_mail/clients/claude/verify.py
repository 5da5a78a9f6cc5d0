"""Proof that the wiring works (prove, do not infer): every settings file read back, every
entry checked, and the stub run once as Claude Code would run it."""

import os

from git_korus_mail.clients.claude import protocol as claude_protocol
from git_korus_mail.clients.claude import settings as claude
from git_korus_mail.clients.claude.settings_file import local_targets, user_settings_path
from git_korus_mail.clients.hookfile import read_back
from git_korus_mail.wiring import hookdoc, selftest
from git_korus_mail.wiring.postcheckout import repo_anchor

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from git_korus_mail.clients.interface import Checked, Wired
    from git_korus_mail.core.clone import Clone
    from git_korus_mail.core.gitrepo import Worktree
    from git_korus_mail.wiring.record import Record



def verify(root: object, stub: str, wired: "Wired", run_stub: bool = True,
           urgent: "Optional[bool]" = None) -> "Checked":
    """[(label, [problems])]: every file read back, every entry checked, every caller's stub
    present and executable, and the stub run once per file with a synthetic SessionStart.
    `urgent`: whether the wake-up tier's watcher must be there (None: either form)."""
    results: "Checked" = []
    called = False
    for path, repo, cwd in wired:
        data, unread = read_back(path)  # the same read-back as every client's (clients/hookfile.py)
        if data is None:
            results.append((path, unread))
            continue
        problems = claude.check_settings(data, stub, repo, urgent=urgent)
        for event, path_called in claude.callers(data):
            if path_called == stub:
                called = True
            if not (os.path.isfile(path_called) and os.access(path_called, os.X_OK)):
                problems.append(f"{event} calls {path_called}, which is not an executable stub "
                                f"(a removed clone? `git korus-mail uninstall` there, or delete the entry)")
        if run_stub and not problems:
            problem = run_stub_once(stub, repo, cwd)
            if problem:
                problems.append(problem)
        results.append((path, problems))
    stub_problems: "List[str]" = []
    if not (os.path.isfile(stub) and os.access(stub, os.X_OK)):
        stub_problems.append("missing or not executable: run `git korus-mail install`")
    if wired and not called:
        stub_problems.append("no settings file calls it")
    results.insert(0, (stub, stub_problems))
    return results


def run_stub_once(stub: str, repo: "Optional[str]", cwd: str) -> "Optional[str]":
    """Run our SessionStart command as Claude Code would (wiring/selftest.py): without the
    variables that name a Claude Code session, and naming the stub's last stderr line when it
    fails; None when the answer is hook JSON that carries no fault."""
    return selftest.run_opening(claude.hook_command(stub, "SessionStart", repo), cwd, "SessionStart", "",
                                ("CLAUDE_PID", "CLAUDE_CODE_SESSION_ID") + selftest.GIT_VARS,
                                claude_protocol.check_answer, stderr_tail=True,
                                silent="the stub printed nothing at SessionStart (the drain always announces itself there)")


def calls_stub(path: str, stub: str) -> bool:
    """True when the settings file at `path` has an entry calling `stub` (or cannot be read:
    a broken file is for verify to report)."""
    return hookdoc.calls_stub(path, stub, claude.STUB_TAIL)


def wired_files(clone: "Clone", record: "Record", stub: str) -> "Tuple[Wired, List[Worktree], bool]":
    """What install wired for this clone, as its record says or as found calling `stub`:
    ([(settings path, repo anchor or None, cwd)] as verify takes them, prunable worktrees
    skipped, whether the local scope is wired)."""
    targets, skipped = local_targets(clone)
    wired: "Wired" = []
    local = _recorded(record, "local") or any(calls_stub(p, stub) for p, _wt in targets)
    if local:
        wired += [(p, None, wt.path) for p, wt in targets]
    user_path = user_settings_path()
    if _recorded(record, "user") or calls_stub(user_path, stub):
        anchor = repo_anchor(clone)
        wired.append((user_path, anchor, anchor))
    return wired, skipped, local


def _recorded(record: "Record", scope: str) -> bool:
    """Does installed.json say install wired Claude Code in `scope`? (A record from before
    `install --client` names no clients: it wired Claude Code only.)"""
    rec = record.scope(scope)
    return rec is not None and "claude" in (rec.get("clients") or ["claude"])
