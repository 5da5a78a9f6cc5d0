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

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from git_korus_mail.store.files import MailRoot


def find_helper() -> str:
    """Absolute path of the git-korus-mail running now, to bake into the stub.

    The baked path, not PATH, is what the stub runs: Claude Code inside an editor
    often has a PATH without pipx's bin dir. Symlinks are kept (pipx's
    ~/.local/bin link follows upgrades; its target need not)."""
    candidates: "List[Optional[str]]" = []
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


def template_path(name: str) -> str:
    """The shipped hook template `name` (hooks/), or MailError when this installation lacks it."""
    from git_korus_mail.shipped import shipped_file
    path = shipped_file("hooks", name)
    if path is not None:
        return path
    raise MailError(f"the hook template {name} is missing from this installation; reinstall it")


def _json_inside(text: str) -> str:
    """The inside of a JSON string literal for `text`, ASCII only (the stub adds the quotes)."""
    return json.dumps(text, ensure_ascii=True)[1:-1]


def fast_start(helper: str) -> "Tuple[str, List[str]]":
    """(interpreter, directories) for the stub's `python -S` start of the drain (docs/HOOKS.md,
    "Starting Python"): the interpreter the helper's #! line names, and where that interpreter
    finds this package and the libraries it uses, the package's own directory first.

    Known only when the helper runs on this very interpreter (install runs as the helper, so it
    does); otherwise ("", []) and the stub starts the helper as it is. The stub compares the
    helper's #! line with the interpreter at every run, so a reinstall onto another Python
    falls back by itself, and the script checks the directories before it trusts them."""
    import importlib.util
    try:
        with open(helper, "rb") as f:
            first = f.readline(4097)
            second = f.readline(4097)
    except OSError:
        return "", []
    if second.rstrip(b"\n") != FAST_START_LINE:
        return "", []  # not our script, or one from before it knew the -S start
    line = first[2:].rstrip(b"\n").decode("utf-8", "surrogateescape")
    if (not first.startswith(b"#!") or not first.endswith(b"\n") or not line.startswith("/")
            or any(c.isspace() for c in line)):
        return "", []  # pip's /bin/sh trampoline (a long or spaced path), or arguments: started as is
    try:
        if not os.path.samefile(line, sys.executable):
            return "", []
    except OSError:
        return "", []
    dirs: "List[str]" = []
    for name in ("git_korus_mail",) + LIBRARIES:
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        if spec.submodule_search_locations:
            where = os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))
        elif spec.origin and os.path.isabs(spec.origin):
            where = os.path.dirname(spec.origin)
        else:
            continue  # built in: no directory to name
        if where not in dirs:
            dirs.append(where)
    if not dirs or any(os.pathsep in d for d in dirs):
        return "", []
    return line, dirs


FAST_START_LINE = b"# git-korus-mail fast-start=1"  # scripts/git-korus-mail's second line; the stubs test it too

# what the package imports beyond the standard library (pyproject's dependencies, and pygit2's
# compiled half): the drain's -S start must find each where the helper's own Python does
LIBRARIES = ("portalocker", "colorama", "pygit2", "_cffi_backend", "cffi", "docopt")


def render(template: str, helper: str, repo: "Optional[str]" = None) -> str:
    """The stub's text from the hook template `template` for `helper`, with the reinstall advice
    for this machine (core/advice.py) baked in: when the stub needs it, the package may not run
    at all. Every value is quoted here, in Python, so the stub stays valid shell and its fault
    valid JSON whatever it holds."""
    import re
    from git_korus_mail.core import advice
    from git_korus_mail.shell import sh_quote
    with open(template_path(template), encoding="utf-8") as f:
        text = f.read()
    python, dirs = fast_start(helper)
    values = {"@HELPER@": sh_quote(helper),
              "@PYTHON@": sh_quote(python),
              "@PYPATH@": sh_quote(os.pathsep.join(dirs)),
              "@HELPER_JSON@": sh_quote(_json_inside(helper)),
              "@ADVICE_JSON@": sh_quote(_json_inside(advice.advice(helper, repo)))}
    return re.sub("@HELPER_JSON@|@ADVICE_JSON@|@HELPER@|@PYTHON@|@PYPATH@", lambda m: values[m.group(0)], text)


def write_executable(path: str, data: bytes, force: bool = False) -> "Tuple[str, str]":
    """Write the stub at `path` when absent, different or forced; (path, "current" or "written")."""
    if not force and wfiles.read_bytes(path) == data and os.access(path, os.X_OK):
        return path, "current"
    wfiles.write_atomic(path, data, 0o700)
    return path, "written"


class Stub:
    """One client's stub: `<mail>/hooks/<name>`, rendered from the hook template `template`."""

    def __init__(self, name: str, template: str) -> None:
        self.name, self.template = name, template

    def path(self, root: "MailRoot") -> str:
        return os.path.join(root.path, HOOKS_SUBDIR, self.name)

    def render(self, helper: str, repo: "Optional[str]" = None) -> str:
        return render(self.template, helper, repo)

    def write(self, root: "MailRoot", helper: str, force: bool = False,
              repo: "Optional[str]" = None) -> "Tuple[str, str]":
        """Write the stub when absent, different (template, helper or advice changed) or forced."""
        data = self.render(helper, repo).encode("utf-8", "surrogateescape")
        return write_executable(self.path(root), data, force)
