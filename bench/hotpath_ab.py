"""Paired A/B of the empty-box drain's CPU time between this tree and an older commit.

    .venv/bin/python bench/hotpath_ab.py --base 7987478 --runs 120

Why beside run.py's row 1: wall time on these shared machines moves by 10-20 % between two
runs a minute apart, more than the difference being looked for. Here every round runs each
command once, alternating, and CPU time (user + system, from wait4) is read per process; the
ratio of a round is taken inside that round, and the table gives the median of those ratios.

Both trees run on this venv's interpreter with the tree on PYTHONPATH (the libraries are the
venv's): `python -c pass`, the base commit's console script, this tree's console script by its
`#!` line (site.py and all), and this tree's drain as the stubs start it (`python -S`,
docs/HOOKS.md, "Starting Python"). The base is checked out with `git worktree add --detach` in a
temp dir and removed afterwards. Empty box, hermetic HOME and git (bench/fixtures.py), the bench
process standing in for the client (CLAUDE_PID), bytecode cached after warm-up rounds.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402 - the bench's test world
from harness import REPO, tool_paths  # noqa: E402

EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
WARMUP = 3


def cpu_ms(argv, cwd, env, stdin):
    """(CPU ms of the child, its stdout)."""
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: stdin from the pipe, stdout to ours, stderr dropped
        try:
            os.chdir(cwd)
            os.dup2(r, 0)
            os.dup2(out_w, 1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            for fd in (r, w, out_r, out_w, devnull):
                os.close(fd)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(r)
    os.close(out_w)
    os.write(w, stdin)
    os.close(w)
    chunks = []
    while True:
        b = os.read(out_r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(out_r)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(argv)}: exit status {status}")
    return (usage.ru_utime + usage.ru_stime) * 1000, b"".join(chunks)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the commit to compare against (e.g. 7987478)")
    ap.add_argument("--runs", type=int, default=60, help="rounds per event (default 60)")
    args = ap.parse_args(argv)
    tool, py = tool_paths()
    from git_korus_mail.wiring.stub import fast_start
    _python, dirs = fast_start(tool)
    if not dirs:
        raise SystemExit(f"{tool}: install would not start it with -S (wiring/stub.fast_start)")
    libs = [d for d in dirs[1:] if os.path.realpath(d) != os.path.realpath(str(REPO))]
    tmp = Path(tempfile.mkdtemp(prefix="korus-ab-"))
    base_tree = tmp / "base"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(base_tree), args.base],
                   check=True)
    try:
        (tmp / "world").mkdir()
        world = fixtures.World(tmp / "world", tool, py)
        _common, paths = world.clone("ab", ["web"])
        web = paths["web"]
        env = dict(world.env_cached)
        env["CLAUDE_PID"] = str(os.getpid())

        def tree_env(tree, fast=False):
            e = dict(env, PYTHONPATH=str(tree))
            if fast:
                e["KORUS_MAIL_PYPATH"] = os.pathsep.join([str(tree)] + libs)
            return e
        here = Path(REPO)
        cmds = {
            "pass": ([py, "-c", "pass"], env),
            "base": ([py, str(base_tree / "scripts" / "git-korus-mail"), "drain"], tree_env(base_tree)),
            "console": ([py, str(here / "scripts" / "git-korus-mail"), "drain"], tree_env(here)),
            "stub start": ([py, "-S", str(here / "scripts" / "git-korus-mail"), "drain"], tree_env(here, True)),
        }
        print(f"base {args.base}, {args.runs} rounds per event, CPU ms (median); ratios: median of each "
              f"round's own ratio; bytecode cached (PYTHONDONTWRITEBYTECODE unset for every command, "
              f"so the warm-up rounds write it: the condition of an installed wheel, docs/HOOKS.md)", flush=True)
        print("| event | pass | base | console | stub start | base÷pass | stub start÷pass | console÷base | "
              "stub start÷base |")
        print("|---|---|---|---|---|---|---|---|---|")
        for event in EVENTS:
            payload = fixtures.payload(event, "ab-" + event, web)
            check = fixtures.check_empty_box(event)
            times = {k: [] for k in cmds}
            for i in range(args.runs + WARMUP):
                for label, (cmd, e) in cmds.items():
                    ms, out = cpu_ms(cmd, web, e, b"" if label == "pass" else payload)
                    why = None if label == "pass" else check(out, b"", i)
                    if why:
                        raise SystemExit(f"{label}: {why}")
                    if i >= WARMUP:
                        times[label].append(ms)

            med = {k: statistics.median(v) for k, v in times.items()}
            ratio = {(a, b): statistics.median([x / y for x, y in zip(times[a], times[b])])
                     for a, b in (("base", "pass"), ("stub start", "pass"), ("console", "base"),
                                  ("stub start", "base"))}
            print(f"| {event} | " + " | ".join(f"{med[k]:.2f}" for k in cmds) + " | "
                  + " | ".join(f"{r:.3f}" for r in ratio.values()) + " |", flush=True)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base_tree)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
