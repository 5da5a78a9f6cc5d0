"""Gemini CLI's install wiring, in the terms install, uninstall and doctor ask every client for
(clients.installers): its stub, its settings files per scope, its exclude line, and the proof
that the wiring works (docs/CLIENTS.md, "Gemini CLI: what install writes").

- local (the default): `.gemini/settings.json` in every worktree, listed in info/exclude. A
  worktree whose `.gemini/settings.json` the repository tracks is left alone and named: that
  file is the repository's, and `--scope user` wires Gemini without touching it;
- user: `~/.gemini/settings.json`, each entry with the repo anchor (`--repo`), since Gemini loads
  user hooks in every folder.

Install trusts nothing: Gemini runs no hook at all (user or project) in a folder the person has
not trusted, and headless runs refuse such a folder; that trust (trustedFolders.json, the "Trust
this folder?" dialog, --skip-trust, GEMINI_CLI_TRUST_WORKSPACE) is the person's, and it also turns
on the repository's own `.gemini/` settings. Install says so, and names each worktree Gemini's
own trust file does not list.
"""

import json
import os
import subprocess

from git_korus_mail.clients import hookfile
from git_korus_mail.clients.gemini import protocol as gemini_protocol
from git_korus_mail.clients.gemini import gates as gemini_gates
from git_korus_mail.clients.gemini import settingsfile, stub
from git_korus_mail.wiring import hookdoc, selftest
from git_korus_mail.wiring.postcheckout import POST_CHECKOUT_ENV, repo_anchor

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import IO, Iterable, List, Optional, Tuple

    from git_korus_mail.clients.interface import Checked, ScopeRec, Wired
    from git_korus_mail.core.clone import Clone
    from git_korus_mail.core.gitrepo import Worktree
    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.wiring.record import Record

NAME = "gemini"
NEEDS_POST_CHECKOUT = True  # each worktree has its own settings file: `git worktree add` must wire it
EXCLUDE_KEY = "exclude_gemini"
EXCLUDE_LINE = settingsfile.EXCLUDE_LINE
EXCLUDE_COVERING = settingsfile.EXCLUDE_COVERING
# what doctor proved, and the one thing only Gemini's terminal UI can show (clients/gemini/gates.py)
VERIFIED_AS = (f"the stub answers {gemini_protocol.OPENING_EVENT}, and Gemini's trust file and hooksConfig "
               f"(system, user, folder) let it run; to see what Gemini loaded: /hooks in its terminal UI")
stub_path = stub.stub_path
write_stub = stub.write_stub
render_stub = stub.render_stub
read_settings = hookfile.read
wire_file = settingsfile.FILE.wire_file
unwire_file = settingsfile.FILE.unwire_file


