"""Filesystem operations that never follow a symlink inside the mail root.

Every directory of the store is opened once as a file descriptor
(O_DIRECTORY | O_NOFOLLOW) and all work inside it goes through `dir_fd`, so a
symlink planted in place of a box, an inbox or a message is refused rather than
followed out of `.git`. Permissions are set explicitly with fchmod, because the
umask of whoever runs a hook is not ours to trust.
"""

import errno
import os
import stat

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Optional

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.errors import MailError

DIR_MODE = 0o700
FILE_MODE = 0o600
SMALL_FILE = 64 * 1024  # the size limit of every record the store writes (receipts, claims, notices...)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def check_dir_stat(st: os.stat_result, where: str) -> None:
    """Refuse a directory that is not ours alone: a symlink, another owner, or writable by others."""
    if stat.S_ISLNK(st.st_mode):
        raise MailError(f"{where} is a symlink; refusing to follow it")
    if not stat.S_ISDIR(st.st_mode):
        raise MailError(f"{where} is not a directory")
    if st.st_uid != os.geteuid():
        raise MailError(f"{where} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()})")
    if st.st_mode & 0o022:
        raise MailError(f"{where} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}); "
                        f"run: chmod go-w '{where}'")


class Dir:
    """An open directory of the store; names passed to its methods are single components."""

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    # -- opening -----------------------------------------------------------
    @classmethod
    def open_path(cls, path: str, create: bool = False) -> "Dir":
        """Open an absolute directory path; create it (0700) when asked."""
        if create:
            try:
                os.mkdir(path, DIR_MODE)
                os.chmod(path, DIR_MODE)
            except FileExistsError:
                pass
        try:
            fd = os.open(path, _DIR_FLAGS)
        except OSError as exc:
            raise _dir_error(exc, path) from None
        d = cls(fd, path)
        check_dir_stat(os.fstat(fd), path)
        return d

    def ensure_sub(self, name: str) -> "Dir":
        """Open a child directory, creating it (0700) when absent; never through a symlink.
        Writers only: a read uses `open_sub`, which never creates."""
        try:
            os.mkdir(name, DIR_MODE, dir_fd=self.fd)
        except FileExistsError:
            pass
        else:
            # before the open: a umask of 0477 leaves the owner no read bit (0300), and
            # the open below would then fail for anyone but root. The name is the one
            # just made in a directory only we may write; the open still refuses a symlink.
            os.chmod(name, DIR_MODE, dir_fd=self.fd)
        return self.sub_existing(name)

    def sub_existing(self, name: str) -> "Dir":
        path = os.path.join(self.path, name)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except PermissionError as exc:
            fd = self._reopen_unreadable(name, exc, path)
        except OSError as exc:
            raise _dir_error(exc, path) from None
        d = Dir(fd, path)
        try:
            check_dir_stat(os.fstat(fd), path)
        except MailError:
            d.close()
            raise
        return d

    def _reopen_unreadable(self, name: str, exc: OSError, path: str) -> int:
        """Our own directory that an old run under umask 0477 left 0300: made 0700, opened."""
        try:
            st = self.lstat(name)
        except OSError:
            raise _dir_error(exc, path) from None
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise _dir_error(exc, path) from None
        try:
            os.chmod(name, DIR_MODE, dir_fd=self.fd)
            return os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except OSError as again:
            raise _dir_error(again, path) from None

    def open_sub(self, name: str) -> "Optional[Dir]":
        """The child directory, or None when it does not exist (a normal state for new boxes).
        Never creates: what reads use."""
        try:
            return self.sub_existing(name)
        except FileNotFoundError:
            return None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Dir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown; nothing to report to
            pass

    # -- reading -----------------------------------------------------------
    def names(self) -> "list[str]":
        """Entry names, unsorted. O(entries) and no stat per entry."""
        with os.scandir(self.fd) as it:
            return [e.name for e in it]

    def lstat(self, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return True
        except FileNotFoundError:
            return False

    def read_regular(self, name: str, limit: int) -> "tuple[bytes, os.stat_result]":
        """Read a regular file without following symlinks or blocking on a FIFO.

        Returns (bytes, stat). Raises NotRegular for anything that is not a plain file
        (NotOwned for one of another user's) and TooLarge when it holds more than `limit` bytes.
        """
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                         dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotRegular("symlink") from None
            if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EOPNOTSUPP):
                # a socket or device node: open() fails before fstat could say so
                raise NotRegular(_kind(self.lstat(name).st_mode)) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegular(_kind(st.st_mode))
            if st.st_uid != os.geteuid():
                raise NotOwned(st.st_uid)  # like a directory of another user's: refused
            if st.st_size > limit:
                raise TooLarge(st.st_size)
            chunks = []
            left = limit + 1
            while left > 0:
                b = os.read(fd, min(left, 1 << 20))
                if not b:
                    break
                chunks.append(b)
                left -= len(b)
            data = b"".join(chunks)
            if len(data) > limit:
                raise TooLarge(len(data))
            return data, st
        finally:
            os.close(fd)

    def read_json(self, name: str, limit: int = SMALL_FILE) -> "Any":
        """A small record of ours, parsed; None when it is absent, not a plain file of ours,
        too large, or not JSON. Reports read what they can: one bad record costs only itself."""
        try:
            data, _ = self.read_regular(name, limit)
            return json.loads(data)
        except (OSError, ValueError, NotRegular, TooLarge):
            return None

    # -- writing -----------------------------------------------------------
    def create_exclusive(self, name: str, data: bytes, sync: bool = True) -> None:
        """Create `name` holding `data`; FileExistsError when it exists. Not atomic in content:
        use it for files whose readers tolerate a short read only where noted (claims use tmp+link)."""
        write_new(name, data, FILE_MODE, dir_fd=self.fd, sync=sync)

    def create_staged(self, name: str, data: bytes, staging: "Dir", tag: str, sync: bool = True,
                      mtime: "Optional[float]" = None) -> None:
        """Create `name` here holding `data`, complete before it is visible: written in the
        `staging` dir, then hard-linked into place. A link never replaces, so FileExistsError
        when the name exists, exactly like O_EXCL; unlike O_EXCL, a process killed mid-write
        leaves no torn file here (only a staging file, swept with tmp/). Claims, receipts and
        display markers are made this way: their readers take a torn file for no proof.
        `mtime`: the file's modification time, set before it is visible (a receipt's is the
        time of its consume by the store's own clock: store/retention.py)."""
        tmp = f"{tag}.{name}.{os.getpid()}.{os.urandom(4).hex()}"
        staging.create_exclusive(tmp, data, sync=sync)
        if mtime is not None:
            staging.set_mtime(tmp, mtime)
        try:
            staging.link_to(tmp, self, name)
        finally:
            staging.unlink_quiet(tmp)

    def set_mtime(self, name: str, t: float) -> None:
        """Set `name`'s access and modification times to `t` (the entry itself, never a link's
        target). A store's own stamp on a file: what retention dates mail by (store/retention.py)."""
        os.utime(name, (t, t), dir_fd=self.fd, follow_symlinks=False)

    def write_replace(self, name: str, data: bytes, staging: "Dir") -> None:
        """Atomically replace `name`: write a file in the `staging` dir (the mail root's tmp/,
        swept after 36 h, so a writer killed mid-way leaves nothing here), then rename it over.

        For state that is rewritten whole, such as presence; never for messages."""
        tmp = f"replace.{name}.{os.getpid()}.{os.urandom(4).hex()}"
        write_new(tmp, data, FILE_MODE, dir_fd=staging.fd, sync=False)
        try:
            os.rename(tmp, name, src_dir_fd=staging.fd, dst_dir_fd=self.fd)
        except BaseException:
            staging.unlink_quiet(tmp)
            raise

    def link_to(self, name: str, other: "Dir", other_name: str) -> None:
        """Hard-link self/name to other/other_name; FileExistsError when the target exists.
        A link never replaces, which is what makes publication and claims exclusive."""
        os.link(name, other_name, src_dir_fd=self.fd, dst_dir_fd=other.fd, follow_symlinks=False)

    def rename_to(self, name: str, other: "Dir", other_name: str) -> None:
        os.rename(name, other_name, src_dir_fd=self.fd, dst_dir_fd=other.fd)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def unlink_quiet(self, name: str) -> bool:
        """Unlink when present; True when this call removed it."""
        try:
            os.unlink(name, dir_fd=self.fd)
            return True
        except FileNotFoundError:
            return False

    def fsync(self) -> None:
        os.fsync(self.fd)


