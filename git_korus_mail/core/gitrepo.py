"""The clone as pygit2 sees it: common dir, worktree root, the list of worktrees.

The slow but authoritative path: `install`, `doctor`, and whatever the pure-Python readers
cannot prove (`discover.fast_locate` for a path, `worktrees.fast_list` for the worktree
list) come here; `send`, `list` and the hooks do not, on every common layout.
"""

import os

import pygit2

from git_korus_mail.core.discover import Location, common_dir_of
from git_korus_mail.core.worktrees import Worktree as Worktree  # re-exported: the clients name it from here
from git_korus_mail.core.worktrees import read_head
from git_korus_mail.errors import MailError

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, List, Optional


def _open(start: str, from_env: bool) -> "Any":  # a pygit2.Repository (pygit2 ships no hints)
    if from_env:
        # git exports GIT_DIR for `git --git-dir=... korus-mail`; open exactly that git dir
        return pygit2.Repository(os.path.abspath(os.environ["GIT_DIR"]),
                                 pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    if pygit2.discover_repository(start) is None:
        return None
    # open from the start path, not from the discovered git dir: only then does libgit2
    # follow a .git file to its worktree (--separate-git-dir would report the wrong one)
    return pygit2.Repository(start)


def open_repository(start: str, from_env: bool = False) -> "Any":
    """The pygit2 Repository for `start`, None outside any repository.

    Errors that git would report (another user's repository) become MailError."""
    try:
        return _open(start, from_env)
    except pygit2.GitError as exc:
        text = str(exc)
        if "owner" in text or "owned" in text:
            raise MailError(f"{start}: repository is owned by another user; git refuses it too "
                            f"(see `git config --global --add safe.directory`)") from None
        raise MailError(f"{start}: {text}") from None
    except KeyError:
        return None


def locate(start: str, from_env: bool = False) -> "Optional[Location]":
    """Location of `start` per pygit2 (None outside any repository)."""
    repo = open_repository(start, from_env)
    if repo is None:
        return None
    git_dir = os.path.realpath(repo.path)
    common = common_dir_of(git_dir)
    worktree: Optional[str] = None
    if from_env:
        # git's rule with GIT_DIR set: GIT_WORK_TREE, else core.worktree, else the cwd is the top
        wt = os.environ.get("GIT_WORK_TREE") or (repo.workdir if repo.config.get_bool("core.bare") is False
                                                  and "core.worktree" in repo.config else None)
        worktree = os.path.realpath(wt or start) if not repo.is_bare or wt else None
    elif not repo.is_bare and repo.workdir:
        worktree = os.path.realpath(repo.workdir)
        here = os.path.realpath(start)
        if not from_env and (not _is_within(here, worktree) or _is_within(here, git_dir)):
            # started inside the .git dir: git says "not a work tree" there
            worktree = None
    return Location(worktree, git_dir, common)


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def list_worktrees(common_dir: str) -> "List[Worktree]":
    """Main worktree first (absent for a bare clone), then linked ones in name order."""
    try:
        repo = pygit2.Repository(common_dir)
    except pygit2.GitError as exc:
        raise MailError(f"{common_dir}: {exc}") from None
    out: List[Worktree] = []
    if not repo.is_bare and repo.workdir:
        branch, head = read_head(common_dir)
        out.append(Worktree(os.path.realpath(repo.workdir), os.path.basename(repo.workdir.rstrip("/")),
                            branch, head, True, False, common_dir))
    for name in sorted(repo.list_worktrees()):
        try:
            wt = repo.lookup_worktree(name)
        except (pygit2.GitError, KeyError):
            continue
        admin = os.path.join(common_dir, "worktrees", name)
        branch, head = read_head(admin)
        path = wt.path.rstrip("/")
        real = os.path.realpath(path) if os.path.exists(path) else os.path.normpath(path)
        out.append(Worktree(real, name, branch, head, False, bool(wt.is_prunable), admin))
    return out
