"""The relay's own files, `<common>/mail/relay/` (docs/RELAY.md, "On disk"), through the store.

The store owns every byte under mail/ (docs/STORE.md): the relay (relay/local.py) names its
files, and this module opens, writes, lists and removes them, with the store's primitives
(fsafe.Dir: no symlink followed, files of ours only, 0600/0700). It is not mail state: no box
is in it, and no reader of mail looks at it. A file that must not tear (an outbox entry, a
received marker, the directory) is written whole in relay/tmp/ and then linked (exclusive) or
renamed (replace) into place, and synced, as the store publishes a message.
"""

import os
import shutil

from git_korus_mail.store.fsafe import Dir, write_new
from git_korus_mail.store.layout import RELAY_DIR, mail_root_path

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, List, Optional

RELAY = RELAY_DIR
STAGING = "tmp"
SMALL = 1024 * 1024
FILE_MODE = 0o600


def path(common_dir: str) -> str:
    """Where it is, for the words a person reads (never opened by this name)."""
    return os.path.join(mail_root_path(common_dir), RELAY)


def exists(common_dir: str, name: str) -> bool:
    """One stat: is relay/<name> there (a clone with no remote pays only this)."""
    return os.path.exists(os.path.join(path(common_dir), name))


def _open(common_dir: str, create: bool) -> "Optional[Dir]":
    try:
        root = Dir.open_path(mail_root_path(common_dir), create=create)
    except FileNotFoundError:
        return None
    try:
        return root.ensure_sub(RELAY) if create else root.open_sub(RELAY)
    finally:
        root.close()


def _sub(d: Dir, sub: str, create: bool) -> "Optional[Dir]":
    if not sub:
        return Dir(os.dup(d.fd), d.path)
    return d.ensure_sub(sub) if create else d.open_sub(sub)


def ensure(common_dir: str, subs: "List[str]") -> None:
    d = _open(common_dir, create=True)
    assert d is not None  # created, or raised
    try:
        for sub in subs:
            d.ensure_sub(sub).close()
    finally:
        d.close()


def write(common_dir: str, sub: str, name: str, data: bytes, replace: bool = False) -> bool:
    """`data` at relay/<sub>/<name> (`sub` "" for relay/ itself), never torn, synced. Exclusive
    unless `replace`: False when the name exists already (the first writer won)."""
    d = _open(common_dir, create=True)
    assert d is not None
    try:
        target = _sub(d, sub, create=True)
        staging = d.ensure_sub(STAGING)
        assert target is not None
        try:
            if replace:
                tmp = f"replace.{name}.{os.getpid()}.{os.urandom(4).hex()}"
                write_new(tmp, data, FILE_MODE, dir_fd=staging.fd, sync=True)
                try:
                    staging.rename_to(tmp, target, name)
                except BaseException:
                    staging.unlink_quiet(tmp)
                    raise
            else:
                try:
                    target.create_staged(name, data, staging, "relay", sync=True)
                except FileExistsError:
                    return False
            target.fsync()
            return True
        finally:
            target.close()
            staging.close()
    finally:
        d.close()


def read(common_dir: str, sub: str, name: str) -> "Optional[Any]":
    """A small JSON file of the relay's, or None when absent or damaged (read as absent)."""
    d = _open(common_dir, create=False)
    if d is None:
        return None
    try:
        target = _sub(d, sub, create=False)
        if target is None:
            return None
        try:
            return target.read_json(name, SMALL)
        finally:
            target.close()
    finally:
        d.close()


def names(common_dir: str, sub: str) -> "List[str]":
    d = _open(common_dir, create=False)
    if d is None:
        return []
    try:
        target = _sub(d, sub, create=False)
        if target is None:
            return []
        try:
            return target.names()
        finally:
            target.close()
    finally:
        d.close()


def remove(common_dir: str, sub: str, name: str) -> None:
    d = _open(common_dir, create=False)
    if d is None:
        return
    try:
        target = _sub(d, sub, create=False)
        if target is not None:
            try:
                target.unlink_quiet(name)
            finally:
                target.close()
    finally:
        d.close()


def open_fd(common_dir: str, name: str, flags: int, make_dir: bool = True) -> int:
    """A descriptor on relay/<name> (the relay's lock, its log), never through a symlink;
    FileNotFoundError when it is absent and `flags` does not create it, or when the directory
    is absent and `make_dir` is False (the lock: a relay never brings back a removed remote)."""
    d = _open(common_dir, create=bool(flags & os.O_CREAT) and make_dir)
    if d is None:
        raise FileNotFoundError(path(common_dir))
    try:
        return os.open(name, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), FILE_MODE, dir_fd=d.fd)
    finally:
        d.close()


def remove_all(common_dir: str) -> None:
    """`remote remove`: the relay's directory, whole."""
    shutil.rmtree(path(common_dir), ignore_errors=True)
