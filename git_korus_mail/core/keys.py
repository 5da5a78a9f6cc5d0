"""The one key function: which box a path's mail goes to.

Sender (`send --to ../web`) and drain (the session's own cwd) both come here, so
they cannot disagree. A box is keyed by the recipient's worktree path — never by
session id (re-minted by /clear) nor by branch or worktree name (nothing keeps
those current). Keys match exactly, never by prefix: a prefix match once queued
mail for a main checkout into a worktree box nobody drained.
"""

import os

from git_korus_mail.core import discover

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Callable, Optional

    from hashlib import _Hash

HASH_HEX = 24  # 96 bits: a collision between two worktree paths is not a practical event
SLUG_MAX = 32


class Key:
    """A box address: the normalized path it stands for and the box directory name."""

    __slots__ = ("path", "name", "location")

    def __init__(self, path: str, name: str, location: "Optional[discover.Location]") -> None:
        self.path = path          # normalized absolute path (worktree root, or the path itself)
        self.name = name          # <slug>-<hash>: the box directory name, also the printable key
        self.location = location  # discover.Location or None (no repository there)

    @property
    def slug(self) -> str:
        return self.name.rsplit("-", 1)[0]

    @property
    def digest(self) -> str:
        return self.name.rsplit("-", 1)[1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Key) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Key({self.name!r}, {self.path!r})"


def locate(path: str, from_env: bool = False) -> "Optional[discover.Location]":
    """discover.Location of a path: the fast pure-Python walk, pygit2 where it is unsure."""
    if not from_env:
        try:
            return discover.fast_locate(path)
        except discover.NotModelled:
            pass
    from git_korus_mail.core import gitrepo  # slow path only: pygit2 costs more than a whole drain
    return gitrepo.locate(path, from_env=from_env)


def key_for(path: str, location: "Optional[discover.Location]" = None, from_env: bool = False) -> Key:
    """The key of the box for `path`: its worktree root, or the path itself in no worktree.

    `location` may be passed when the caller already located `path`."""
    if location is not None and location.worktree:
        return key_of_root(location.worktree, location)  # already resolved: no second realpath walk
    absolute = os.path.realpath(os.path.abspath(path))
    loc = location if location is not None else locate(absolute, from_env=from_env)
    root = loc.worktree if (loc is not None and loc.worktree) else absolute
    return key_of_root(root, loc)


def key_of_root(root: str, location: "Optional[discover.Location]" = None) -> Key:
    """Key of a path already resolved to its worktree root (realpath)."""
    norm = normalize(root)
    return Key(norm, f"{slug(norm)}-{digest(norm)}", location)


def normalize(path: str) -> str:
    """Forward slashes, no trailing separator, case folded only on a case-insensitive filesystem."""
    norm = path.replace("\\", "/")
    if len(norm) > 1:
        norm = norm.rstrip("/") or "/"
    if is_case_insensitive(path):
        norm = norm.casefold()
    return norm


def is_case_insensitive(path: str) -> bool:
    """Probe the filesystem holding `path`: does the same name in other case reach the same file?

    Deciding from the OS name would be wrong both ways (case-sensitive APFS volumes,
    case-insensitive mounts on Linux)."""
    probe = path
    while True:
        head, tail = os.path.split(probe)
        if tail and tail.swapcase() != tail:
            try:
                st = os.lstat(probe)
                other = os.lstat(os.path.join(head, tail.swapcase()))
            except OSError:
                return False
            return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)
        if not tail or head == probe:
            return False
        probe = head


_SLUG_KEEP = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def slug(norm: str) -> str:
    """A readable label for listings only; the digest alone decides identity.

    Runs of anything but [a-z0-9] become one '-' (by hand: `re` costs the hot path)."""
    base = norm.rstrip("/").rsplit("/", 1)[-1].lower().encode("ascii", "ignore").decode()
    out = []
    for ch in base:
        if ch in _SLUG_KEEP:
            out.append(ch)
        elif out and out[-1] != "-":
            out.append("-")
    s = "".join(out).strip("-")
    return (s[:SLUG_MAX].rstrip("-")) or "root"


def digest(norm: str) -> str:
    return _sha256(norm.encode("utf-8", "surrogateescape")).hexdigest()[:HASH_HEX]


def sha256_hex(data: bytes) -> str:
    """The sha256 of `data`, in hex, without loading hashlib (see `_load_sha256`)."""
    return _sha256(data).hexdigest()


def _load_sha256() -> "Callable[[bytes], _Hash]":
    # hashlib loads OpenSSL (milliseconds on a cold start); the builtin module does not
    for mod in ("_sha2", "_sha256"):
        try:
            factory: "Callable[[bytes], _Hash]" = __import__(mod).sha256
            return factory
        except (ImportError, AttributeError):
            continue
    import hashlib
    return hashlib.sha256


_sha256 = _load_sha256()
