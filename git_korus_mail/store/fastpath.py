"""The fast path's stamp: what lets a client's hook stub answer a tool call in POSIX sh, without
starting Python, when nothing is new for its launch (docs/HOOKS.md, "The fast path").

`<mail>/fast/<key>` is a symlink to a directory `<key>.<random>` written once, complete before
the symlink names it:

    inbox -> the box's inbox (absolute)      cwd -> the directory the event ran in (absolute)
    seen     an empty file whose mtime is the inbox's, taken before the drain listed the inbox
             and found nothing this launch had not been shown
    names/   one empty file per name the inbox held then (every one shown to the launch or
             skipped by it): `<id>.json`

A stamp may also hold `box` (a symlink to the box's directory): the drain found, besides nothing
new, nothing a prompt or a Stop would do for the launch (no message shown and not consumed, no
pending fault; docs/HOOKS.md, "A turn with nothing new"). Only such a stamp lets the stub answer
a prompt or a Stop, writing the session's turn record (store/presence.py) itself.

A box that has no inbox yet (its worktree never got mail) is stamped with `inbox` and `cwd`
alone: `inbox` then names a directory that does not exist, and as long as it does not, nothing is
queued there (a publication makes the inbox before it links the message in, and nothing removes
an inbox).

`<key>` is the client's name for the launch, one the stub can spell from its environment alone
(Claude Code: `<session id>@<pid>`). The stub trusts a stamp only when `cwd` is its own working
directory, the inbox's mtime still equals `seen`'s, and every name in the inbox is in `names/`:
any change to the inbox since (a message linked in, one consumed, expired or moved) and the
event runs Python as before. Or when `cwd` is its own working directory and `inbox` still names
nothing: no inbox, no mail, whatever the clock says.

Why `names/` as well: an mtime can be set back (`touch -d`, a restore with `cp -a` or
`rsync -a`), and the inbox's ctime, which cannot, is out of reach of sh's `test`. A glob of the
inbox and one `test -e` per name are builtins: a new message's name is not in `names/`
whatever the directory's times say (issue 22 item 8; docs/HOOKS.md, "The fast path").

Why equality of mtimes is enough: a stamp is written only when the inbox's mtime lies MARGIN
whole seconds before the look, so any later change to the inbox carries a later second, and even
a shell that compares whole seconds sees it. A stamp is removed at every consume and end phase;
one that cannot be read, or names another directory, only costs a Python run.
"""

import os

from git_korus_mail.store.layout import FAST_DIR

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import List, Optional

    from git_korus_mail.store.files import Box, MailRoot
    from git_korus_mail.store.fsafe import Dir

NAMES = "names"  # the stamp's listing of the inbox (see above)
SWEEP = 8  # other launches' stamps judged per opening show
MARGIN = 2  # whole seconds between the inbox's last change and the look (see above)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@")


def valid_key(key: "Optional[str]") -> bool:
    """A key the stub can look up as it is: one file name of [A-Za-z0-9._-@], not dot-led."""
    return (isinstance(key, str) and 0 < len(key) <= 200 and key[0] != "."
            and all(c in _KEY_CHARS for c in key))


def may_stamp(inbox_mtime_ns: int, looked_at: float) -> bool:
    """Whether an inbox last changed at `inbox_mtime_ns` may be stamped by a look at `looked_at`:
    only when its mtime's second lies MARGIN whole seconds before the look's (see above)."""
    return inbox_mtime_ns // 1_000_000_000 + MARGIN <= int(looked_at)


