"""The clone's worktrees, read from its common dir in pure Python: what `send`, `list` and `who`
need without importing pygit2 (which costs a `send` more than all of its own work).

`fast_list` reads exactly the files libgit2 reads for `Repository(common_dir)` with its
`list_worktrees()` / `lookup_worktree()`: the common dir's `config` (core.bare, core.worktree)
and each `worktrees/<id>/` admin dir (`gitdir`, `commondir`, `HEAD`, `locked`). It answers what
pygit2 would answer, or raises `discover.NotModelled` where it cannot prove that (config
includes or extensions, a `gitdir` file of an unusual shape, a main worktree that nothing
records, another user's repository, ...): the caller then asks pygit2 (`gitrepo.list_worktrees`).
It never guesses. tests/test_worktrees.py holds it to pygit2 and to `git worktree list` on every
layout of the discovery matrix.
"""

import os

from git_korus_mail.core.discover import NotModelled

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple


class Worktree:
    """One worktree of the clone as `git worktree list` knows it."""

    __slots__ = ("path", "name", "branch", "head", "is_main", "prunable", "admin_dir")

    def __init__(self, path: str, name: str, branch: "Optional[str]", head: str, is_main: bool,
                 prunable: bool, admin_dir: str) -> None:
        self.path = path
        self.name = name
        self.branch = branch
        self.head = head
        self.is_main = is_main
        self.prunable = prunable
        self.admin_dir = admin_dir

    def __repr__(self) -> str:
        return f"Worktree({self.path!r}, name={self.name!r}, branch={self.branch!r}, prunable={self.prunable})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Worktree):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable (Clone corrects a main's path)


def read_head(git_dir: str) -> "Tuple[Optional[str], str]":
    """(branch or None, head text) from a git dir's HEAD file; cheap, no repository open."""
    try:
        with open(os.path.join(git_dir, "HEAD"), "rb") as f:
            text = f.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None, ""
    if text.startswith("ref: "):
        ref = text[5:].strip()
        return (ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else ref), text
    return None, text


def fast_list(common_dir: str, own_main: "Optional[str]" = None) -> "List[Worktree]":
    """Main worktree first (absent for a bare clone), then linked ones in name order: what
    `gitrepo.list_worktrees` returns, or NotModelled. `common_dir` is a realpath.

    `own_main`: the main worktree's root when the caller stands in it and the fast walk proved
    it (it followed the `.git` file there to this common dir). Only then is a main worktree
    that its git dir does not record (made with --separate-git-dir) known rather than guessed."""
    uid = os.geteuid()
    try:
        st = os.stat(common_dir)
    except OSError:
        raise NotModelled("common dir not accessible") from None
    if st.st_uid != uid:
        raise NotModelled("owned by another user")  # libgit2 refuses it: pygit2 gives the error
    core = _core_config(common_dir)
    bare = _git_bool(core["bare"]) if "bare" in core else False
    out: List[Worktree] = []
    parent: Optional[str] = None  # libgit2's workdir of the common dir: a linked worktree's "parent"
    if not bare:
        if "worktree" in core:
            parent = _configured_worktree(common_dir, core["worktree"])
        else:
            parent = os.path.dirname(common_dir)  # libgit2's rule: the directory holding the git dir
            if own_main is None and os.path.basename(common_dir) != ".git":
                # --separate-git-dir: nothing in the git dir says where its worktree is, and
                # pygit2's guess (the git dir's parent) is wrong; only the caller standing in
                # it knows (own_main), and Clone corrects pygit2's answer the same way
                raise NotModelled("main worktree recorded nowhere")
        main = own_main if own_main is not None else parent
        branch, head = read_head(common_dir)
        out.append(Worktree(main, os.path.basename(main), branch, head, True, False, common_dir))
    for name in _admin_names(common_dir):
        wt = _linked(common_dir, name, parent)
        if wt is not None:
            out.append(wt)
    return out


def _admin_names(common_dir: str) -> "List[str]":
    try:
        names = os.listdir(os.path.join(common_dir, "worktrees"))
    except FileNotFoundError:
        return []
    except OSError:
        raise NotModelled("worktrees/ not readable") from None
    for name in names:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise NotModelled("admin dir name is not UTF-8") from None
    return sorted(names)


def _is_admin_dir(path: str) -> bool:
    """libgit2's is_worktree_dir: commondir, gitdir and HEAD are files there."""
    return all(os.path.isfile(os.path.join(path, f)) for f in ("commondir", "gitdir", "HEAD"))


