"""The commit guard of file reservations (issue 29; wiring/precommit.py, commands/guard.py):
real `git commit`s in real linked worktrees, after the real install."""

import os
import stat
import subprocess
import time

import pytest
from helpers import git
from install_fixtures import install, uninstall

from git_korus_mail.core import reservations
from git_korus_mail.store.files import MailRoot


def reserve(clone, worktree, specs, note="", block=False, ttl=60):
    """A reservation made by the person in `worktree` (the store's own API: the `reserve`
    command is another lane's)."""
    root = MailRoot.open(str(clone.common_dir), create=True)
    r, _others = reservations.reserve(root, specs, reservations.Holder(None, None, None), "box",
                                      os.path.realpath(worktree), os.path.basename(worktree),
                                      ttl_minutes=ttl, note=note, block=block)
    return r


def commit(worktree, path, text="x\n", *extra, env=None):
    p = worktree / path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    git("add", path, cwd=worktree)
    full = dict(os.environ, **(env or {}))
    return subprocess.run(["git", "commit", "-q", "-m", f"edit {path}", *extra], cwd=worktree,
                          capture_output=True, text=True, env=full)


def head_changed(worktree, before):
    return git("rev-parse", "HEAD", cwd=worktree).stdout.strip() != before


def head(worktree):
    return git("rev-parse", "HEAD", cwd=worktree).stdout.strip()


@pytest.fixture
def guarded(clone):
    proc = install(clone.main)
    assert "pre-commit hook" in proc.stdout, proc.stdout
    return clone


def test_commit_touching_a_path_reserved_elsewhere_is_told_who_and_goes_through(guarded):
    clone = guarded
    r = reserve(clone, clone.main, ["src/db/"], note="migrating the schema")
    before = head(clone.web)
    proc = commit(clone.web, "src/db/schema.sql")
    assert proc.returncode == 0, proc.stderr
    assert head_changed(clone.web, before)  # advisory: the commit is made
    assert "this commit touches paths reserved in another worktree" in proc.stderr
    assert "src/db/schema.sql is reserved by the person" in proc.stderr
    assert r.id in proc.stderr and "migrating the schema" in proc.stderr
    assert "git korus-mail send --to=" in proc.stderr  # how to reach the holder
    assert "Reservations are advisory" in proc.stderr and "refused" not in proc.stderr


