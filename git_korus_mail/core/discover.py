"""Find a path's worktree root and git common dir the way git does, in pure Python.

This is the hook hot path's way to the mail root: importing pygit2 (or running git)
on every agent turn would cost more than the whole drain. It follows git's own
discovery (setup.c): walk up from the physical path; a `.git` file or directory
marks a worktree root; a directory that is itself a git dir is a bare repository
(or the inside of a `.git`), which has no worktree. The common dir comes from the
git dir's `commondir` file.

Anything this walk does not model (GIT_DIR and friends in the environment, a
`core.worktree` setting, a repository owned by another user) returns None from
`fast_locate`, and the caller falls back to pygit2 (`gitrepo.locate`). Tests hold
both to git's own answers on the whole matrix of layouts.
"""

import os
import stat

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Optional

# Environment that changes how git discovers a repository: not modelled here.
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
            "GIT_DISCOVERY_ACROSS_FILESYSTEM")


class Location:
    """Where a path sits: its worktree root (None outside any worktree) and its clone's common dir."""

    __slots__ = ("worktree", "git_dir", "common_dir")

    def __init__(self, worktree: "Optional[str]", git_dir: str, common_dir: str) -> None:
        self.worktree = worktree
        self.git_dir = git_dir
        self.common_dir = common_dir

    def __repr__(self) -> str:
        return f"Location(worktree={self.worktree!r}, common_dir={self.common_dir!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Location):
            return NotImplemented
        return (self.worktree, self.common_dir) == (other.worktree, other.common_dir)


class NotModelled(Exception):
    """The fast walk met something only git (or pygit2) can answer."""


def fast_locate(start: str) -> "Optional[Location]":
    """Location of `start`, None when it is in no repository; NotModelled when unsure."""
    for var in _GIT_ENV:
        if var in os.environ:
            raise NotModelled(var)
    path = os.path.realpath(start)
    try:
        dev = os.stat(path).st_dev
    except OSError:
        raise NotModelled("start path not accessible") from None
    uid = os.geteuid()
    while True:
        dotgit = os.path.join(path, ".git")
        try:
            st = os.lstat(dotgit)
        except FileNotFoundError:
            st = None
        except OSError:
            raise NotModelled("cannot stat .git") from None
        if st is not None:
            if stat.S_ISLNK(st.st_mode):
                raise NotModelled(".git is a symlink")
            if stat.S_ISREG(st.st_mode):
                git_dir = _read_gitfile(dotgit, path)
            elif stat.S_ISDIR(st.st_mode):
                git_dir = dotgit
            else:
                git_dir = None
            if git_dir is not None and _is_git_dir(git_dir):
                return _finish(path, git_dir, uid)
        if _is_git_dir(path):
            return _finish(None, path, uid)
        parent = os.path.dirname(path)
        if parent == path:
            return None
        try:
            if os.stat(parent).st_dev != dev:
                # git stops at a filesystem boundary unless told otherwise
                return None
        except OSError:
            return None
        path = parent


def _finish(worktree: "Optional[str]", git_dir: str, uid: int) -> Location:
    common = common_dir_of(git_dir)
    try:
        owner_st = os.stat(worktree if worktree is not None else git_dir)
    except OSError:
        raise NotModelled("cannot stat repository") from None
    if owner_st.st_uid != uid:
        # git's safe.directory rules decide this; pygit2 gives the clear error
        raise NotModelled("owned by another user")
    if worktree is not None and git_dir == common:
        # submodules and --separate-git-dir set core.worktree; it must lead back to where we are
        configured = _core_worktree(common)
        if configured is not None and os.path.realpath(os.path.join(git_dir, configured)) != worktree:
            raise NotModelled("core.worktree points elsewhere")
    return Location(worktree, git_dir, common)


def common_dir_of(git_dir: str) -> str:
    """git's rule: the `commondir` file inside a git dir names the common dir (relative to it)."""
    try:
        with open(os.path.join(git_dir, "commondir"), "rb") as f:
            rel = f.read().decode("utf-8", "surrogateescape").strip()
    except FileNotFoundError:
        return os.path.realpath(git_dir)
    return os.path.realpath(os.path.join(git_dir, rel))


def _read_gitfile(dotgit: str, worktree: str) -> "Optional[str]":
    try:
        with open(dotgit, "rb") as f:
            text = f.read(4096).decode("utf-8", "surrogateescape")
    except OSError:
        return None
    if not text.startswith("gitdir: "):
        return None
    target = text[len("gitdir: "):].strip()
    return os.path.realpath(os.path.join(worktree, target))


def _is_git_dir(d: str) -> bool:
    """git's is_git_directory(): HEAD here; objects/ and refs/ here or in the common dir."""
    try:
        if not os.path.isfile(os.path.join(d, "HEAD")):
            return False
    except OSError:
        return False
    base = d
    commondir_file = os.path.join(d, "commondir")
    if os.path.isfile(commondir_file):
        base = common_dir_of(d)
    return os.path.isdir(os.path.join(base, "objects")) and os.path.isdir(os.path.join(base, "refs"))


def _core_worktree(common: str) -> "Optional[str]":
    """core.worktree from the clone's config, or None. (A linked worktree ignores it, as git does.)"""
    try:
        with open(os.path.join(common, "config"), "rb") as f:
            data = f.read(1 << 20)
    except OSError:
        return None
    if b"worktree" not in data.lower():
        return None
    section = ""
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line[1:line.find("]")].strip().lower() if "]" in line else ""
        elif section == "core" and "=" in line and line.split("=", 1)[0].strip().lower() == "worktree":
            value = line.split("=", 1)[1].strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return value
    return None
