"""`install`: wire this clone's worktrees to the drain, for the clients `--client` names
(clients.installers: Claude Code's clients/claude/wiring.py, Codex CLI's clients/codex/wiring.py).

What install writes, each recorded in `<mail>/hooks/installed.json` (wiring/record.py) so
uninstall puts back exactly what was there:
- the stub `<mail>/hooks/claude-hook` (clients/claude/stub.py), which runs the absolute path
  of the git-korus-mail that installed it;
- our entries in each worktree's Claude Code settings (scope local), or in the user's with a
  repo anchor (scope user): clients/claude/settings_file.py;
- the local settings file in `<common>/info/exclude` (wiring/exclude.py);
- a git post-checkout hook that wires a worktree made by `git worktree add` (wiring/postcheckout.py);
- a git pre-commit hook, the commit guard of file reservations (wiring/precommit.py);
- for Codex: `.codex/hooks.json` in the main worktree (or the user's, with a repo anchor), and
  the trust of exactly those hooks (and of the project) in the user's Codex config, written by
  Codex's app-server (clients/codex/trust.py); docs/CLIENTS.md says what changes there.

Settings files are edited by read, merge, compare, replace: a current file is never
rewritten (bytes and mtime stay), an invalid one is never touched. Install ends by
verifying what it wrote, running the stub once (clients/claude/verify.py: prove, do not infer).
"""

import os
import sys
from dataclasses import dataclass

from git_korus_mail import clients
from git_korus_mail.commands.text import raw
from git_korus_mail.errors import MailError, UsageError
from git_korus_mail.wiring import exclude, postcheckout, precommit
from git_korus_mail.wiring import record as install_record
from git_korus_mail.wiring import stub as hookstub


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    import io
    from typing import IO, List, Optional, Tuple

    from git_korus_mail.clients.interface import Checked, Installer, Wired
    from git_korus_mail.core.clone import Clone


@dataclass(frozen=True)
class InstallArgs:
    scope: str = "local"   # one of SCOPES
    urgent: bool = False   # arm the wake-up tier (it stays armed for the scope until uninstall)
    force: bool = False    # rewrite our entries even when they look current
    client: str = "claude"  # one of CLIENT_CHOICES
    trust_codex_config: bool = False  # trust each worktree as a Codex project (turns on its .codex/ config)


CLIENT_CHOICES = clients.NAMES + ("all",)


def check_client(client: str) -> "Tuple[str, ...]":
    """The client names `--client` stands for."""
    if client not in CLIENT_CHOICES:
        raise UsageError(f"--client {client!r}: expected {', '.join(clients.NAMES)} or all")
    return clients.NAMES if client == "all" else (client,)


def check_scope(scope: str) -> str:
    if scope not in SCOPES:
        raise UsageError(f"--scope {scope!r}: expected local or user")
    return scope


def run(clone: "Clone", args: InstallArgs, out: "IO[str]") -> int:
    names = check_client(args.client)
    if args.trust_codex_config and ("codex" not in names or args.scope != "local"):
        raise UsageError("--trust-codex-config goes with --client codex (or all) and the local scope")
    return run_install(clone, out, scope=check_scope(args.scope), force=args.force,
                       names=names, urgent=args.urgent, trust_projects=args.trust_codex_config)


SCOPES = ("local", "user")


