"""Small file helpers for what install writes outside the mail store: settings files, the
exclude file, git hooks, the stub. They follow symlinks (a dotfiles repo links them), unlike
the store's own writes."""

import os

from git_korus_mail.store.fsafe import write_new

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Optional


def read_bytes(path: str) -> "Optional[bytes]":
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


_ANY = object()


def write_atomic(path: str, data: bytes, mode: int, expect: "Optional[object]" = _ANY) -> bool:
    """Replace `path` by a sibling temp file and rename. A symlinked file (dotfiles
    repos) is written through, not replaced by a plain file. With `expect` (bytes, or
    None for "absent"), give up and return False when the file changed since it was
    read: Claude Code, or another clone's install, may write the same file."""
    target = os.path.realpath(path)
    d = os.path.dirname(target)
    tmp = os.path.join(d, f".{os.path.basename(target)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    write_new(tmp, data, mode)  # the store's one writer of new files: O_EXCL, exact mode, fsync
    try:
        if expect is not _ANY and read_bytes(target) != expect:
            os.unlink(tmp)
            return False
        os.rename(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def mode_of(path: str, default: int) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return default


def default_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
