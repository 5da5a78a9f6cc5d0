"""The woken turn's drain, measured alone: quiet, and under a CPU load of twice the cores.

    .venv/bin/python bench/woken.py [--runs 30] [--load 2.0]

bench/wake.py times the whole wake with the real Claude Code; its largest part of ours is the
woken turn's UserPromptSubmit hook (bench/WAKE.md). This bench isolates that drain, without
the client, so that its cost can be split and paired against its baselines in one run:

- **woken**: UserPromptSubmit after a Stop, with one new message queued (what a wake shows);
- **nothing new**: UserPromptSubmit after a Stop with nothing queued (the same events, no show);
- **`python -c pass`**: the interpreter's start, the floor of any Python hook.

With `--base <commit>`, the same two drains of that commit's package run too, in a clone of
their own, interleaved with this tree's. Each round runs them all alternately; the wall
time is spawn to exit, the CPU time is the child's rusage (user + system). With `--load`, that
many busy processes per core run during the measure (started here, ended here by their pids),
so the same drains are timed on a machine where every runnable process waits its turn.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.dont_write_bytecode = True  # this process imports bench/ and tests/; leave no .pyc in the repository
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from fixtures import SCRUB, World  # noqa: E402
from harness import tool_paths  # noqa: E402

TOOL_KEY = "KORUS_BENCH_TOOL"  # in a condition's environment: the git-korus-mail script it runs


def timed(cmd, cwd, env, stdin=b""):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=str(cwd), env=env, input=stdin, capture_output=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def burners(per_core):
    """Busy processes, `per_core` for each usable CPU; returned so the caller ends them by pid."""
    n = int(round(per_core * len(os.sched_getaffinity(0))))
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


class Session:
    """One clone and one session of it, driven by one version of the package (`env`)."""

    def __init__(self, world, name, env):
        _common, paths = world.clone(name, ["web"])
        for key, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
            world.git("config", f"korus-mail.{key}", value, cwd=paths["main"])  # the drain is measured, not the limits
        self.world, self.env, self.web, self.main = world, env, paths["web"], paths["main"]
        self.tool = env.get(TOOL_KEY, world.tool)  # the base's own script (run.py export_base), else this tree's
        self.sid = f"woken-{uuid.uuid4().hex[:8]}"
        self.drain("SessionStart")

    def event(self, name):
        p = {"session_id": self.sid, "transcript_path": "", "cwd": str(self.web), "hook_event_name": name,
             "prompt": uuid.uuid4().hex}  # a new prompt: a new event, never a twin of the last
        if name == "SessionStart":
            p["source"] = "startup"
        return json.dumps(p).encode()

    def drain(self, name):
        return timed([self.tool, "drain"], self.web, self.env, self.event(name))

    def round(self, i):
        """(woken wall, woken CPU, nothing-new wall, nothing-new CPU) of one round."""
        self.drain("UserPromptSubmit")
        self.drain("Stop")
        sent = subprocess.run([self.tool, "send", f"--to={self.web}", "--", f"wake {i}"], cwd=str(self.main),
                              env=self.env, capture_output=True)
        if sent.returncode != 0:
            raise RuntimeError(f"send failed: {sent.stderr[:300]!r}")
        out, w_wall, w_cpu = self.drain("UserPromptSubmit")
        if f"wake {i}".encode() not in out.stdout:
            raise RuntimeError(f"the woken drain did not show the message: {out.stdout[:300]!r}")
        self.drain("Stop")  # consumes it
        out2, e_wall, e_cpu = self.drain("UserPromptSubmit")
        if b"mail for this worktree" in out2.stdout:
            raise RuntimeError("the nothing-new drain showed mail")
        self.drain("Stop")
        return w_wall, w_cpu, e_wall, e_cpu


def measure(world, conds, runs, warmup):
    """{row name: ([wall], [cpu])}, the conditions' drains and `python -c pass` interleaved."""
    sessions = [(label, Session(world, f"woken-{n}-{uuid.uuid4().hex[:4]}", env)) for n, (label, env) in enumerate(conds)]
    times = {}
    for i in range(runs + warmup):
        for label, sess in sessions:
            w_wall, w_cpu, e_wall, e_cpu = sess.round(i)
            if i >= warmup:
                for name, wall, cpu in ((f"woken ({label})", w_wall, w_cpu), (f"nothing new ({label})", e_wall, e_cpu)):
                    times.setdefault(name, ([], []))
                    times[name][0].append(wall)
                    times[name][1].append(cpu)
        _o, p_wall, p_cpu = timed([world.py, "-c", "pass"], world.base, sessions[0][1].env)
        if i >= warmup:
            times.setdefault("python -c pass", ([], []))
            times["python -c pass"][0].append(p_wall)
            times["python -c pass"][1].append(p_cpu)
    return times


def table(title, times, load, base_label):
    med = statistics.median
    base_w = med(times[f"nothing new ({base_label})"][0])
    pass_w, pass_c = med(times["python -c pass"][0]), med(times["python -c pass"][1])
    lines = [f"**{title}** (load average {load:.1f} at the end)", "",
             f"| drain | n | wall med / p90 | CPU med | wall ÷ nothing new ({base_label}) | wall ÷ `-c pass` | CPU ÷ `-c pass` |",
             "|---|---|---|---|---|---|---|"]
    for name, (walls, cpus) in times.items():
        q = statistics.quantiles(walls, n=10)[-1] if len(walls) >= 2 else walls[0]
        lines.append(f"| {name} | {len(walls)} | {med(walls) * 1000:.1f} / {q * 1000:.1f} | {med(cpus) * 1000:.1f} | "
                     f"{med(walls) / base_w:.2f}× | {med(walls) / pass_w:.2f}× | {med(cpus) / pass_c:.2f}× |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--load", type=float, default=2.0, help="busy processes per core for the loaded run (0: none)")
    ap.add_argument("--base", help="also run this commit's package (git archive, first on PYTHONPATH), interleaved")
    args = ap.parse_args(argv)
    for var in SCRUB:
        os.environ.pop(var, None)
    tool, py = tool_paths()
    with tempfile.TemporaryDirectory(prefix="korus-woken-") as tmp:
        world = World(Path(tmp), tool, py)
        env = dict(world.env_cached, CLAUDE_PID=str(os.getpid()))  # the drains' launch: this process
        conds = [("this tree", env)]
        if args.base:
            from run import export_base
            label, script, extra = export_base(args.base, Path(tmp) / "base", py)
            conds.append((label, dict(env, **extra, **{TOOL_KEY: script})))
        base_label = conds[-1][0]
        out = [f"Command: `.venv/bin/python bench/woken.py --runs {args.runs} --load {args.load}"
               f"{' --base ' + args.base if args.base else ''}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"]
        out.append(table("quiet (the other engineers' load only)", measure(world, conds, args.runs, args.warmup),
                         os.getloadavg()[0], base_label))
        if args.load > 0:
            hogs = burners(args.load)
            try:
                time.sleep(1.0)
                t = measure(world, conds, args.runs, args.warmup)
                load = os.getloadavg()[0]
            finally:
                for p in hogs:
                    p.kill()
                    p.wait()
            out.append(table(f"loaded: {len(hogs)} busy processes on {len(os.sched_getaffinity(0))} cores", t, load,
                             base_label))
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
