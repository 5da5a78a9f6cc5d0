"""What a Claude Code PreToolUse costs with reservations (issue 29; docs/HOOKS.md, "Before an edit").

    .venv/bin/python bench/reserve_ab.py --runs 200

Each round runs every row once, alternating, as Claude Code runs a hook
(`/bin/sh -c "'<stub>' PreToolUse"`, an Edit's payload on stdin), and reads each process's wall
time and CPU time (user + system of it and its children, from wait4); the table gives the medians.
Rows:
- `sh -c true`: the floor, a hook that does nothing;
- `python -S -c pass`: what any hook that starts Python pays first (the drain starts with -S);
- `none`: this tree's stub in a clone with no reservation (the stub's one test, no Python);
- `100, no match`: 100 reservations of another session, none naming the edited file (Python
  starts, reads 100 records, matches, says nothing);
- `100, one match`: the same with one naming the file (the tell is printed).
The stub is rendered from this tree for its own console script, into a fresh clone's
`<mail>/hooks/`; the reservations are written with the store's own code.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stub_ab import run  # noqa: E402 - one process's wall and CPU time, as the stub bench reads them

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_clone(base):
    main, other = base / "api", base / "web"
    main.mkdir()
    git("init", "-q", "-b", "main", str(main), cwd=base)
    (main / "README").write_text("hello\n")
    git("add", "README", cwd=main)
    git("-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-q", "-m", "init", cwd=main)
    git("worktree", "add", "-q", str(other), "-b", "web", cwd=main)
    return main, other


def reserve(common, n, matching, worktree):
    from git_korus_mail.core import reservations
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(common, create=True)
    holder = reservations.Holder("s-other", None, "claude")
    for i in range(n):
        spec = "src/db" if matching and i == n - 1 else f"pkg{i}/**/*.py"
        reservations.reserve(root, [spec], holder, "k" * 16, worktree, "web", note=f"reservation {i}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args(argv)
    helper = str(Path(sys.executable).parent / "git-korus-mail")
    with tempfile.TemporaryDirectory(prefix="reserve-ab-") as tmp:
        base = Path(tmp)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "LC_ALL": "C.UTF-8",
               "GIT_CONFIG_NOSYSTEM": "1", "CLAUDE_PID": str(os.getpid()), "CLAUDE_CODE_SESSION_ID": "s-bench"}
        os.environ.update({"HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1"})
        rows = {}
        for name, n, matching in (("none", 0, False), ("100, no match", 100, False), ("100, one match", 100, True)):
            d = base / name.replace(" ", "").replace(",", "-")
            d.mkdir()
            main_wt, other = make_clone(d)
            common = str(main_wt / ".git")
            from git_korus_mail.clients.claude import stub as claude_stub
            from git_korus_mail.store.files import MailRoot
            root = MailRoot.open(common, create=True)
            path = claude_stub.STUB.path(root)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            Path(path).write_text(claude_stub.render_stub(helper))
            os.chmod(path, 0o700)
            reserve(common, n, matching, str(other))
            payload = json.dumps({"session_id": "s-bench", "transcript_path": "", "cwd": str(main_wt),
                                  "hook_event_name": "PreToolUse", "tool_name": "Edit",
                                  "tool_input": {"file_path": str(main_wt / "src" / "db" / "schema.sql"),
                                                 "old_string": "a", "new_string": "b"}}).encode()
            rows[name] = (["/bin/sh", "-c", f"'{path}' PreToolUse"], str(main_wt), payload)
        rows = {"sh -c true": (["/bin/sh", "-c", "true"], tmp, b"{}"),
                "python -S -c pass": ([sys.executable, "-S", "-c", "pass"], tmp, b""), **rows}
        said = {}
        for name, (cmd, cwd, payload) in rows.items():  # warm up, and check what each row answers
            _w, _c, status, out = run(cmd, cwd, env, payload)
            assert status == 0, (name, status)
            said[name] = "tell" if b"additionalContext" in out or b"\"deny\"" in out else ("nothing" if not out.strip() else out[:80])
        assert said["none"] == "nothing" and said["100, no match"] == "nothing" and said["100, one match"] == "tell", said
        wall = {name: [] for name in rows}
        cpu = {name: [] for name in rows}
        for _ in range(args.runs):
            for name, (cmd, cwd, payload) in rows.items():
                w, c, _status, _out = run(cmd, cwd, env, payload)
                wall[name].append(w)
                cpu[name].append(c)
        load = os.getloadavg()[0]
        print(f"PreToolUse (Edit) through this tree's stub, {args.runs} rounds, load {load:.1f}, "
              f"{time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime())}")
        print(f"{'row':<18} {'wall ms':>9} {'CPU ms':>9} {'wall / sh -c true':>18}  answers")
        floor = statistics.median(wall["sh -c true"])
        for name in rows:
            mw, mc = statistics.median(wall[name]), statistics.median(cpu[name])
            print(f"{name:<18} {mw:>9.2f} {mc:>9.2f} {mw / floor:>18.2f}  {said[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