def write(root: "MailRoot", box: "Box", key: str, inbox_mtime_ns: "Optional[int]", cwd: str,
          names: "List[str]", turn: bool = False) -> None:
    """Stamp `key`: nothing new in `box` for its launch as of `inbox_mtime_ns`, seen from `cwd`,
    where the inbox held `names` (each one shown to the launch or skipped by it); with
    `inbox_mtime_ns` None, the box had no inbox (no `seen`, no `names/`: see above); `turn`: the
    `box` link too (see above). OSError and MailError when it cannot be written; a stamp not
    written only costs Python runs."""
    fast = root.dir.ensure_sub(FAST_DIR)
    gen = f"{key}.{os.urandom(6).hex()}"
    os.mkdir(gen, 0o700, dir_fd=fast.fd)
    os.symlink(box.path_of("inbox"), f"{gen}/inbox", dir_fd=fast.fd)
    os.symlink(cwd, f"{gen}/cwd", dir_fd=fast.fd)
    if turn:
        os.symlink(box.path_of(""), f"{gen}/box", dir_fd=fast.fd)
    if inbox_mtime_ns is not None:
        os.mkdir(f"{gen}/{NAMES}", 0o700, dir_fd=fast.fd)
        for name in names:
            os.close(os.open(f"{gen}/{NAMES}/{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                             dir_fd=fast.fd))
        os.close(os.open(f"{gen}/seen", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                         dir_fd=fast.fd))
        os.utime(f"{gen}/seen", ns=(inbox_mtime_ns, inbox_mtime_ns), dir_fd=fast.fd, follow_symlinks=False)
    from git_korus_mail import crash
    crash.point("stamp:staged")
    link = f"{gen}.link"
    os.symlink(gen, link, dir_fd=fast.fd)
    os.replace(link, key, src_dir_fd=fast.fd, dst_dir_fd=fast.fd)  # atomic: the old stamp or the new one
    crash.point("stamp:linked")
    _remove_generations(fast, key, keep=gen)


def current(root: "MailRoot", box: "Box", key: str, inbox_mtime_ns: "Optional[int]", cwd: str,
            names: "List[str]", turn: bool = False) -> bool:
    """Whether `key`'s stamp already says exactly this (a rewrite would change nothing)."""
    base = os.path.join(root.path, FAST_DIR, key)
    try:
        if os.path.lexists(os.path.join(base, "box")) != turn:
            return False
        if inbox_mtime_ns is None:  # no inbox: the stamp names where it would be, and holds no `seen`
            return (os.readlink(os.path.join(base, "inbox")) == box.path_of("inbox")
                    and not os.path.lexists(os.path.join(base, "seen"))
                    and os.path.samestat(os.stat(os.path.join(base, "cwd")), os.stat(cwd)))
        return (os.stat(os.path.join(base, "seen")).st_mtime_ns == inbox_mtime_ns
                and os.path.samestat(os.stat(os.path.join(base, "inbox")), os.stat(box.path_of("inbox")))
                and os.path.samestat(os.stat(os.path.join(base, "cwd")), os.stat(cwd))
                and sorted(os.listdir(os.path.join(base, NAMES))) == sorted(names))
    except OSError:
        return False


def sweep(root: "MailRoot", limit: int = SWEEP) -> None:
    """Remove the stamps of a few launches whose process no longer runs (killed ones: a launch
    that ends removes its own). Keys without a `@<pid>` tail are left alone."""
    fast = root.dir.open_sub(FAST_DIR)
    if fast is None:
        return
    from git_korus_mail.store.launch import process_runs  # small, but only with stamps to judge
    try:
        judged = 0
        for name in fast.names():
            head, sep, pid = name.rpartition("@")
            if not sep or not head or not pid.isdigit() or judged >= limit:
                continue
            judged += 1
            if not process_runs(int(pid), None)[0]:  # the one liveness rule: a zombie has ended
                clear(root, name)
    finally:
        fast.close()


def clear(root: "MailRoot", key: str) -> None:
    """Remove `key`'s stamp (its next tool call runs Python). Quiet when there is none."""
    fast = root.dir.open_sub(FAST_DIR)
    if fast is None:
        return
    try:
        try:
            os.unlink(key, dir_fd=fast.fd)
        except FileNotFoundError:
            pass
        _remove_generations(fast, key, keep=None)
    finally:
        fast.close()


def _remove_generations(fast: "Dir", key: str, keep: "Optional[str]") -> None:
    """Remove `key`'s stamp directories other than `keep` (a killed writer's, an old one)."""
    prefix = key + "."
    for name in fast.names():
        if name.startswith(prefix) and name != keep:
            _remove(fast, name)


def _remove(fast: "Dir", name: str) -> None:
    try:
        os.unlink(name, dir_fd=fast.fd)  # a `.link` left by a killed writer, or a junk file
        return
    except IsADirectoryError:
        pass
    except FileNotFoundError:
        return
    except OSError:
        pass
    for entry in ("inbox", "cwd", "seen", "box"):
        try:
            os.unlink(f"{name}/{entry}", dir_fd=fast.fd)
        except OSError:
            pass
    try:
        listed = os.listdir(os.path.join(fast.path, name, NAMES))
    except OSError:
        listed = []
    for entry in listed:
        try:
            os.unlink(f"{name}/{NAMES}/{entry}", dir_fd=fast.fd)
        except OSError:
            pass
    try:
        os.rmdir(f"{name}/{NAMES}", dir_fd=fast.fd)
    except OSError:
        pass
    try:
        os.rmdir(name, dir_fd=fast.fd)
    except OSError:
        pass  # something else inside: left alone (only costs a little space)
