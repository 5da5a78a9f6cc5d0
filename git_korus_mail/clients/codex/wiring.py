"""Codex CLI's install wiring, in the terms install, uninstall and doctor ask every client for
(clients.installers), plus the trust step Codex needs (trust.py).

Installing korus-mail never changes what a repository's own files may do (issue 21). In Codex,
trusting a project (`[projects."<path>"] trust_level = "trusted"`) loads its `.codex/hooks.json`
but also applies its committed `.codex/config.toml`: a sandbox_mode, the commands of its
mcp_servers. So, per scope (docs/CLIENTS.md, "Codex CLI: what install writes"):
- local, the default: our entries in the user's `$CODEX_HOME/hooks.json` with the repo anchor
  (`--repo`): Codex loads user hooks in every project, trusted or not, and the anchor keeps
  them to this clone's worktrees. No project is trusted;
- local with `--trust-codex-config` (the person's explicit choice, recorded): `.codex/hooks.json`
  in every worktree and each worktree's path a trusted project (Codex 0.171.0 loads a linked
  worktree's hooks from the main worktree's file, and only when the linked worktree is trusted
  and has a .codex/ of its own); a new worktree's post-checkout trusts it with a line that says so;
- user: `$CODEX_HOME/hooks.json`, each entry with the repo anchor.
Every scope trusts exactly our hooks (their hashes) in `$CODEX_HOME/config.toml`, and adds the
mail root to `sandbox_workspace_write.writable_roots` (the model's send, ask and reply write
there), both written by Codex's app-server and recorded so uninstall undoes them.
"""

import os

from git_korus_mail.clients import hookfile
from git_korus_mail.clients.codex import hooksfile, stub, trust
from git_korus_mail.clients.codex import protocol as codex_protocol
from git_korus_mail.errors import MailError
from git_korus_mail.wiring import hookdoc, selftest
from git_korus_mail.wiring.postcheckout import POST_CHECKOUT_ENV, repo_anchor

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import IO, Callable, Iterable, List, Optional, Set, Tuple

    from git_korus_mail.clients.interface import Checked, ScopeRec, Wired
    from git_korus_mail.clients.codex.trust import AppServer
    from git_korus_mail.core.clone import Clone
    from git_korus_mail.core.gitrepo import Worktree
    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.wiring.record import Record

NAME = "codex"
NEEDS_POST_CHECKOUT = False  # user hooks cover every worktree; with --trust-codex-config, see needs_post_checkout
TRUSTS_PROJECTS = True  # install passes trust_projects (--trust-codex-config) to settings_targets and after_wiring
TRUST_KEY = "codex_trust_projects"  # where installed.json records that choice (the local scope's record)
EXCLUDE_KEY = "exclude_codex"
EXCLUDE_LINE = hooksfile.EXCLUDE_LINE
EXCLUDE_COVERING = hooksfile.EXCLUDE_COVERING
VERIFIED_AS = "the stub answers SessionStart and Codex reports every hook trusted"
stub_path = stub.stub_path
write_stub = stub.write_stub
render_stub = stub.render_stub
read_settings = hookfile.read
wire_file = hooksfile.FILE.wire_file
unwire_file = hooksfile.FILE.unwire_file


def trusts_projects(scope_rec: "Optional[ScopeRec]") -> bool:
    """Did the person choose --trust-codex-config for this scope (recorded at install)?"""
    return bool((scope_rec or {}).get(TRUST_KEY))


def needs_post_checkout(scope_rec: "Optional[ScopeRec]") -> bool:
    """A new worktree needs wiring only when each worktree has its own .codex/hooks.json."""
    return trusts_projects(scope_rec)


needs_exclude = needs_post_checkout  # .codex/hooks.json is written into worktrees only then


# doctor's fix when preflight fails on a wired clone: what is missing is codex itself, and
# `install` would fail the same way (it checks the same thing first)
PREFLIGHT_FIX = "put codex on PATH, or set KORUS_MAIL_CODEX=<path to codex>, so its app-server can be asked"


def preflight() -> None:
    """What install needs before it writes anything: Codex's own CLI, whose app-server records the
    trust of our hooks (trust.py). Without it, a stub, hooks files and an exclude line would be
    written that Codex never runs, and every later `git worktree add` would repeat the failure."""
    trust.find_codex()


def settings_targets(clone: "Clone", scope: str, only_own: bool = False,
                     trust_projects: bool = False) -> "Tuple[Wired, List[Worktree]]":
    """([(hooks.json path, repo anchor or None, cwd)], skipped worktrees) for `scope`."""
    if scope == "local" and trust_projects:
        targets, skipped = hookdoc.worktree_targets(clone, hooksfile.PROJECT_FILE, only_own)
        return [(path, None, wt.path) for path, wt in targets], skipped
    if only_own:
        return [], []  # a new worktree: the user's hooks.json and its anchor cover it already
    anchor = repo_anchor(clone)
    return [(hooksfile.user_hooks_path(), anchor, anchor)], []


