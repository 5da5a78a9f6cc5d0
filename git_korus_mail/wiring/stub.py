"""The executable hooks run: which git-korus-mail to bake in, and writing a stub only when
it changed (a repeated install leaves bytes and mtime alone)."""

import os
import shutil
import sys

from git_korus_mail.errors import MailError
from git_korus_mail.wiring import files as wfiles


def find_helper():
    """Absolute path of the git-korus-mail running now, to bake into the stub.

    The baked path, not PATH, is what the stub runs: Claude Code inside an editor
    often has a PATH without pipx's bin dir. Symlinks are kept (pipx's
    ~/.local/bin link follows upgrades; its target need not)."""
    candidates = []
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0).startswith("git-korus-mail"):
        candidates.append(argv0 if os.sep in argv0 else shutil.which(argv0))
    # `python -m git_korus_mail`: the console script sits beside the interpreter
    candidates.append(os.path.join(os.path.dirname(sys.executable), "git-korus-mail"))
    candidates.append(shutil.which("git-korus-mail"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    from git_korus_mail.core import advice
    raise MailError("cannot find the git-korus-mail executable to wire the hooks to; "
                    f"{advice.advice()}, then run install again")


def write_executable(path, data, force=False):
    """Write the stub at `path` when absent, different or forced; (path, "current" or "written")."""
    if not force and wfiles.read_bytes(path) == data and os.access(path, os.X_OK):
        return path, "current"
    wfiles.write_atomic(path, data, 0o700)
    return path, "written"
