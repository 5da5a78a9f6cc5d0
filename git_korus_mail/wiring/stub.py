"""The executable hooks run: which git-korus-mail to bake in, each client's stub from the one
template (hooks/hook.sh), writing a stub only when it changed (a repeated install leaves bytes and
mtime alone), and telling a stub of ours, current or older, from one that is not.

One template, as pre-commit's installed hook (its hook-tmpl has one templated block between two
marker lines, and install_uninstall.py knows its own files by an ID string in them): everything a
stub does is the template's, and what differs between clients is a block of values (the client's
name for the drain, the fast path's key from its environment, the events the fast path answers),
written here and quoted here. A new client adds values (its clients/<name>/stub.py), never a
copy of the template (docs/HOOKS.md, "The stub").

The ID a stub carries is a hash of its text outside the block, so a stub proves which template
it came from by itself: the ID matches its text (a stub of ours; this template's ID: current),
or it does not (edited by hand). The stubs of the templates before this one (one per client,
`template-version=N` on their second line) are known by that line (PRIOR)."""

import hashlib
import json
import os
import re
import shutil
import sys

from git_korus_mail.errors import MailError
from git_korus_mail.wiring import files as wfiles
from git_korus_mail.wiring.record import HOOKS_SUBDIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, List, Optional, Sequence, Tuple

    from git_korus_mail.store.files import MailRoot


def find_helper() -> str:
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


TEMPLATE = "hook.sh"
BLOCK_START = "# start values\n"
BLOCK_END = "# end values\n"
ID_LINE = "# git-korus-mail hook stub, ID: "
ID_SLOT = "@ID@"
# the stubs install wrote before the one template: the second line of each, and what it was
PRIOR = {"# git-korus-mail claude-hook template-version=": "Claude Code's template before the shared one",
         "# git-korus-mail codex-hook template-version=": "Codex's template before the shared one"}
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")


def _split(text: str) -> "Optional[Tuple[str, str, str]]":
    """(before the block, the block, after it), or None when `text` has no single block."""
    if text.count(BLOCK_START) != 1 or text.count(BLOCK_END) != 1:
        return None
    before, rest = text.split(BLOCK_START)
    block, after = rest.split(BLOCK_END)
    return before, block, after


def template_id(text: str) -> "Optional[str]":
    """The ID of a stub or template `text`: a hash of what it holds outside its block of values,
    its own ID blanked. None when it has no block or no ID line."""
    parts = _split(text)
    if parts is None:
        return None
    before, _block, after = parts
    before = re.sub("^" + re.escape(ID_LINE) + ".*$", ID_LINE + ID_SLOT, before, count=1, flags=re.M)
    if ID_LINE + ID_SLOT not in before:
        return None
    return hashlib.sha256((before + BLOCK_START + BLOCK_END + after).encode("utf-8")).hexdigest()[:32]


def identify(data: bytes) -> "Tuple[str, str]":
    """What the stub bytes `data` are: ("current", id), ("older", what) for a stub of an earlier
    template (it upgrades by install), ("edited", id) for one whose text no longer matches its
    ID, or ("foreign", "") for a file that is no stub of ours."""
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n", 2)
    second = lines[1] if len(lines) > 1 else ""
    for mark, what in PRIOR.items():
        if second.startswith(mark) and second[len(mark):].isdigit():
            return "older", f"{what}, version {second[len(mark):]}"
    if not second.startswith(ID_LINE):
        return "foreign", ""
    said = second[len(ID_LINE):]
    if template_id(text) != said:
        return "edited", said
    with open(template_path(TEMPLATE), encoding="utf-8") as f:
        current = template_id(f.read())
    return ("current", said) if said == current else ("older", f"template {said}")


