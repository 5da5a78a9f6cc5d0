"""The clone's worktree list read in pure Python (core/worktrees.py), held to pygit2's and git's.

`send`, `list` and `who` no longer import pygit2 (issue 26): they read the common dir as libgit2
reads it, and ask pygit2 only where that read cannot prove its answer. Both halves are tested
here: on every layout of the discovery matrix (and the states a worktree can be in) the fast
list answers and equals pygit2's; on layouts it cannot prove it steps aside, and the command
still addresses the box pygit2 would. The send tests run the real command in a process where
pygit2 cannot be imported at all.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers import git, git_out, run_cli
from test_discovery import LAYOUTS, _sha256sum, layouts  # noqa: F401  (layouts: the fixture)
from git_korus_mail.core import discover, gitrepo, keys, worktrees
from git_korus_mail.core.clone import Clone


def fast(path):
    """The fast list as a command run at `path` reads it (NotModelled when it steps aside)."""
    c = Clone(cwd=str(path))
    return worktrees.fast_list(c.common_dir, own_main=c._own_main())


def exact(path):
    """pygit2's list, as install and doctor read it (and every command did before)."""
    return Clone(cwd=str(path), exact=True).worktrees


def fields(wts):
    return [(w.path, w.name, w.branch, w.head, w.is_main, w.prunable, w.admin_dir) for w in wts]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_fast_list_answers_and_equals_pygit2_on_every_layout(layouts, layout):  # noqa: F811
    path = layouts[layout]
    ours = fast(path)  # answers: no NotModelled on any layout of the matrix
    assert fields(ours) == fields(exact(path)), layout
    assert fields(Clone(cwd=str(path)).worktrees) == fields(ours)
    # and the keys send addresses are the ones git's own list names (test_discovery pins those)
    porcelain = git_out("worktree", "list", "--porcelain", cwd=path)
    listed = [os.path.realpath(line.split(" ", 1)[1]) for line in porcelain.splitlines()
              if line.startswith("worktree ")]
    assert [w.path for w in ours if not w.is_main] == sorted(listed[1:], key=lambda p: [
        w.name for w in ours if w.path == p][0])


def test_states_of_a_linked_worktree_equal_pygit2(layouts):  # noqa: F811
    main = layouts["main"]
    base = main.parent
    for name in ("gone", "locked-gone", "moved", "relative"):
        git("worktree", "add", "-q", str(base / name), "-b", name, cwd=main)
    shutil.rmtree(base / "gone")                      # prunable
    git("worktree", "lock", str(base / "locked-gone"), cwd=main)
    shutil.rmtree(base / "locked-gone")               # gone, but locked: not prunable
    git("worktree", "move", str(base / "moved"), str(base / "moved-here"), cwd=main)
    admin = main / ".git" / "worktrees" / "relative"  # a gitdir written relative (newer git can)
    (admin / "gitdir").write_text(os.path.relpath(base / "relative" / ".git", admin) + "\n")
    (main / ".git" / "worktrees" / "empty").mkdir()   # junk libgit2 does not list
    (main / ".git" / "worktrees" / "a-file").write_text("x")
    link = base / "link-to-linked"
    link.symlink_to(base / "linked")
    ours = fast(main)
    assert fields(ours) == fields(exact(main))
    by = {w.name: w for w in ours}
    assert by["gone"].prunable and not by["locked-gone"].prunable
    assert by["moved"].path == os.path.realpath(base / "moved-here")
    assert by["relative"].path == os.path.realpath(base / "relative") and not by["relative"].prunable
    assert "empty" not in by and "a-file" not in by


def _odd(layouts, tmp_path, kind):  # noqa: F811
    """A path in a layout the fast list cannot prove, made odd in one way."""
    main = layouts["main"]
    if kind == "separate-git-dir, from a linked worktree":
        # nothing in the git dir records where its main worktree is; only standing in it proves it
        sep = layouts["separate-git-dir"]
        git("commit", "-q", "--allow-empty", "-m", "i", cwd=sep)
        git("worktree", "add", "-q", str(tmp_path / "sep-linked"), "-b", "sl", cwd=sep)
        return tmp_path / "sep-linked"
    if kind == "config include":
        (tmp_path / "extra.cfg").write_text("[core]\n\tbare = false\n")
        git("config", "include.path", str(tmp_path / "extra.cfg"), cwd=main)
    elif kind == "extensions.worktreeConfig":
        git("config", "extensions.worktreeConfig", "true", cwd=main)
    elif kind == "core.worktree in the global config":
        with open(os.path.join(os.environ["HOME"], ".gitconfig"), "a") as f:
            f.write("[core]\n\tworktree = /nowhere\n")
    elif kind == "gitdir of another shape":
        admin = main / ".git" / "worktrees" / "linked"
        (admin / "gitdir").write_text(str(layouts["linked"]) + "/\n")
    return layouts["linked"]


ODD = ["separate-git-dir, from a linked worktree", "config include", "extensions.worktreeConfig",
       "core.worktree in the global config", "gitdir of another shape"]


