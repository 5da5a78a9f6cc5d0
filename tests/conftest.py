"""Hermetic fixtures: real git repositories with real linked worktrees in temp dirs.

Every test gets its own HOME, git config and CLAUDE_CONFIG_DIR, so nothing of the
developer's machine leaks in and nothing of the tests leaks out. Helpers that tests
import live in helpers.py.
"""


import pytest

from helpers import Clone
from hermetic import SCRUB, hermetic_env as world_env, write_gitconfig


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    for var in SCRUB:
        monkeypatch.delenv(var, raising=False)
    # Every drain a test runs belongs to one client launch: this pytest process stands in for
    # Claude Code's (CLAUDE_PID). Tests of several launches, or of none, set their own.
    for var, value in world_env(home, "Test", "test@example.invalid").items():
        monkeypatch.setenv(var, value)
    write_gitconfig(home)
    return home


@pytest.fixture
def clone(tmp_path):
    c = Clone(tmp_path)
    c.web = c.add_worktree("web")
    return c
