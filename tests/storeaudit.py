"""Run git-korus-mail as `python -m git_korus_mail`, with a record of every file in the mail root
that code outside store/ reaches (tests/test_store_boundary.py).

What is seen, in this process: every audit event of CPython that names a path (`open`, listing a
directory, rename, link, unlink, mkdir, ...; sys.addaudithook), and every `os.stat` / `os.lstat`
(what os.path.exists, isfile, isdir and islink call), which raise no audit event. A path given
relative to a directory descriptor is resolved through /proc/self/fd. Who reached it: the innermost
frame of our package's code on the stack. A path under the mail root reached from a frame outside
store/ is a breach and is written, one line each, to the file KORUS_STORE_AUDIT names:
`<event> <path under the root> <module>:<line>`. The one exception is install's own files
(`hooks/` under the root: the stubs, install's record and lock, written by wiring/ and read by the
clients' install modules and doctor), which hold no mail; and `relay/`, reached only by the relay's
own modules (docs/RELAY.md, "On disk").

Not seen: what a child process does (a spawned git, a spawned watcher), and a read through a
descriptor the store opened and handed out (that is the store's interface working).
"""

import os
import sys

LOG = os.environ.pop("KORUS_STORE_AUDIT")
ROOT = os.path.realpath(os.environ.pop("KORUS_STORE_AUDIT_ROOT"))
PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "git_korus_mail") + os.sep
STORE = PKG + "store" + os.sep
# the event, and which of its arguments are paths, each with the argument holding its dir_fd
PATHS = {"open": ((0, None),), "os.listdir": ((0, None),), "os.scandir": ((0, None),),
         "os.rename": ((0, 2), (1, 3)), "os.link": ((0, 2), (1, 3)), "os.symlink": ((1, 2),),
         "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),), "os.utime": ((0, 3),),
         "os.chmod": ((0, 2),), "os.chown": ((0, 3),), "os.truncate": ((0, None),), "os.stat": ((0, 1),),
         "os.lstat": ((0, 1),)}

_busy = [False]
_real_stat, _real_lstat, _real_open, _real_write, _real_close = os.stat, os.lstat, os.open, os.write, os.close


def _resolve(path, dir_fd):
    if isinstance(path, int) or path is None:
        return None  # an open descriptor: whoever opened it was seen then
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    path = os.fspath(path)
    if not os.path.isabs(path):
        if isinstance(dir_fd, int) and dir_fd >= 0:
            try:
                base = os.readlink(f"/proc/self/fd/{dir_fd}")
            except OSError:
                return None
        else:
            base = os.getcwd()
        path = os.path.join(base, path)
    return os.path.normpath(path)


def _who():
    """The innermost frame of our package's code: (its file, its line)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(PKG):
            return name, frame.f_lineno
        frame = frame.f_back
    return None, None


def _check(event, args):
    spec = PATHS.get(event)
    if spec is None or _busy[0]:
        return
    _busy[0] = True
    try:
        for at, fd_at in spec:
            if at >= len(args):
                continue
            path = _resolve(args[at], args[fd_at] if fd_at is not None and fd_at < len(args) else None)
            if path is None:
                continue
            real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
            if not real.startswith(ROOT + os.sep):
                continue  # outside the root, or the root itself (where it is, its own mode: not a file in it)
            where, line = _who()
            if where is None or where.startswith(STORE):
                continue
            inside = os.path.relpath(real, ROOT)
            if inside == "hooks" or inside.startswith("hooks" + os.sep):
                continue  # install's own files (the stubs, its record and lock): no mail

            module = where[len(PKG):-len(".py")].replace(os.sep, ".")
            if inside.startswith("relay" + os.sep) and module.startswith("relay."):
                continue  # the relay's own files, by its own modules: no mail, like hooks/ (docs/RELAY.md)
            fd = _real_open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                _real_write(fd, f"{event} {inside} {module}:{line}\n".encode("utf-8", "backslashreplace"))
            finally:
                _real_close(fd)
    finally:
        _busy[0] = False


def _stat(path, *args, dir_fd=None, **kwargs):
    _check("os.stat", (path, dir_fd))
    return _real_stat(path, *args, dir_fd=dir_fd, **kwargs)


def _lstat(path, *args, dir_fd=None, **kwargs):
    _check("os.lstat", (path, dir_fd))
    return _real_lstat(path, *args, dir_fd=dir_fd, **kwargs)


sys.addaudithook(_check)
os.stat, os.lstat = _stat, _lstat

if __name__ == "__main__":
    if sys.argv[1:2] == ["--as"]:
        # `--as <path in the package> <source file>`: run that source as if it were that module of
        # ours (the audit judges code by the file it comes from): the rail's own mutation test
        with open(sys.argv[3], encoding="utf-8") as f:
            source = f.read()
        exec(compile(source, PKG + sys.argv[2], "exec"), {"__name__": "__probe__"})
    else:
        import runpy
        sys.argv = ["git-korus-mail"] + sys.argv[1:]
        runpy.run_module("git_korus_mail", run_name="__main__", alter_sys=True)
