"""Helpers shared by the tests: real git repositories, and the real command as a process.

A module of its own (not conftest.py): tests/e2e has a conftest.py too, and two
top-level modules named `conftest` shadow each other in sys.modules.
"""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import hermetic

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def git(*args, cwd, check=True, env=None):
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True, env=env)


def git_out(*args, cwd):
    return git(*args, cwd=cwd).stdout.strip()


class Clone:
    """A clone at <tmp>/api with linked worktrees beside it (<tmp>/web, ...)."""

    def __init__(self, base):
        self.base = base
        self.main = base / "api"
        self.main.mkdir()
        hermetic.init_repo(self.main, git)

    def add_worktree(self, name, branch=None):
        return hermetic.add_worktree(self.main, self.base / name, branch or name, git)

    @property
    def common_dir(self):
        return Path(git_out("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=self.main))

    @property
    def mail_root(self):
        return self.common_dir / "mail"


@contextlib.contextmanager
def reaped(proc):
    """Run the block beside the process `proc` (a subprocess.Popen); however the block ends, a
    process still running then is killed and reaped, so that no test leaves one behind."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def run_cli(*args, cwd, input=None, env=None, check=False):
    """Run the real command in a separate process, as a user (or a hook) would."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run([PYTHON, "-m", "git_korus_mail", *args], cwd=cwd, input=input,
                          capture_output=True, text=isinstance(input, str) or input is None, env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} -> {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}")
    return proc


def hook(event, cwd, session, repo=None, env=None, extra=None):
    """Run `drain` as Claude Code would: payload on stdin, JSON (or nothing) on stdout."""
    payload = hermetic.payload(event, session, cwd)
    if extra:
        payload.update(extra)
    args = ["drain"] + ([f"--repo={repo}"] if repo else [])
    proc = run_cli(*args, cwd=cwd, input=json.dumps(payload), env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    return (json.loads(out) if out else None), proc


context_of = hermetic.context_of


def proc_start_ticks(pid):
    """Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), read here, not by the product."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def launch_dir(session, pid=None, start=None):
    """The display-marker directory name of `session` in the launch of process `pid` (default:
    this pytest process, which conftest names as every test's CLAUDE_PID), computed from /proc
    independently of the product: `<session>@<pid>-<start ticks>-<boot id[:8]>`."""
    pid = os.getpid() if pid is None else pid
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    start = proc_start_ticks(pid) if start is None else start
    return f"{session}@{pid}-{start}-{boot[:8]}"


def no_limits(clone):
    """Lift the receiver's limits (docs/DESIGN.md, "Limits") for a test that floods one box from
    one sender on purpose: a store race or a cap, not a limit, is what it measures."""
    for name, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
        git("config", f"korus-mail.{name}", value, cwd=clone.main)