@pytest.mark.parametrize("kind", ODD)
def test_odd_layouts_step_aside_and_the_clone_asks_pygit2(layouts, tmp_path, kind):  # noqa: F811
    path = _odd(layouts, tmp_path, kind)
    with pytest.raises(discover.NotModelled):
        fast(path)
    if kind == "core.worktree in the global config":
        return  # libgit2 itself follows it there: only that the fast list stepped aside matters
    assert fields(Clone(cwd=str(path)).worktrees) == fields(exact(path))


# -- send, in a process that cannot import pygit2 ---------------------------------------------
def _shim(tmp_path, block):
    """A PYTHONPATH entry with a `pygit2` that refuses to load (block) or records that it was
    loaded and hands over the real one."""
    shim = tmp_path / ("pygit2-blocked" if block else "pygit2-recorded")
    (shim / "pygit2").mkdir(parents=True, exist_ok=True)
    (shim / "pygit2" / "__init__.py").write_text(
        "import importlib, os, sys\n"
        "with open(os.environ['KORUS_TEST_PYGIT2_LOG'], 'a') as f:\n"
        "    f.write('imported\\n')\n"
        + ("raise ImportError('pygit2 is blocked by the test')\n" if block else
           "here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
           "sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != here]\n"
           "del sys.modules['pygit2']\n"
           "sys.modules['pygit2'] = importlib.import_module('pygit2')\n"))
    log = tmp_path / "pygit2.log"
    return {"PYTHONPATH": str(shim), "KORUS_TEST_PYGIT2_LOG": str(log)}, log


def _send(src, dest, env):
    proc = run_cli("send", "--json", f"--to={dest}", "--", "hello from the test", cwd=src, env=env)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    return result


def _assert_delivered(result, src, dest_root):
    """The box is the pinned key of the destination's root, and the file is the message."""
    real = os.path.realpath(dest_root)
    name = f"{keys.slug(real)}-{_sha256sum(real)}"
    assert result["box"] == name and result["path"] == real
    common = Clone(cwd=str(src)).common_dir
    box = os.path.join(common, "mail", "box", name)
    with open(os.path.join(box, "inbox", result["id"] + ".json")) as f:
        msg = json.load(f)
    assert msg["to"] == {"key": name, "path": real} and msg["body"] == "hello from the test"
    # the sender's `from` and the box's records as pygit2's list gives them
    wts = exact(src)
    own = Clone(cwd=str(src)).own_key
    mine = [w for w in wts if keys.key_of_root(w.path) == own]
    assert msg["from"]["path"] == own.path and msg["from"]["branch"] == (mine[0].branch if mine else None)
    with open(os.path.join(box, "path")) as f:
        assert f.read().strip() == real
    target = [w for w in wts if w.path == real][0]
    from git_korus_mail.store import wtident
    with open(os.path.join(box, "worktree")) as f:
        assert f.read().strip() == wtident.of_git_dir(target.admin_dir, common)


SENDS = [  # (from, to as typed, the root it must reach)
    ("main", "linked", "linked"),                    # a worktree name
    ("main-subdir", "../../../linked/sub", "linked"),  # a path inside another worktree
    ("linked", "main", "main"),
    ("bare-linked-subdir", "bare-two", "bare-two"),
    ("submodule", "mod-wt", "submodule-linked"),
    ("submodule-linked", "../main/mod", "submodule"),
    ("separate-git-dir-subdir", ".", "separate-git-dir"),
]


@pytest.mark.parametrize("src,dest,root", SENDS, ids=[f"{s}->{d}" for s, d, _ in SENDS])
def test_send_never_imports_pygit2_on_common_layouts(layouts, tmp_path, src, dest, root):  # noqa: F811
    git("worktree", "add", "-q", str(tmp_path / "bare-two"), "-b", "b2", cwd=layouts["bare"])
    layouts["bare-two"] = tmp_path / "bare-two"
    env, log = _shim(tmp_path, block=True)
    result = _send(layouts[src], dest, env)
    assert not log.exists(), "send imported pygit2"
    _assert_delivered(result, layouts[src], layouts[root])


def test_send_from_an_odd_layout_falls_back_to_pygit2(layouts, tmp_path):  # noqa: F811
    src = _odd(layouts, tmp_path, "separate-git-dir, from a linked worktree")
    env, log = _shim(tmp_path, block=True)
    blocked = run_cli("send", f"--to={layouts['separate-git-dir']}", "--", "hi", cwd=src, env=env)
    assert blocked.returncode != 0 and log.exists()  # it needs pygit2 here, and asks for it
    log.unlink()
    env, log = _shim(tmp_path, block=False)
    result = _send(src, ".", env)
    assert log.exists()
    _assert_delivered(result, src, src)


def test_shim_blocks_pygit2(tmp_path):
    # the blocking shim really makes pygit2 unimportable in the command's process
    env, log = _shim(tmp_path, block=True)
    proc = subprocess.run([sys.executable, "-c", "import pygit2"],
                          env={**os.environ, **env}, capture_output=True, text=True)
    assert proc.returncode != 0 and "blocked by the test" in proc.stderr and log.exists()


def test_gitrepo_still_lists_what_it_listed(layouts):  # noqa: F811
    # the authority is unchanged: its list is git's (test_discovery holds the porcelain)
    common = os.path.realpath(git_out("rev-parse", "--path-format=absolute", "--git-common-dir",
                                      cwd=layouts["main"]))
    assert [w.name for w in gitrepo.list_worktrees(common)] == ["main", "linked"]
