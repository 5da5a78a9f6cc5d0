"""The bench harness: timing real processes in pairs (A B A B ...), statistics, and the
rows a run collects. No repositories and no product code here (see fixtures.py, rows.py)."""

import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

class Failure(Exception):
    pass


FAILURES = []   # (what, why): a measurement that could not run, or a broken invariant


def fail(what, why):
    FAILURES.append((what, str(why)))
    log(f"FAILED {what}: {why}")


def log(text):
    sys.stderr.write(f"[bench {time.strftime('%H:%M:%S')}] {text}\n")
    sys.stderr.flush()


# -- the interpreter that runs the tool ------------------------------------------------
def tool_paths():
    if sys.prefix == sys.base_prefix:
        raise SystemExit("bench/run.py: run it with the venv's interpreter: .venv/bin/python bench/run.py")
    tool = Path(sys.prefix) / "bin" / "git-korus-mail"
    if not tool.exists():
        raise SystemExit(f"bench/run.py: {tool} is missing (pip install -e . in this venv)")
    with open(tool, "rb") as f:
        first = f.readline().decode("utf-8", "replace").strip()
    py = None
    if first.startswith("#!") and "python" in first:
        py = shlex.split(first[2:])[0]
    if py is None or not os.path.exists(py):
        py = sys.executable  # a /bin/sh trampoline (long paths): it execs this venv's python
    return str(tool), py


# -- statistics -------------------------------------------------------------------------
def median(xs):
    return statistics.median(xs) if xs else float("nan")


def p90(xs):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def ms(x):
    return "—" if x is None or math.isnan(x) else (f"{x * 1000:.1f}" if x < 10 else f"{x:.2f} s")


# -- processes ------------------------------------------------------------------------
class Cmd:
    """One timed command. `stdin` is bytes or f(i) -> bytes; `check(stdout, i)` returns an
    error text or None; `after(i)` runs after each run, outside the timing."""

    def __init__(self, label, argv, cwd, env, stdin=b"", check=None, after=None):
        self.label, self.argv, self.cwd, self.env = label, argv, cwd, env
        self.stdin, self.check, self.after = stdin, check, after
        self.last_stdout = b""
        self.i = 0

    def once(self):
        self.i += 1
        i = self.i
        data = self.stdin(i) if callable(self.stdin) else self.stdin
        t0 = time.perf_counter()
        p = subprocess.run(self.argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           cwd=self.cwd, env=self.env)
        dt = time.perf_counter() - t0
        self.last_stdout = p.stdout
        if p.returncode != 0:
            raise Failure(f"exit {p.returncode}: {p.stderr.decode('utf-8', 'replace').strip()[-400:]}")
        if self.check is not None:
            why = self.check(p.stdout, p.stderr, i)
            if why:
                raise Failure(why)
        if self.after is not None:
            self.after(i)
        return dt


def interleaved(cmds, runs, warmup):
    """Warm up, then run A B C A B C ... `runs` times. {label: [seconds]}."""
    for _ in range(warmup):
        for c in cmds:
            c.once()
    times = {c.label: [] for c in cmds}
    for _ in range(runs):
        for c in cmds:
            times[c.label].append(c.once())
    return times


# -- results ------------------------------------------------------------------------------
class Row:
    def __init__(self, num, measure, baseline, cond, a, b, goal=None, limit=None, note=""):
        self.num, self.measure, self.baseline, self.cond = num, measure, baseline, cond
        self.a, self.b = a, b
        self.ratio = median(a) / median(b) if a and b else float("nan")
        self.goal, self.limit, self.note = goal, limit, note

    @property
    def verdict(self):
        if self.limit is None:
            return "info"
        if math.isnan(self.ratio):
            return "FAILED"
        return "met" if self.ratio <= self.limit else "MISSED"

    def md(self):
        ratio = "—" if math.isnan(self.ratio) else f"{self.ratio:.2f}×"
        goal = self.goal or ""
        return (f"| {self.num} | {self.measure} | {self.baseline} | {self.cond} | "
                f"{ms(median(self.a))} / {ms(p90(self.a))} | {ms(median(self.b))} / {ms(p90(self.b))} | "
                f"**{ratio}** | {goal} | {self.verdict if self.goal else ''} |")


ROWS = []
EXTRA = {}   # section name -> markdown text


CAUGHT = (Failure, OSError, subprocess.SubprocessError, ValueError, RuntimeError, AssertionError, KeyError,
          ImportError, SyntaxError)


def attempt(what, fn, *a, **kw):
    """Run one measurement; a failure is recorded and the next measurement still runs."""
    try:
        return fn(*a, **kw)
    except CAUGHT as exc:
        fail(what, f"{type(exc).__name__}: {exc}")
        return None


def guarded(what):
    def deco(fn):
        def run(*a, **kw):
            return attempt(what, fn, *a, **kw)
        return run
    return deco