def _read_link(admin: str, file: str) -> str:
    """libgit2's worktree read_link: the file's text without trailing whitespace, a relative
    one taken from the admin dir."""
    try:
        with open(os.path.join(admin, file), "rb") as f:
            raw = f.read(1 << 16)
    except OSError:
        raise NotModelled(f"{file} not readable") from None
    try:
        text = raw.decode("utf-8").rstrip()
    except UnicodeDecodeError:
        raise NotModelled(f"{file} is not UTF-8") from None
    if not text or "\n" in text or "\0" in text:
        raise NotModelled(f"{file} is not one path")
    return text if text.startswith("/") else os.path.normpath(os.path.join(admin, text))


def _linked(common_dir: str, name: str, parent: "Optional[str]") -> "Optional[Worktree]":
    admin = os.path.join(common_dir, "worktrees", name)
    if not os.path.isdir(admin) or not _is_admin_dir(admin):
        return None  # libgit2 lists no such entry (and lookup_worktree would refuse it)
    gitlink = _read_link(admin, "gitdir")
    if not gitlink.endswith("/.git") or gitlink.endswith("//.git"):
        # git writes `<worktree>/.git`; another shape makes libgit2's dirname and ours differ
        raise NotModelled("gitdir is not <worktree>/.git")
    if os.path.realpath(_read_link(admin, "commondir")) != common_dir:
        raise NotModelled("admin dir names another common dir")
    path = os.path.dirname(gitlink)
    # libgit2's git_worktree_is_prunable(wt, NULL): not locked, and not valid (its parent, its
    # common dir or its directory is gone: the admin dir itself was checked above)
    locked = os.path.exists(os.path.join(admin, "locked"))
    valid = (parent is None or os.path.exists(parent)) and os.path.exists(path)
    real = os.path.realpath(path) if os.path.exists(path) else os.path.normpath(path)
    branch, head = read_head(admin)
    return Worktree(real, name, branch, head, False, not locked and not valid, admin)


def _configured_worktree(common_dir: str, value: "Optional[str]") -> str:
    """core.worktree taken from the git dir, as libgit2 resolves it (a real, existing directory)."""
    if not value:
        raise NotModelled("core.worktree without a path")
    path = os.path.realpath(os.path.join(common_dir, os.path.expanduser(value)))
    if not os.path.isdir(path):
        raise NotModelled("core.worktree is no directory")  # libgit2 fails to open the repository
    return path


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0", "")


def _git_bool(value: "Optional[str]") -> bool:
    if value is None:
        return True  # a key without `=` is true in git's config
    low = value.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise NotModelled("core.bare is no plain boolean")


def _global_configs() -> "List[str]":
    """The config files libgit2 reads besides the repository's own (global, XDG, system)."""
    home = os.environ.get("HOME")
    files = ["/etc/gitconfig"]
    if home:
        files.append(os.path.join(home, ".gitconfig"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    if xdg:
        files.append(os.path.join(xdg, "git", "config"))
    return files


def _core_config(common_dir: str) -> "Dict[str, Optional[str]]":
    """core.bare and core.worktree as libgit2 would read them for this repository."""
    core = _parse(os.path.join(common_dir, "config"), repo=True)
    if core is None:
        raise NotModelled("no readable config")
    for path in _global_configs():
        other = _parse(path, repo=False)
        if other and ("bare" in other or "worktree" in other):
            raise NotModelled(f"core.bare or core.worktree set in {path}")
    return core


def _parse(path: str, repo: bool) -> "Optional[Dict[str, Optional[str]]]":
    """The [core] keys bare and worktree of one config file ({} when it sets neither; None
    when it cannot be read). NotModelled for anything a plain reading could get wrong: an
    include (its file may set them), an extension (libgit2 may refuse the repository or read
    config.worktree), a continued line or a section header we cannot read."""
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20)
    except FileNotFoundError:
        return None
    except OSError:
        raise NotModelled(f"{path} not readable") from None
    low = data.lower()
    if repo and (b"include" in low or b"extensions" in low):
        raise NotModelled("config has includes or extensions")
    if b"bare" not in low and b"worktree" not in low:
        return {}
    out: "Dict[str, Optional[str]]" = {}
    section = ""
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            end = line.find("]")
            if end < 0:
                raise NotModelled("unreadable section header")
            section = line[1:end].strip().lower()
            line = line[end + 1:].strip()
            if not line or line[0] in "#;":
                continue
        if section != "core":
            continue
        if line.endswith("\\"):
            raise NotModelled("continued line in [core]")
        key, eq, value = line.partition("=")
        key = key.strip().lower()
        if key not in ("bare", "worktree"):
            continue
        out[key] = _value(value) if eq else None
    return out


def _value(text: str) -> str:
    """A config value: comments cut, quotes removed; escapes are NotModelled."""
    text = text.strip()
    if "\\" in text:
        raise NotModelled("escaped config value")
    out, quoted = [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    if quoted:
        raise NotModelled("unterminated quote")
    return "".join(out).strip()
