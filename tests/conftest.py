"""Hermetic fixtures: real git repositories with real linked worktrees in temp dirs.

Every test gets its own HOME, git config and CLAUDE_CONFIG_DIR, so nothing of the
developer's machine leaks in and nothing of the tests leaks out.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def git(*args, cwd, check=True, env=None):
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True, env=env)


def git_out(*args, cwd):
    return git(*args, cwd=cwd).stdout.strip()


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                "CLAUDE_PID", "CLAUDE_CODE_SESSION_ID", "KORUS_MAIL_CRASH_AT", "NO_COLOR",
                "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(var, raising=False)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
    return home


class Clone:
    """A clone at <tmp>/api with linked worktrees beside it (<tmp>/web, ...)."""

    def __init__(self, base):
        self.base = base
        self.main = base / "api"
        self.main.mkdir()
        git("init", "-q", "-b", "main", str(self.main), cwd=base)
        (self.main / "README").write_text("hello\n")
        git("add", "README", cwd=self.main)
        git("commit", "-q", "-m", "init", cwd=self.main)

    def add_worktree(self, name, branch=None):
        path = self.base / name
        git("worktree", "add", "-q", str(path), "-b", branch or name, cwd=self.main)
        return path

    @property
    def common_dir(self):
        return Path(git_out("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=self.main))

    @property
    def mail_root(self):
        return self.common_dir / "mail"


@pytest.fixture
def clone(tmp_path):
    c = Clone(tmp_path)
    c.web = c.add_worktree("web")
    return c


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
    payload = {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event}
    if event == "SessionStart":
        payload["source"] = "startup"
    if extra:
        payload.update(extra)
    args = ["drain"] + ([f"--repo={repo}"] if repo else [])
    proc = run_cli(*args, cwd=cwd, input=json.dumps(payload), env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    return (json.loads(out) if out else None), proc


def context_of(answer):
    if not answer:
        return None
    return (answer.get("hookSpecificOutput") or {}).get("additionalContext")
