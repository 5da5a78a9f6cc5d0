"""Real commands in their own processes, held still at named points so a narrow race between
processes plays out in one order, every run (issue 22).

KORUS_TEST_PAUSE="<point>=<path>;..." makes the command stop at each named point once: it
creates `<path>.at`, then waits until `<path>.go` exists. A point is a crash step
(git_korus_mail/crash.py: the gaps between two state writes), `before-break` (the call of
claims.break_dead, after the caller judged the claim's owner dead) or `staging:<tag>` (the
write of a staged record: `staging:receipt` is a consume's decision, `staging:answer` a reply's).
"""

import os
import subprocess
import time

from helpers import PYTHON

_PAUSING = (
    "import os, sys, time\n"
    "points = dict(p.split('=', 1) for p in os.environ['KORUS_TEST_PAUSE'].split(';') if p)\n"
    "def hold(point):\n"
    "    path = points.pop(point, None)\n"
    "    if path:\n"
    "        open(path + '.at', 'w').close()\n"
    "        while not os.path.exists(path + '.go'):\n"
    "            time.sleep(0.002)\n"
    "from git_korus_mail import crash\n"
    "_point = crash.point\n"
    "def point(step):\n"
    "    hold(step)\n"
    "    _point(step)\n"
    "crash.point = point\n"
    "from git_korus_mail.store import claims\n"
    "_break = claims.break_dead\n"
    "def break_dead(*a, **k):\n"
    "    hold('before-break')\n"
    "    return _break(*a, **k)\n"
    "claims.break_dead = break_dead\n"
    "from git_korus_mail.store import fsafe\n"
    "_staged = fsafe.Dir.create_staged\n"
    "def create_staged(self, name, data, staging, tag, sync=True, **kw):\n"
    "    hold('staging:' + tag)\n"
    "    return _staged(self, name, data, staging, tag, sync, **kw)\n"
    "fsafe.Dir.create_staged = create_staged\n"
    "from git_korus_mail import cli\n"
    "sys.exit(cli.main(sys.argv[1:]))\n")


class Paused:
    """One real command, started with its pause points (`{point: name}`), names under `where`."""

    def __init__(self, where, argv, cwd, points, stdin=None, env=None):
        self.where = str(where)
        full = dict(os.environ)
        full.update(env or {})
        full["KORUS_TEST_PAUSE"] = ";".join(f"{p}={os.path.join(self.where, n)}" for p, n in points.items())
        self.points = points
        self.proc = subprocess.Popen([PYTHON, "-c", _PAUSING] + list(argv), cwd=str(cwd), env=full,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.proc.stdin.write(stdin or "")
        self.proc.stdin.close()
        self.out = self.err = None

    def _path(self, point):
        return os.path.join(self.where, self.points[point])

    def at(self, point):
        return os.path.exists(self._path(point) + ".at")

    def reach(self, point, timeout=30.0):
        """Wait until it stops at `point`, or exits; True when it stopped there."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.at(point):
                return True
            if self.proc.poll() is not None:
                return self.at(point)
            time.sleep(0.005)
        raise AssertionError(f"neither at {point} nor exited after {timeout} s")

    def go(self, point):
        open(self._path(point) + ".go", "w").close()

    def finish(self, timeout=60):
        for point in self.points:
            self.go(point)
        self.out = self.proc.stdout.read()
        self.err = self.proc.stderr.read()
        return self.proc.wait(timeout=timeout)