def values(client: str, helper: str, repo: "Optional[str]" = None, session_env: "Optional[str]" = None,
           launch_env: "Optional[str]" = None, fast_events: "Sequence[str]" = (), *,
           opening_event: str, end_event: str, prompt_event: str = "",
           pre_edit_events: "Sequence[str]" = (), session_head: str = "") -> str:
    """The block of values for `client`'s stub, one `name=value` line each, every value quoted
    for shell; the reinstall advice for this machine (core/advice.py) is baked in, since when the
    stub needs it the package may not run at all. The fast path's key is read from the hook's
    environment variables `session_env` and `launch_env` (names only: checked here). The fault
    report is said at `opening_event` (to the model and the user) and `end_event` (to the user).
    `end_event` and `prompt_event` (empty: none) are a turn's end and start: among `fast_events`,
    the stub may record them itself (docs/HOOKS.md, "A turn with nothing new").
    `pre_edit_events`: the events before an edit, which a clone with no reservation answers in sh
    (store/reservations.py, the signal). `session_head`: for a client whose hooks' environment
    names no session, the bytes its payload begins with, the session's value next; the stub then
    keys the fast path by that session and its own parent process (docs/HOOKS.md, "Codex's key:
    the payload's head")."""
    from git_korus_mail.core import advice
    from git_korus_mail.shell import sh_quote
    python, dirs = fast_start(helper)
    if session_head and (session_env or launch_env):
        raise ValueError(f"a payload head and an environment key exclude each other: {session_head!r}")
    if not session_head.isprintable():
        raise ValueError(f"not a payload's head: {session_head!r}")  # it goes into a sh case pattern, quoted
    for name in (session_env, launch_env):
        if name is not None and not _ENV_NAME.match(name):
            raise ValueError(f"not an environment variable's name: {name!r}")
    for event in (opening_event, end_event, *fast_events, *([prompt_event] if prompt_event else []),
                  *pre_edit_events):
        if not _ENV_NAME.match(event.upper()):
            raise ValueError(f"not an event's name: {event!r}")  # it goes into sh words and JSON as it is
    pairs = [("client", sh_quote(client)),
             ("helper", sh_quote(helper)),
             ("helper_json", sh_quote(_json_inside(helper))),
             ("advice_json", sh_quote(_json_inside(advice.advice(helper, repo)))),
             ("python", sh_quote(python)),
             ("pypath", sh_quote(os.pathsep.join(dirs))),
             ("fast_start", sh_quote(FAST_START_LINE.decode() if python else "")),
             ("fast_session", "${%s-}" % session_env if session_env and launch_env else "''"),
             ("fast_launch", "${%s-}" % launch_env if session_env and launch_env else "''"),
             ("fast_events", sh_quote(" ".join(fast_events))),
             ("opening_event", sh_quote(opening_event)),
             ("end_event", sh_quote(end_event)),
             ("prompt_event", sh_quote(prompt_event)),
             ("pre_edit_events", sh_quote(" ".join(pre_edit_events))),
             ("fast_head", sh_quote(session_head))]
    return "".join(f"{name}={value}\n" for name, value in pairs)


def render(client: str, helper: str, repo: "Optional[str]" = None, **fast: "Any") -> str:
    """The stub's text for `client` and `helper`: the template with its block of values filled
    and its ID written (docs/HOOKS.md, "The stub")."""
    with open(template_path(TEMPLATE), encoding="utf-8") as f:
        text = f.read()
    parts = _split(text)
    if parts is None:
        raise MailError(f"the hook template {TEMPLATE} has no block of values; reinstall git-korus-mail")
    before, _slot, after = parts
    ident = template_id(text)
    text = before + BLOCK_START + values(client, helper, repo, **fast) + BLOCK_END + after
    return text.replace(ID_LINE + ID_SLOT, ID_LINE + str(ident), 1)


def write_executable(path: str, data: bytes, force: bool = False) -> "Tuple[str, str]":
    """Write the stub at `path` when absent, different or forced; (path, "current" or "written")."""
    if not force and wfiles.read_bytes(path) == data and os.access(path, os.X_OK):
        return path, "current"
    wfiles.write_atomic(path, data, 0o700)
    return path, "written"


class Stub:
    """One client's stub, `<mail>/hooks/<name>`: the one template with this client's values."""

    def __init__(self, name: str, client: str, *, opening_event: str, end_event: str,
                 session_env: "Optional[str]" = None, launch_env: "Optional[str]" = None,
                 fast_events: "Sequence[str]" = (), prompt_event: str = "",
                 pre_edit_events: "Sequence[str]" = (), session_head: str = "") -> None:
        self.name, self.client = name, client
        self.fast: "dict[str, Any]" = {"session_env": session_env, "launch_env": launch_env, "fast_events": tuple(fast_events),
                     "opening_event": opening_event, "end_event": end_event, "prompt_event": prompt_event,
                     "pre_edit_events": tuple(pre_edit_events), "session_head": session_head}

    def path(self, root: "MailRoot") -> str:
        return os.path.join(root.path, HOOKS_SUBDIR, self.name)

    def render(self, helper: str, repo: "Optional[str]" = None) -> str:
        return render(self.client, helper, repo, **self.fast)

    def write(self, root: "MailRoot", helper: str, force: bool = False,
              repo: "Optional[str]" = None) -> "Tuple[str, str]":
        """Write the stub when absent, different (template, helper or advice changed) or forced."""
        data = self.render(helper, repo).encode("utf-8", "surrogateescape")
        return write_executable(self.path(root), data, force)


def why_stale(data: bytes) -> str:
    """Why a stub whose bytes differ from what install would write now differs, for doctor."""
    kind, what = identify(data)
    if kind == "older":
        return f"written from an older template ({what}); install upgrades it"
    if kind == "edited":
        return "edited since install wrote it: its text no longer matches its template's ID"
    if kind == "current":
        return "this version's template, with other values (another helper, or other reinstall advice)"
    return "not a stub of this template or an older one"