class NotRegular(Exception):
    """The name is a symlink, FIFO, directory, socket or device, not a message file."""


class NotOwned(NotRegular):
    """The file belongs to another user (args[0]: its uid). A NotRegular, so every reader
    that refuses a FIFO or a directory refuses it too."""

    def __str__(self) -> str:
        return f"owned by uid {self.args[0]}, not by you"


class TooLarge(Exception):
    """The file is larger than the reader accepts."""


def write_new(path: str, data: bytes, mode: int, dir_fd: "Optional[int]" = None, sync: bool = True) -> None:
    """Create `path` (relative to `dir_fd` when given) holding `data`, with exactly `mode`
    whatever the umask; FileExistsError when it exists, never through a symlink. On any
    failure the partial file is removed. The one writer of new files: the store's records
    (Dir.create_exclusive, create_staged, write_replace) and the staged files that install
    and the worktree token rename or link into place (wiring.files, wtident)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                 0o600, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(path, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "special file"


def _dir_error(exc: OSError, path: str) -> Exception:
    if exc.errno == errno.ELOOP:
        return MailError(f"{path} is a symlink; refusing to follow it")
    if exc.errno == errno.ENOTDIR:
        return MailError(f"{path} is not a directory")
    if isinstance(exc, FileNotFoundError):
        return exc
    return MailError(f"cannot open {path}: {exc.strerror}")