def test_block_reservation_refuses_the_commit_and_no_verify_overrides(guarded):
    clone = guarded
    r = reserve(clone, clone.main, ["docs/*.md"], note="rewriting the docs", block=True)
    before = head(clone.web)
    proc = commit(clone.web, "docs/guide.md")
    assert proc.returncode != 0
    assert not head_changed(clone.web, before)
    assert "This commit was refused" in proc.stderr and "advisory" not in proc.stderr
    assert "git commit --no-verify" in proc.stderr
    assert f"git korus-mail reserve --drop {r.id}" in proc.stderr
    proc = subprocess.run(["git", "commit", "-q", "--no-verify", "-m", "anyway"], cwd=clone.web,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert head_changed(clone.web, before)


def test_the_holders_own_worktree_and_unreserved_paths_are_silent(guarded):
    clone = guarded
    reserve(clone, clone.main, ["src/db/"], block=True)
    own = commit(clone.main, "src/db/schema.sql")
    assert own.returncode == 0 and own.stderr == "", own.stderr
    other = commit(clone.web, "src/ui/page.html")
    assert other.returncode == 0 and other.stderr == "", other.stderr


def test_commit_a_uses_the_commit_index_and_a_rename_away_is_told(guarded):
    clone = guarded
    first = commit(clone.web, "lib/core.py")
    assert first.returncode == 0
    reserve(clone, clone.main, ["lib/core.py"])
    git("mv", "lib/core.py", "lib/renamed.py", cwd=clone.web)
    proc = subprocess.run(["git", "commit", "-q", "-m", "move"], cwd=clone.web, capture_output=True, text=True)
    assert proc.returncode == 0 and "lib/core.py is reserved" in proc.stderr, proc.stderr
    # `git commit -a`: git commits a temporary index (GIT_INDEX_FILE), which the guard reads
    (clone.web / "lib" / "renamed.py").write_text("changed\n")
    reserve(clone, clone.main, ["lib/renamed.py"], block=True)
    proc = subprocess.run(["git", "commit", "-q", "-a", "-m", "all"], cwd=clone.web, capture_output=True, text=True)
    assert proc.returncode != 0 and "lib/renamed.py is reserved" in proc.stderr, proc.stderr


def test_a_lapsed_reservation_is_not_told(guarded):
    clone = guarded
    root = MailRoot.open(str(clone.common_dir), create=True)
    past = time.time() - 3 * 3600
    reservations.reserve(root, ["src/"], reservations.Holder(None, None, None), "box", str(clone.main), "main",
                         ttl_minutes=60, block=True, now=past)
    proc = commit(clone.web, "src/a.py")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_no_reservation_starts_no_python(guarded, tmp_path):
    """The zero-cost signal: with no reservation in the clone the hook is a shell test. The
    helper baked into the hook is swapped for one that leaves a mark when run."""
    clone = guarded
    hook = clone.common_dir / "hooks" / "pre-commit"
    mark = tmp_path / "ran"
    spy = tmp_path / "spy"
    spy.write_text(f"#!/bin/sh\ntouch '{mark}'\n")
    spy.chmod(0o755)
    text = hook.read_text()
    helper_line = next(line for line in text.splitlines() if line.startswith("helper="))
    hook.write_text(text.replace(helper_line, f"helper='{spy}'"))
    assert commit(clone.web, "a.txt").returncode == 0
    assert not mark.exists()  # no reservation: the helper never ran
    r = reserve(clone, clone.main, ["elsewhere/"])
    assert commit(clone.web, "b.txt").returncode == 0
    assert mark.exists()  # the signal is there: the helper runs
    root = MailRoot.open(str(clone.common_dir))
    reservations.drop(root, [r.id], None)
    mark.unlink()
    assert commit(clone.web, "c.txt").returncode == 0
    assert not mark.exists()  # the last reservation ended: the signal went with it


def test_users_pre_commit_hook_keeps_running_first_and_uninstall_restores_it(clone):
    hooks = clone.common_dir / "hooks"
    hooks.mkdir(exist_ok=True)
    user_hook = hooks / "pre-commit"
    log = clone.base / "user-hook.log"
    user_bytes = f"#!/bin/sh\necho ran >> '{log}'\ngrep -q REFUSE \"$(git rev-parse --show-toplevel)/refuse\" 2>/dev/null && exit 7\nexit 0\n".encode()
    user_hook.write_bytes(user_bytes)
    user_hook.chmod(0o750)
    proc = install(clone.main)
    assert "kept your pre-commit hook as pre-commit.legacy" in proc.stdout
    assert (hooks / "pre-commit.legacy").read_bytes() == user_bytes
    reserve(clone, clone.main, ["src/"])
    proc = commit(clone.web, "src/x.py")
    assert proc.returncode == 0 and "src/x.py is reserved" in proc.stderr
    assert log.read_text() == "ran\n"  # the user's hook ran too
    (clone.web / "refuse").write_text("REFUSE\n")
    proc = commit(clone.web, "other.txt")
    assert proc.returncode != 0  # the user's refusal stands
    assert log.read_text() == "ran\nran\n"
    install(clone.main)  # a second install leaves both as they are
    assert (hooks / "pre-commit.legacy").read_bytes() == user_bytes
    uninstall(clone.main)
    assert user_hook.read_bytes() == user_bytes  # byte for byte, and its mode
    assert stat.S_IMODE(user_hook.stat().st_mode) == 0o750
    assert not (hooks / "pre-commit.legacy").exists()


def test_uninstall_removes_the_hook_and_doctor_knows_it(guarded):
    clone = guarded
    hook = clone.common_dir / "hooks" / "pre-commit"
    from helpers import run_cli
    doc = run_cli("doctor", cwd=clone.main)
    assert "checks each commit against reservations" in " ".join(doc.stdout.split()), doc.stdout
    hook.unlink()
    doc = run_cli("doctor", cwd=clone.main)
    assert "no pre-commit hook of ours: commits are not checked" in " ".join(doc.stdout.split()), doc.stdout
    assert doc.returncode != 0
    install(clone.main)
    assert hook.exists()
    uninstall(clone.main)
    assert not hook.exists()


def test_a_fault_of_the_guard_never_stops_a_commit(guarded):
    clone = guarded
    reserve(clone, clone.main, ["src/"], block=True)
    # a broken reservations directory: the guard fails, says so, and lets the commit through
    hook = clone.common_dir / "hooks" / "pre-commit"
    text = hook.read_text()
    helper_line = next(line for line in text.splitlines() if line.startswith("helper="))
    hook.write_text(text.replace(helper_line, "helper=/bin/false"))
    proc = commit(clone.web, "src/y.py")
    assert proc.returncode == 0
    assert "the reservation check failed (exit 1): this commit was not checked" in proc.stderr


def test_a_sessions_reservation_names_the_session_to_reach(guarded):
    clone = guarded
    root = MailRoot.open(str(clone.common_dir), create=True)
    reservations.reserve(root, ["api/"], reservations.Holder("sess-42", None, "claude"), "box",
                         os.path.realpath(clone.main), "main", ttl_minutes=60, note="new endpoints")
    proc = commit(clone.web, "api/routes.py")
    assert proc.returncode == 0
    said = " ".join(proc.stderr.split())
    assert "api/routes.py is reserved by session sess-42" in said, proc.stderr
    assert "--session=sess-42 -- '<your message>'" in said
