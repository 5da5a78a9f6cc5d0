"""Hermetic fixtures: real git repositories with real linked worktrees in temp dirs.

Every test gets its own HOME, git config and CLAUDE_CONFIG_DIR, so nothing of the
developer's machine leaks in and nothing of the tests leaks out. Helpers that tests
import live in helpers.py.
"""

import os

import pytest

from helpers import Clone


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
    # Every drain a test runs belongs to one client launch: this pytest process stands in for
    # Claude Code's (CLAUDE_PID). Tests of several launches, or of none, set their own.
    monkeypatch.setenv("CLAUDE_PID", str(os.getpid()))
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
    return home


@pytest.fixture
def clone(tmp_path):
    c = Clone(tmp_path)
    c.web = c.add_worktree("web")
    return c
