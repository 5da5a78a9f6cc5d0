"""The executable hooks run: which git-korus-mail to bake in, the stub's text from a client's
template (hooks/<client>-hook.sh), and writing a stub only when it changed (a repeated install
leaves bytes and mtime alone)."""

import json
import os
import shutil
import sys

from git_korus_mail.errors import MailError
from git_korus_mail.wiring import files as wfiles
from git_korus_mail.wiring.record import HOOKS_SUBDIR


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


def template_path(name):
    """The shipped hook template `name` (hooks/), or MailError when this installation lacks it."""
    from git_korus_mail.shipped import shipped_file
    path = shipped_file("hooks", name)
    if path is not None:
        return path
    raise MailError(f"the hook template {name} is missing from this installation; reinstall it")


def _json_inside(text):
    """The inside of a JSON string literal for `text`, ASCII only (the stub adds the quotes)."""
    return json.dumps(text, ensure_ascii=True)[1:-1]


def render(template, helper, repo=None):
    """The stub's text from the hook template `template` for `helper`, with the reinstall advice
    for this machine (core/advice.py) baked in: when the stub needs it, the package may not run
    at all. Every value is quoted here, in Python, so the stub stays valid shell and its fault
    valid JSON whatever it holds."""
    import re
    from git_korus_mail.core import advice
    from git_korus_mail.shell import sh_quote
    with open(template_path(template), encoding="utf-8") as f:
        text = f.read()
    values = {"@HELPER@": sh_quote(helper),
              "@HELPER_JSON@": sh_quote(_json_inside(helper)),
              "@ADVICE_JSON@": sh_quote(_json_inside(advice.advice(helper, repo)))}
    return re.sub("@HELPER_JSON@|@ADVICE_JSON@|@HELPER@", lambda m: values[m.group(0)], text)


def write_executable(path, data, force=False):
    """Write the stub at `path` when absent, different or forced; (path, "current" or "written")."""
    if not force and wfiles.read_bytes(path) == data and os.access(path, os.X_OK):
        return path, "current"
    wfiles.write_atomic(path, data, 0o700)
    return path, "written"


class Stub:
    """One client's stub: `<mail>/hooks/<name>`, rendered from the hook template `template`."""

    def __init__(self, name, template):
        self.name, self.template = name, template

    def path(self, root):
        return os.path.join(root.path, HOOKS_SUBDIR, self.name)

    def render(self, helper, repo=None):
        return render(self.template, helper, repo)

    def write(self, root, helper, force=False, repo=None):
        """Write the stub when absent, different (template, helper or advice changed) or forced."""
        data = self.render(helper, repo).encode("utf-8", "surrogateescape")
        return write_executable(self.path(root), data, force)