def run_install(clone: "Clone", out: "IO[str]", scope: str = "local", force: bool = False,
                names: "Tuple[str, ...]" = (clients.DEFAULT,), urgent: bool = False,
                trust_projects: bool = False) -> int:
    """Wire `scope` (one of SCOPES) for the clients `names` (commands/install.py checks the arguments).
    `urgent` arms the wake-up tier (the clients that have one: WAKE_TIER); a scope armed before
    stays armed (a new worktree's post-checkout install too). `trust_projects` is the person's
    --trust-codex-config (clients/codex/wiring.py): recorded, so it also holds for a new worktree."""
    only_own = os.environ.get(postcheckout.POST_CHECKOUT_ENV) == "1" and scope == "local"
    captured: "Optional[io.StringIO]" = None
    if only_own:
        # from our post-checkout hook, inside `git worktree add`: one line, not the full report
        import io
        report, out = out, io.StringIO()
        captured = out
    helper = hookstub.find_helper()
    if not only_own:
        # everything a client needs is checked before the first byte is written (issue 25): a
        # failed install leaves nothing behind that a later `git worktree add` would trip on
        for client in clients.installers(names):
            getattr(client, "preflight", lambda: None)()
    root = clone.mail_root(create=True)
    assert root is not None  # create=True: made, or MailError
    hooks_dir = install_record.ensure_hooks_dir(root)
    with install_record.locked(hooks_dir):
        record = install_record.Record.load(hooks_dir)
        if only_own and record.scope("local") is None:
            return 0  # uninstalled since: a stray post-checkout wires nothing
        scope_rec = record.scope(scope, create=True)
        assert scope_rec is not None  # create=True: made when absent
        if only_own:
            names = tuple(scope_rec.get("clients") or (clients.DEFAULT,))  # what the person installed
        known = scope_rec.get("clients")
        if known is None:  # a record from before --client: it wired Claude Code only
            known = [clients.DEFAULT] if scope_rec.get("files") else []
        scope_rec["clients"] = [n for n in clients.NAMES if n in known or n in names]
        wirings: "List[Tuple[Installer, str, Wired]]" = []  # (client's wiring, its stub, its settings files)
        not_wired: "List[Tuple[str, str]]" = []
        urgent = bool(urgent or scope_rec.get("urgent"))
        if urgent:
            scope_rec["urgent"] = True
        if trust_projects:
            scope_rec["codex_trust_projects"] = True
        trust_projects = bool(scope_rec.get("codex_trust_projects"))
        for client in clients.installers(names):
            trusting = {"trust_projects": trust_projects} if getattr(client, "TRUSTS_PROJECTS", False) else {}
            shared = getattr(client, "wired_by_other_scope", lambda *_a: None)(record, scope, trust_projects)
            if shared:
                # one wiring, owned by one scope: this one records nothing for the client
                out.write(f"{client.NAME}  {shared}\n")
                scope_rec["clients"] = [n for n in scope_rec["clients"] if n != client.NAME]
                continue
            stub, state = client.write_stub(root, helper, force, repo=postcheckout.repo_anchor(clone))
            out.write(f"stub  {stub}  {state}  (runs {helper})\n")
            record.data["helper"] = helper
            tier = {"urgent": urgent} if getattr(client, "WAKE_TIER", False) else {}
            wired, skipped = client.settings_targets(clone, scope, only_own, **trusting)
            for wt in skipped:
                out.write(f"skipped  {wt.path}  (prunable worktree: `git worktree prune` removes it)\n")
            wirings.append((client, stub, wired))
            try:
                for path, repo, cwd in wired:
                    try:
                        state = client.wire_file(path, stub, repo, force, scope_rec["files"], **tier)
                    except MailError as exc:
                        # one broken settings file must not leave the worktrees after it unwired
                        not_wired.append((cwd, str(exc)))
                        out.write(f"settings  {path}  NOT WIRED\n")
                        continue
                    out.write(f"settings  {path}  {state}\n")
                try:
                    not_wired += client.after_wiring(clone, scope, wired, scope_rec, out, **trusting)
                except MailError as exc:
                    not_wired.append((clone.common_dir, str(exc)))
            finally:
                record.save()  # what was written so far must be undoable, even after a failure
            if not only_own:
                _say_double(client, clone, record, stub, scope, out)
        if scope == "local" and not only_own:
            for client, _stub, wired in wirings:
                if not wired or not getattr(client, "needs_exclude", lambda rec: True)(scope_rec):
                    continue
                path, state = exclude.add_exclude(clone, scope_rec, client.EXCLUDE_LINE, client.EXCLUDE_COVERING,
                                                  key=client.EXCLUDE_KEY)
                out.write(f"exclude  {client.EXCLUDE_LINE} in {path}  {state}\n")
            if any(client.NEEDS_POST_CHECKOUT or getattr(client, "needs_post_checkout", lambda rec: False)(scope_rec)
                   for client, _s, _w in wirings):
                lines, problem = postcheckout.install_post_checkout(clone, helper, force, scope_rec)
                for line in lines:
                    out.write(line + "\n")
                if problem:
                    out.write(f"note: {problem}\n")
            if wirings:
                # the commit guard of file reservations, whichever client is wired (wiring/precommit.py)
                lines, problem = precommit.install_pre_commit(clone, helper, root.path, force, scope_rec)
                for line in lines:
                    out.write(line + "\n")
                if problem:
                    out.write(f"note: {problem}\n")
        if not scope_rec["clients"] and not scope_rec.get("files"):
            record.drop_scope(scope)  # every client named is wired by the other scope already
        record.save()
    # the stub was run at the full install; a new worktree only needs its file read back
    results = [result for client, stub, wired in wirings
               for result in client.check(root, stub, wired, run_stub=not only_own,
                                          **({"urgent": urgent} if getattr(client, "WAKE_TIER", False) else {}))]
    failed = any(problems for _label, problems in results)
    if only_own:
        for path, _repo, cwd in (w for _client, _stub, wired in wirings for w in wired):
            if all(cwd != c for c, _why in not_wired):
                report.write(f"git korus-mail: wired {path} to the mail drain\n")
        # a project trust is never silent, not even inside `git worktree add`
        for line in (captured.getvalue() if captured is not None else "").splitlines():
            if "trusted the project" in line:
                report.write(f"git korus-mail: {line}\n")
        if not failed and not not_wired:
            return 0
        out = report
    write_table(results, out)
    if urgent and any(getattr(client, "WAKE_TIER", False) for client, _s, _w in wirings):
        out.write("urgent  the wake-up tier is armed: an idle session is woken by mail sent to it "
                  "(send --no-wake sends without waking)\n")
    if not only_own:
        from git_korus_mail.wiring import shells
        for shell, why, line in shells.setup_lines():
            out.write(f"completion  {shell}: {why}; set it up once with:\n")
            raw(out, f"    {line}\n")
    for cwd, why in not_wired:
        sys.stderr.write(f"git korus-mail: not wired: {cwd}: {why}\n")
    return 1 if failed or not_wired else 0


def _say_double(client: "Installer", clone: "Clone", record: install_record.Record, stub: str, scope: str,
                out: "IO[str]") -> None:
    """Both scopes now wired for this client: kept, and said (wiring/double.py)."""
    from git_korus_mail.wiring import double
    user = double.user_file(client.wired_files(clone, record, stub)[0])
    if user is not None:
        out.write(f"note  {double.said(client.NAME, user, keep=scope)}\n")


def write_table(results: "Checked", out: "IO[str]") -> None:
    out.write("verify\n")
    for label, problems in results:
        if not problems:
            out.write(f"  ok       {label}\n")
        for p in problems:
            out.write(f"  problem  {label}: {p}\n")