def _tracked(wt_path: str) -> bool:
    """Does the repository track `.gemini/settings.json` in this worktree? (Then it is the
    repository's file, and install never edits it.)"""
    try:
        proc = subprocess.run(["git", "-C", wt_path, "ls-files", "--error-unmatch", "--", settingsfile.EXCLUDE_LINE],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _local(clone: "Clone", only_own: bool = False) -> "Tuple[Wired, List[Worktree], List[str]]":
    """([(path, None, cwd)] wired, skipped worktrees, [worktree paths whose file is tracked])."""
    targets, skipped = hookdoc.worktree_targets(clone, settingsfile.PROJECT_FILE, only_own)
    wired: "Wired" = []
    tracked: "List[str]" = []
    for path, wt in targets:
        if _tracked(wt.path):
            tracked.append(wt.path)
        else:
            wired.append((path, None, wt.path))
    return wired, skipped, tracked


def settings_targets(clone: "Clone", scope: str, only_own: bool = False) -> "Tuple[Wired, List[Worktree]]":
    """([(settings path, repo anchor or None, cwd)] install wires for `scope`, prunable worktrees skipped)."""
    if scope == "local":
        wired, skipped, _tracked_paths = _local(clone, only_own)
        return wired, skipped
    anchor = repo_anchor(clone)
    return [(settingsfile.user_settings_path(), anchor, anchor)], []


def unwire_candidates(clone: "Clone", scope: str, recorded: "Iterable[str]") -> "List[str]":
    if scope == "local":
        found = [p for p, _r, _c in _local(clone)[0]]
    else:
        found = [settingsfile.user_settings_path()]
    return list(recorded) + [p for p in found if p not in recorded]


# -- Gemini's own trust, read, never written ------------------------------------------
def trusted_folders_path() -> str:
    return os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or \
        os.path.join(os.path.expanduser("~"), ".gemini", "trustedFolders.json")


def folder_trusted(path: str) -> "Optional[bool]":
    """True / False when Gemini's trust file says (TRUST_FOLDER on the folder or an ancestor,
    TRUST_PARENT on a child of it, DO_NOT_TRUST), None when it says nothing."""
    try:
        with open(trusted_folders_path(), encoding="utf-8") as f:
            rules = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(rules, dict):
        return None
    real = os.path.realpath(path)
    best: "Optional[Tuple[str, bool]]" = None
    for where, level in rules.items():
        if not isinstance(where, str) or not isinstance(level, str):
            continue
        where = os.path.realpath(where)
        base = os.path.dirname(where) if level == "TRUST_PARENT" else where
        if real == base or real.startswith(base.rstrip("/") + "/"):
            if best is None or len(base) > len(best[0]):
                best = (base, level != "DO_NOT_TRUST")
    return None if best is None else best[1]


# the setting that lets the model run `git korus-mail ...` (and nothing else) without a confirmation
ALLOW_LINE = '"tools": {"allowed": ["run_shell_command(git korus-mail)"]}'


def after_wiring(clone: "Clone", scope: str, wired: "Wired", scope_rec: "ScopeRec",
                 out: "IO[str]") -> "List[Tuple[str, str]]":
    """Trusts nothing; says what Gemini's trust decides, and names what was left alone."""
    if os.environ.get(POST_CHECKOUT_ENV):
        return []
    if scope == "local":
        for path in _local(clone)[2]:
            out.write(f"gemini settings  {os.path.join(path, settingsfile.PROJECT_FILE)}  is tracked by the "
                      f"repository: not edited (`git korus-mail install --client gemini --scope user` wires Gemini "
                      f"for this worktree without it)\n")
    untrusted = [cwd for _p, _r, cwd in wired if folder_trusted(cwd) is not True]
    if untrusted:
        out.write("gemini trust  Gemini runs no hook in a folder you have not trusted (and trusting one also "
                  "turns on its own .gemini/ settings); install trusted nothing. Not trusted in "
                  f"{trusted_folders_path()}: {', '.join(untrusted)}\n")
    others = sorted({path for _p, _r, cwd in wired for path in gemini_gates.other_after_agent(cwd)})
    if others:
        out.write(f"gemini AfterAgent  another AfterAgent hook runs beside ours ({', '.join(others)}): if it "
                  f"continues a run, a question's automatic answer is the text before that continuation "
                  f"(a reply from the model is exact)\n")
    out.write(f"gemini shell  in Gemini's default approval mode a headless run (-p) offers the model no shell tool, "
              f"and the terminal UI asks you at each command: to let the model send, ask and reply, add "
              f"{ALLOW_LINE} to {settingsfile.user_settings_path()} (install does not)\n")
    return []


def after_unwiring(scope_rec: "ScopeRec", out: "IO[str]") -> None:
    return None


def run_stub_once(stub_file: str, repo: "Optional[str]", cwd: str) -> "Optional[str]":
    """Run our SessionStart command as Gemini would (wiring/selftest.py), without the variables
    that name a Gemini session."""
    return selftest.run_opening(hookfile.hook_command(stub_file, "SessionStart", repo), cwd, "SessionStart", None,
                                ("GEMINI_SESSION_ID", "GEMINI_CLI") + selftest.GIT_VARS,
                                gemini_protocol.check_answer, stderr_tail=True,
                                silent="the stub printed nothing at SessionStart")


def calls_stub(path: str, stub_file: str) -> bool:
    return hookdoc.calls_stub(path, stub_file, settingsfile.STUB_TAIL)


def recorded(record: "Record", scope: str) -> bool:
    return NAME in ((record.scope(scope) or {}).get("clients") or ())


def wired_files(clone: "Clone", record: "Record", stub_file: str) -> "Tuple[Wired, List[Worktree], bool]":
    """([(path, repo, cwd)] wired for this clone, skipped, local wired?): as record or disk say."""
    targets, skipped, _tracked_paths = _local(clone)
    wired: "Wired" = []
    local = recorded(record, "local") or any(calls_stub(p, stub_file) for p, _r, _c in targets)
    if local:
        wired += targets
    else:
        skipped = []
    user = settingsfile.user_settings_path()
    if recorded(record, "user") or calls_stub(user, stub_file):
        anchor = repo_anchor(clone)
        wired.append((user, anchor, anchor))
    return wired, skipped, local


DOCTOR_GATES = True  # doctor asks for gates=True (install says trust is the person's, and checks no gate)


def fix_of(problems: "List[str]") -> "Optional[str]":
    """doctor's fix when a problem is one of Gemini's own gates: running install again changes
    none of them (it trusts nothing and edits no hooksConfig)."""
    if any(gemini_gates.is_gate(p) for p in problems):
        return "in Gemini, as the problem says (install trusts nothing, edits no hooksConfig); then `git korus-mail doctor`"
    return None


def check(root: "MailRoot", stub_file: str, wired: "Wired", run_stub: bool = True, gates: bool = False) -> "Checked":
    """[(label, [problems])]: each settings.json read back and checked, the stub run once
    (clients/hookfile.HookFile.check_wired), and what Gemini's own files say of running our hooks
    in that folder when `gates` (doctor's: gates.py, trust, hooksConfig.enabled and .disabled)."""
    def ask(path: str, repo: "Optional[str]", cwd: str) -> "List[str]":
        commands = [hookfile.hook_command(stub_file, event, repo) for event in gemini_protocol.EVENTS]
        return gemini_gates.problems(cwd, commands, folder_trusted, trusted_folders_path(), checked=path)
    return settingsfile.FILE.check_wired(NAME, stub_file, wired, run_stub_once if run_stub else None,
                                         ask=ask if gates else None)