def wired_by_other_scope(record: "Record", scope: str, trust_projects: bool) -> "Optional[str]":
    """A line when the other scope's install already wires Codex in the same user hooks.json
    (our entries there are the same for both scopes): this scope then wires nothing, so one
    uninstall never takes out what the other still counts on, and no hook fires twice."""
    other = "user" if scope == "local" else "local"
    other_rec = record.scope(other) or {}
    if NAME not in (other_rec.get("clients") or ()):
        return None
    uses_user_file: "Callable[[str, bool], bool]" = (lambda s, projects: s == "user" or not projects)
    if not (uses_user_file(scope, trust_projects) and uses_user_file(other, trusts_projects(other_rec))):
        return None
    return (f"{hooksfile.user_hooks_path()}  already wired by the {other} scope's install (the same entries): "
            f"not wired twice; `git korus-mail uninstall --scope {other}` takes them out")


def own_config_worktrees(clone: "Clone") -> "List[Tuple[str, List[str]]]":
    """[(worktree path, [its .codex/ entries that are not ours])]: worktrees whose committed
    (or local) Codex config a project trust would turn on."""
    out: "List[Tuple[str, List[str]]]" = []
    for wt in clone.worktrees:
        d = os.path.join(wt.path, ".codex")
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        theirs = [n for n in names if n != "hooks.json" or not _only_ours(os.path.join(d, n))]
        if theirs:
            out.append((wt.path, theirs))
    return out


def _only_ours(path: str) -> bool:
    try:
        _raw, data = hookfile.read(path)
    except MailError:
        return False
    if data is None:
        return True
    return all(hooksfile.FILE.stub_of(h) for gs in (data.get("hooks") or {}).values()
               for g in gs for h in g.get("hooks") or ())


def tell_own_configs(clone: "Clone", trusted: bool, out: "IO[str]") -> None:
    """Name each worktree that holds Codex config of its own, and what install did about it."""
    for path, names in own_config_worktrees(clone):
        what = ", ".join(f".codex/{n}" for n in names)
        if trusted:
            out.write(f"codex trust  {path}  holds its own {what}: trusted by your --trust-codex-config, "
                      f"so Codex applies it\n")
        else:
            out.write(f"codex trust  {path}  holds its own {what}: not trusted by install, so Codex leaves it "
                      f"off until you trust that project yourself\n")


def _sources(clone: "Clone", projects: bool, wired: "Wired") -> "Set[str]":
    """Every hooks.json of ours Codex may list (all worktrees' files when each has its own)."""
    paths = {p for p, _r, _c in wired}
    if projects:
        paths |= {p for p, _r, _c in settings_targets(clone, "local", trust_projects=True)[0]}
    return paths


def commands(stub_file: str, repo: "Optional[str]") -> "List[str]":
    return [h["command"] for g in hooksfile.FILE.wanted_groups(stub_file, repo).values() for h in g["hooks"]]


def after_wiring(clone: "Clone", scope: str, wired: "Wired", scope_rec: "ScopeRec", out: "IO[str]",
                 trust_projects: bool = False) -> "List[Tuple[str, str]]":
    """Trust what was wired (trust.py); [(cwd, problem)] for what Codex does not trust. Projects
    are trusted only with --trust-codex-config, and every such trust is said, with what it turns on."""
    if not wired:
        return []
    root = clone.mail_root(create=False)
    assert root is not None  # install made the mail root before it wired anything
    repo = wired[0][1]
    projects = scope == "local" and trust_projects
    targets = [(cwd, projects) for _p, _r, cwd in wired]
    if scope == "local" and not projects:
        retire_project_files(scope_rec, stub_path(root), out)
    problems = trust.trust(trust.find_codex(), targets, _sources(clone, projects, wired),
                           commands(stub_path(root), repo), scope_rec.setdefault(NAME, {}), out,
                           writable_root=os.path.realpath(root.path), untrust_projects=scope == "local" and not projects)
    if not os.environ.get(POST_CHECKOUT_ENV):
        tell_own_configs(clone, projects, out)
        if not projects:
            out.write("codex sandbox  in a project you have not trusted in Codex, its default sandbox is read-only: "
                      "the model is shown mail but cannot send, ask or reply (they say so, and how: "
                      "`codex --sandbox workspace-write`, or trust the project in Codex)\n")
    return problems


def retire_project_files(scope_rec: "ScopeRec", stub_file: str, out: "IO[str]") -> None:
    """An earlier install wired each worktree's .codex/hooks.json and trusted it without asking:
    take our entries out of those files (restoring their bytes where we can). Left in, they
    would fire beside the user hooks.json the day the person trusts the project."""
    files = scope_rec.get("files") or {}
    # the user's own hooks.json is ~/.codex/hooks.json, which ends like a project's file too:
    # it is the wiring just written, never a project file to retire
    user = os.path.realpath(hooksfile.user_hooks_path())
    for path in [p for p in files if p.endswith(os.sep + hooksfile.PROJECT_FILE) and os.path.realpath(p) != user]:
        try:
            state = hooksfile.FILE.unwire_file(path, stub_file, files.get(path))
        except MailError as exc:
            out.write(f"settings  {path}  not changed: {exc}\n")
            continue
        files.pop(path, None)
        out.write(f"settings  {path}  {state or 'current'} (an earlier install's project wiring; "
                  f"Codex is wired in the user's hooks.json now)\n")


