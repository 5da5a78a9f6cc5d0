"""`send` of this tree against `send` of an older commit, `python -c pass` and `import pygit2`,
interleaved in one run: whole processes, median wall and CPU time (the children's rusage), and
each one's ratio to `python -c pass` (issue 26: send <= 2.5x).

    .venv/bin/python bench/send_ab.py [--base main] [--rounds 40]

The older commit's package is exported (`git archive`) to a temp dir and put first on
`PYTHONPATH` for its runs: the same interpreter, venv and console script, only the package
differs. Each command is started as `/bin/sh -c 'exec ...'`, alike. The clone is hermetic (as
bench/run.py's), its limits off, and the recipient's inbox emptied after each send, outside the
timing. CPU time is the steadier figure on a loaded machine: wall time adds the waits for a CPU
and for the disk (a send makes its message durable with two fsyncs).
"""

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures import BODY, World  # noqa: E402
from harness import REPO, median, tool_paths  # noqa: E402


def once(argv, cwd, env):
    """(wall, CPU of the child from its own rusage, exit status); output to /dev/null."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _pid, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="main")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    tool, py = tool_paths()
    base_dir = Path(tempfile.mkdtemp(prefix="korus-send-ab-"))
    try:
        export = base_dir / "base"
        export.mkdir()
        rev = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.strip()
        archive = subprocess.run(["git", "archive", args.base, "git_korus_mail"], cwd=REPO, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(export)], input=archive, check=True)
        world = World(base_dir, tool, py)
        common, paths = world.clone("ab", ["web"])
        main_wt, web = paths["main"], paths["web"]
        for name, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
            world.git("config", f"korus-mail.{name}", value, cwd=main_wt)
        env = dict(world.env_cached)
        base_env = dict(env, PYTHONPATH=str(export))
        send = f"exec {shlex.quote(tool)} send --to={shlex.quote(str(web))} -- {shlex.quote(BODY)}"
        cmds = [
            ("python -c pass", f"exec {shlex.quote(py)} -c pass", env),
            ("send (this tree)", send, env),
            (f"send ({args.base}, {rev})", send, base_env),
            ('python -c "import pygit2"', f"exec {shlex.quote(py)} -c 'import pygit2'", env),
        ]
        inboxes = Path(common) / "mail" / "box"

        def empty():
            for inbox in inboxes.glob("*/inbox"):
                for f in inbox.iterdir():
                    f.unlink()

        res = {label: ([], []) for label, _, _ in cmds}
        for i in range(args.warmup + args.rounds):
            order = cmds if i % 2 == 0 else cmds[::-1]
            for label, script, e in order:
                wall, cpu, rc = once(["/bin/sh", "-c", script], main_wt, e)
                if rc != 0:
                    err = subprocess.run(["/bin/sh", "-c", script], cwd=main_wt, env=e, capture_output=True).stderr
                    raise SystemExit(f"{label}: exit {rc}: {err.decode()[-300:]}")
                if label.startswith("send"):
                    empty()
                if i >= args.warmup:
                    res[label][0].append(wall)
                    res[label][1].append(cpu)
        pw, pc = median(res[cmds[0][0]][0]), median(res[cmds[0][0]][1])
        print(f"{args.rounds} interleaved rounds, load average {os.getloadavg()[0]:.1f} at the end; ms, median\n")
        print("| command | wall | CPU | ÷ `-c pass` wall | ÷ `-c pass` CPU |")
        print("|---|---|---|---|---|")
        for label, _, _ in cmds:
            w, c = median(res[label][0]), median(res[label][1])
            print(f"| {label} | {w * 1000:.1f} | {c * 1000:.1f} | **{w / pw:.2f}×** | **{c / pc:.2f}×** |")
    finally:
        subprocess.run(["rm", "-rf", str(base_dir)])


if __name__ == "__main__":
    main()
