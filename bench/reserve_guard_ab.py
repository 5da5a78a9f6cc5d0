"""What a reservation check costs on the paths that run it at every edit and every commit (issue 29).

    .venv/bin/python bench/reserve_guard_ab.py --runs 100 -n 100

(bench/reserve_ab.py, h29res's, is the finer A/B of Claude Code's PreToolUse alone; this one puts
Codex's stub and the commit guard beside it.)

Rows, each run as its client runs it (`/bin/sh -c "'<stub>' <Event>"` with the payload on stdin;
git's pre-commit hook run by `git commit`'s own way, `sh <hook>` in the worktree with one file
staged), in rounds that run every command once, alternating (shared machines drift):
- **baseline**: `sh -c true`, and a no-op hook script;
- **pre-edit, none**: Claude Code's PreToolUse (Edit) and Codex's PreToolUse (apply_patch) in a
  clone with no reservation: the stub's one shell test (hooks/hook.sh), no Python;
- **pre-edit, N**: the same with N reservations of another worktree, none matching, then one
  matching (the tell is built): Python starts, and the match is bounded by the store's
  MAX_RECORDS;
- **pre-commit, none / N**: our pre-commit hook (wiring/precommit.py) with no reservation, and
  with N.
Wall and CPU time (user + system of the process and its children, from wait4), medians.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO  # noqa: E402
from stub_ab import run  # noqa: E402 - (wall ms, CPU ms, status, stdout) of one process tree

sys.path.insert(0, str(REPO))
from git_korus_mail.core import reservations  # noqa: E402
from git_korus_mail.store.files import MailRoot  # noqa: E402


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def world(tmp):
    main, web = tmp / "api", tmp / "web"
    main.mkdir()
    git("init", "-q", "-b", "main", cwd=main)
    git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "root", cwd=main)
    git("worktree", "add", "-q", "-b", "web", str(web), cwd=main)
    helper = os.path.join(os.path.dirname(sys.executable), "git-korus-mail")
    env = dict(os.environ, CODEX_HOME=str(tmp / "codex-home"), HOME=str(tmp / "home"))
    (tmp / "home").mkdir()
    # the Codex stub is written by a Claude install too (every client's stub is one template):
    # install claude only, then write the Codex stub the same way, so no Codex CLI is needed
    subprocess.run([helper, "install"], cwd=main, env=env, check=True, capture_output=True)
    common = main / ".git"
    from git_korus_mail.clients.codex import stub as codex_stub
    root = MailRoot.open(str(common))
    codex_stub.write_stub(root, helper, repo=str(main))
    (web / "src").mkdir()
    (web / "src" / "a.py").write_text("x\n")  # the file every row's edit or commit touches
    git("add", "src/a.py", cwd=web)
    return main, web, common, env


def reserve_many(common, worktree, n, matching):
    root = MailRoot.open(str(common))
    holder = reservations.Holder(None, None, None)
    for i in range(n):
        reservations.reserve(root, [f"elsewhere/{i}/"], holder, "box", str(worktree), "main", ttl_minutes=600)
    if matching:
        reservations.reserve(root, ["src/"], holder, "box", str(worktree), "main", ttl_minutes=600)


def drop_all(common):
    root = MailRoot.open(str(common))
    ids = [r.id for r in reservations.all_stored(root)]
    if ids:
        reservations.drop(root, ids, None, force=True)


def rows(main, web, common, env, runs, n):
    claude = str(common / "mail" / "hooks" / "claude-hook")
    codex = str(common / "mail" / "hooks" / "codex-hook")
    edit = json.dumps({"session_id": "bench-session", "cwd": str(web), "hook_event_name": "PreToolUse",
                       "tool_name": "Edit", "tool_input": {"file_path": str(web / "src" / "a.py")},
                       "transcript_path": "/nonexistent"}).encode()
    patch = json.dumps({"session_id": "bench-session", "cwd": str(web), "hook_event_name": "PreToolUse",
                        "tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\n*** Add File: src/a.py\n+x\n*** End Patch\n"},
                        "transcript_path": "/nonexistent"}).encode()
    noop = common.parent.parent / "noop.sh"
    noop.write_text("#!/bin/sh\nexit 0\n")
    noop.chmod(0o755)
    hook = str(common / "hooks" / "pre-commit")
    cmds = {
        "sh -c true": (["/bin/sh", "-c", "true"], b""),
        "no-op hook script": (["/bin/sh", "-c", f"'{noop}'"], b""),
        "claude PreToolUse Edit": (["/bin/sh", "-c", f"'{claude}' PreToolUse"], edit),
        "codex PreToolUse apply_patch": (["/bin/sh", "-c", f"'{codex}' PreToolUse"], patch),
        "pre-commit hook": (["/bin/sh", hook], b""),
    }
    out = {}
    for label, setup in (("no reservation", lambda: None),
                         (f"{n} others' reservations, none matching", lambda: reserve_many(common, main, n, False)),
                         (f"{n} + 1 matching (the tell is built)", lambda: reserve_many(common, main, 0, True))):
        setup()
        times = {k: [] for k in cmds}
        for _ in range(runs):
            for k, (argv, stdin) in cmds.items():
                wall, cpu, _status, _out = run(argv, str(web), env, stdin)
                times[k].append((wall, cpu))
        out[label] = times
    drop_all(common)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("-n", type=int, default=100, help="reservations of another worktree")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="reserve-ab-"))
    try:
        main_wt, web, common, env = world(tmp)
        result = rows(main_wt, web, common, env, args.runs, args.n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"reserve_ab: {args.runs} rounds each, medians in ms (wall / CPU)")
    print(f"| {'state':40} | {'command':30} | wall ms | CPU ms |")
    print(f"|{'-' * 42}|{'-' * 32}|---------|--------|")
    for state, times in result.items():
        for k, ts in times.items():
            print(f"| {state:40} | {k:30} | {statistics.median(t[0] for t in ts):7.2f} | "
                  f"{statistics.median(t[1] for t in ts):6.2f} |")


if __name__ == "__main__":
    main()