def after_unwiring(scope_rec: "ScopeRec", out: "IO[str]") -> None:
    trust.untrust(scope_rec.get(NAME) or {}, out)


def unwire_candidates(clone: "Clone", scope: str, recorded: "Iterable[str]") -> "List[str]":
    found = [p for p, _r, _c in settings_targets(clone, scope, trust_projects=scope == "local")[0]]
    out = list(recorded) + [p for p in found if p not in recorded]
    user_file = hooksfile.user_hooks_path()
    root = clone.mail_root(create=False)
    if user_file in out and user_file not in recorded and root is not None:
        # the user hooks.json our other scope wires (wired_by_other_scope) is not this scope's to empty
        from git_korus_mail.wiring import record as install_record
        if wired_by_other_scope(install_record.Record.load(install_record.ensure_hooks_dir(root)), scope, False):
            out.remove(user_file)
    return out


def calls_stub(path: str, stub_file: str) -> bool:
    return hookdoc.calls_stub(path, stub_file, hooksfile.STUB_TAIL)


def wired_files(clone: "Clone", record: "Record", stub_file: str) -> "Tuple[Wired, List[Worktree], bool]":
    """([(path, repo, cwd)] wired for this clone, skipped, local wired?): as record or disk say."""
    wired: "Wired" = []
    rec = record.scope("local") or {}
    targets, skipped = settings_targets(clone, "local", trust_projects=True)
    projects = trusts_projects(rec) or any(calls_stub(p, stub_file) for p, _r, _c in targets)
    if projects:
        wired += targets
    else:
        skipped = []
    user = settings_targets(clone, "user")[0]
    if recorded(record, "user") or any(calls_stub(p, stub_file) for p, _r, _c in user) or recorded(record, "local"):
        wired += user if not projects or recorded(record, "user") else []
    # "local" tells doctor to want a post-checkout hook: only worktree files need one
    return wired, skipped, projects


def recorded(record: "Record", scope: str) -> bool:
    """Does installed.json say install wired Codex in `scope`?"""
    return NAME in ((record.scope(scope) or {}).get("clients") or ())


def run_stub_once(stub_file: str, repo: "Optional[str]", cwd: str) -> "Optional[str]":
    """Run our SessionStart command as Codex would, with install's self-test payload
    (wiring/selftest.py); Codex's names no transcript."""
    return selftest.run_opening(hookfile.hook_command(stub_file, "SessionStart", repo), cwd,
                                "SessionStart", None,
                                selftest.GIT_VARS, codex_protocol.check_answer,
                                silent="the stub printed nothing at SessionStart")


def _sandbox_problems(server: "AppServer", root: "MailRoot") -> "List[str]":
    """[problem] when the model's send, ask and reply cannot write the mail root in Codex's
    workspace-write sandbox: the mail root is not among the user config's writable roots."""
    mail = os.path.realpath(root.path)
    try:
        roots = trust.user_writable_roots(server) or []
    except MailError as exc:
        return [f"cannot read Codex's writable roots: {exc}"]
    if mail in roots:
        return []
    return [f"{mail} is not in {trust.WRITABLE_ROOTS}: in Codex's sandbox the model cannot send, ask or reply; "
            f"run `git korus-mail install --client codex`"]


def check(root: "MailRoot", stub_file: str, wired: "Wired", run_stub: bool = True) -> "Checked":
    """[(label, [problems])]: each hooks.json read back and checked, the stub run once, and
    Codex asked (hooks/list) whether it loads and trusts every hook of ours."""
    server: "List[AppServer]" = []  # one app-server, started at the first file and shared
    def ask(path: str, repo: "Optional[str]", cwd: str) -> "List[str]":
        if not server:
            try:
                server.append(trust.AppServer(trust.find_codex()))
            except MailError as exc:
                return [f"cannot ask Codex whether it trusts these hooks: {exc}"]
        try:
            return trust.verify_trust(server[0], cwd, lambda source: calls_stub(source, stub_file),
                                      commands(stub_file, repo))
        except MailError as exc:
            return [str(exc)]
    try:
        results = hooksfile.FILE.check_wired(NAME, stub_file, wired, run_stub_once if run_stub else None, ask=ask)
        if server and wired:
            results.append((f"{trust.config_path()} ({trust.WRITABLE_ROOTS})", _sandbox_problems(server[0], root)))
    finally:
        if server:
            server[0].close()
    return results
