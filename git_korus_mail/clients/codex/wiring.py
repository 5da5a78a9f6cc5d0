"""Codex CLI's install wiring, in the terms install, uninstall and doctor ask every client for
(clients.installers), plus the trust step Codex needs (trust.py).

Per scope (docs/CLIENTS.md, "Codex CLI: what install writes"):
- local: `.codex/hooks.json` in every worktree, each worktree's path a trusted project (Codex
  0.171.0 loads a linked worktree's hooks from the main worktree's file, and only when the
  linked worktree is trusted and has a .codex/ of its own: the same file in each covers both);
- user: `$CODEX_HOME/hooks.json`, each entry with the repo anchor (`--repo`).
Either way the user's `$CODEX_HOME/config.toml` gets the trust of exactly our hooks (and, for
local, of the project), written by Codex's app-server and recorded so uninstall undoes it.
"""

import os

from git_korus_mail.clients.codex import hooksfile, stub, trust
from git_korus_mail.clients.codex import protocol as codex_protocol
from git_korus_mail.errors import MailError
from git_korus_mail.wiring import hookdoc, selftest
from git_korus_mail.wiring.postcheckout import repo_anchor

NAME = "codex"
NEEDS_POST_CHECKOUT = True  # a new worktree needs its .codex/ and its project trust
EXCLUDE_KEY = "exclude_codex"
EXCLUDE_LINE = hooksfile.EXCLUDE_LINE
EXCLUDE_COVERING = hooksfile.EXCLUDE_COVERING
VERIFIED_AS = "the stub answers SessionStart and Codex reports every hook trusted"
stub_path = stub.stub_path
write_stub = stub.write_stub
render_stub = stub.render_stub
read_settings = hooksfile.read
wire_file = hooksfile.wire_file
unwire_file = hooksfile.unwire_file


def settings_targets(clone, scope, only_own=False):
    """([(hooks.json path, repo anchor or None, cwd)], skipped worktrees) for `scope`."""
    if scope == "local":
        targets, skipped = hookdoc.worktree_targets(clone, hooksfile.PROJECT_FILE, only_own)
        return [(path, None, wt.path) for path, wt in targets], skipped
    anchor = repo_anchor(clone)
    return [(hooksfile.user_hooks_path(), anchor, anchor)], []


def _sources(clone, scope, wired):
    """Every hooks.json of ours Codex may list for this scope (all worktrees' files for local)."""
    paths = {p for p, _r, _c in wired}
    if scope == "local":
        paths |= {p for p, _r, _c in settings_targets(clone, "local")[0]}
    return paths


def commands(stub_file, repo):
    return [h["command"] for g in hooksfile.wanted_groups(stub_file, repo).values() for h in g["hooks"]]


def after_wiring(clone, scope, wired, scope_rec, out):
    """Trust what was wired (trust.py); [(cwd, problem)] for what Codex does not trust."""
    if not wired:
        return []
    root = clone.mail_root(create=False)
    repo = wired[0][1]
    targets = [(cwd, scope == "local") for _p, _r, cwd in wired]
    return trust.trust(trust.find_codex(), targets, _sources(clone, scope, wired),
                       commands(stub_path(root), repo), scope_rec.setdefault(NAME, {}), out)


def after_unwiring(scope_rec, out):
    trust.untrust(scope_rec.get(NAME) or {}, out)


def unwire_candidates(clone, scope, recorded):
    found = [p for p, _r, _c in settings_targets(clone, scope)[0]]
    return list(recorded) + [p for p in found if p not in recorded]


def calls_stub(path, stub_file):
    return hookdoc.calls_stub(path, stub_file, hooksfile.STUB_TAIL)


def wired_files(clone, record, stub_file):
    """([(path, repo, cwd)] wired for this clone, skipped, local wired?): as record or disk say."""
    wired = []
    targets, skipped = settings_targets(clone, "local")
    local = recorded(record, "local") or any(calls_stub(p, stub_file) for p, _r, _c in targets)
    if local:
        wired += targets
    user = settings_targets(clone, "user")[0]
    if recorded(record, "user") or any(calls_stub(p, stub_file) for p, _r, _c in user):
        wired += user
    return wired, skipped, local


def recorded(record, scope):
    """Does installed.json say install wired Codex in `scope`?"""
    return NAME in ((record.scope(scope) or {}).get("clients") or ())


def run_stub_once(stub_file, repo, cwd):
    """Run our SessionStart command as Codex would, with install's self-test payload
    (wiring/selftest.py); Codex's names no transcript."""
    return selftest.run_opening(hooksfile.hook_command(stub_file, "SessionStart", repo), cwd,
                                "SessionStart", None,
                                selftest.GIT_VARS, codex_protocol.check_answer,
                                silent="the stub printed nothing at SessionStart")


def check(root, stub_file, wired, run_stub=True):
    """[(label, [problems])]: each hooks.json read back and checked, the stub run once, and
    Codex asked (hooks/list) whether it loads and trusts every hook of ours."""
    results = []
    server = None
    try:
        for path, repo, cwd in wired:
            try:
                _raw, data = hooksfile.read(path)
            except MailError as exc:
                results.append((path, [str(exc)]))
                continue
            if data is None:
                results.append((path, ["missing"]))
                continue
            problems = hooksfile.check(data, stub_file, repo)
            if run_stub and not problems:
                problem = run_stub_once(stub_file, repo, cwd)
                if problem:
                    problems.append(problem)
            if server is None:
                try:
                    server = trust.AppServer(trust.find_codex())
                except MailError as exc:
                    problems.append(f"cannot ask Codex whether it trusts these hooks: {exc}")
            if server is not None:
                try:
                    problems += trust.verify_trust(server, cwd, lambda source: calls_stub(source, stub_file),
                                                   commands(stub_file, repo))
                except MailError as exc:
                    problems.append(str(exc))
            results.append((path, problems))
    finally:
        if server is not None:
            server.close()
    stub_problems = []
    if wired and not (os.path.isfile(stub_file) and os.access(stub_file, os.X_OK)):
        stub_problems.append("missing or not executable: run `git korus-mail install --client codex`")
    if wired:
        results.insert(0, (stub_file, stub_problems))
    return results
