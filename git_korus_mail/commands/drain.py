"""`git-korus-mail drain`: the entry point a client's hook stub runs at every hook event.

`serve` is the same entry for any client: it takes the client's hook-protocol module
(clients/<name>/protocol.py, chosen by `--client`; see clients/__init__.py) for everything client-specific,
and the client-free core drain for the rest. Reads the hook payload on stdin, answers in
the event's own form on stdout, and
only then (after the flush) writes the display markers. The exit code is decided
before them: 0 once the output is out, whatever fails after (docs/HOOKS.md). Imports nothing heavy:
see the hot-path test (`python -X importtime`) and bench/.
"""

import os
import sys

from git_korus_mail import clients

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

    from git_korus_mail.clients.interface import HookProtocol

MAX_STDIN = 4 * 1024 * 1024
# the stub's name for this launch's fast-path stamp, handed to this one run (hooks/hook.sh; read
# by clients/codex/protocol.fast_key_of, written under by core/drain_fast.py)
FAST_KEY_ENV = "KORUS_MAIL_FAST_KEY"


USAGE_LINE = "usage: git korus-mail drain [--client=<name>] [--repo=<path>] [--watch]"


def _args(argv: "Sequence[str]") -> "Tuple[str, Optional[str], bool]":
    """`drain [--client=<name>] [--repo=<path>] [--watch]`, parsed by hand to keep docopt off the hot path."""
    opts: "Dict[str, Union[str, bool, None]]" = {"--repo": None, "--client": clients.DEFAULT, "--watch": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, value = a.partition("=")
        if a == "--watch":
            opts[a] = True
        elif name in opts and eq:
            opts[name] = value
        elif a in opts and i + 1 < len(argv):
            i += 1
            opts[a] = argv[i]
        else:
            raise ValueError(f"drain: unexpected argument {a!r} ({USAGE_LINE})")
        i += 1
    client, repo = opts["--client"], opts["--repo"]
    if not isinstance(client, str) or client not in clients.NAMES:  # a str whenever it is one of them
        raise ValueError(f"drain: --client {client!r}: expected one of {', '.join(clients.NAMES)}")
    # --client and --repo only ever hold a str (or the default); --watch is read for its truth
    return client, (repo if isinstance(repo, str) else None), bool(opts["--watch"])


def main(argv: "Sequence[str]") -> int:
    try:
        client, repo, watch = _args(argv)
    except ValueError as exc:
        sys.stderr.write(f"git korus-mail: {exc}\n")
        return 129
    if watch:
        from git_korus_mail.commands.watch import serve_watch
        return serve_watch(clients.hook_protocol(client), repo)
    return serve(clients.hook_protocol(client), repo)


def own_environ() -> "Mapping[str, str]":
    """The environment this run reads its facts from: the process's own, and the stub's key.
    The key is taken out of os.environ, so no process the drain starts inherits it (`git config`
    at retention, a relay a remote answer starts, which lives on for days): a hook event nested
    in one would take this launch's key for its own, and a stamp is this run's to write alone
    (docs/HOOKS.md, "Codex's key: the payload's head")."""
    key = os.environ.pop(FAST_KEY_ENV, None)  # an unsetenv: gone from every child's environment
    if key is None:
        return os.environ
    env = dict(os.environ)
    env[FAST_KEY_ENV] = key
    return env


def serve(client: "HookProtocol", repo: "Optional[str]" = None) -> int:
    """Run one hook event for `client` (a hook-protocol module): payload from stdin, answer on
    stdout, display markers after the flush. Returns the exit code (docs/HOOKS.md)."""
    environ = own_environ()
    data = sys.stdin.buffer.read(MAX_STDIN + 1) if sys.stdin is not None else b""
    try:
        if len(data) > MAX_STDIN:
            raise client.BadPayload(f"stdin is over {MAX_STDIN // (1024 * 1024)} MiB")
        payload = client.read_payload(data)
    except client.BadPayload as exc:
        sys.stderr.write(f"git korus-mail: drain: {exc}\n")
        _emit(client.user_notice_output(f"korus-mail: the hook got an unusable payload ({exc})"))
        return 0
    if os.environ.get("KORUS_MAIL_VERIFY") == "1" and payload.session.startswith("korus-verify-"):
        # install's self-test: prove the stub reaches a working drain without touching any box
        _emit(client.context_output(payload.event, "korus-mail: hook wiring verified"))
        return 0
    edits = getattr(client, "pre_edit_paths", None)
    paths = edits(payload) if edits is not None else None
    if paths is not None:
        return _pre_edit(client, payload, paths, repo)
    from git_korus_mail.core import drain
    try:
        outcome = drain.run(client.drain_facts(payload, environ), repo_opt=repo)
    except Exception as exc:  # noqa: BLE001 - reported to the user below, never swallowed
        import traceback
        traceback.print_exc()
        _emit(client.fault_output(payload.event, f"korus-mail: drain failed at {payload.event}: "
                                                 f"{_said(exc)} (details on the hook's stderr)"))
        return 0  # the JSON above is the report; its exit code says the output is valid (docs/HOOKS.md)
    out = client.answer(payload.event, outcome.context, outcome.notice, shown=outcome.shown)
    if out is not None:
        try:
            _emit(out)
        except OSError as exc:
            # the client has no output from us: mark nothing shown, and say the run failed
            sys.stderr.write(f"git korus-mail: drain: output not written ({exc.strerror or exc}); "
                             f"nothing marked shown\n")
            return 1
    # From here the exit code is 0, whatever happens: the client has the output and acts on it,
    # so a failure now is reported (stderr, and the next Stop's notice), never fatal (docs/HOOKS.md).
    try:
        late = outcome.commit()
    except Exception as exc:  # noqa: BLE001 - a bug after the output: said on stderr, exit stays 0
        import traceback
        traceback.print_exc()
        late = [f"after the output: {type(exc).__name__}: {exc}"]
    for fault in late:
        sys.stderr.write(f"git korus-mail: drain at {payload.event}: {fault}\n")
    return 0


def _pre_edit(client: "HookProtocol", payload: "Any", paths: "List[str]", repo: "Optional[str]") -> int:
    """Before an edit (issue 29): refuse a session's first edit of another's reserved paths with
    the tell (told once: core/reservations.before_edit), refuse every edit for a `--block` one, and
    say nothing otherwise. No mail is shown here, no presence kept: a pre-edit event costs a
    bounded match, and says nothing when nothing is reserved.

    The order is the answer first, then the told record (docs/HOOKS.md, "Before an edit"): killed
    between them (crash point told:answered), the session is refused once more at its next try,
    which is harmless; the reverse could record as told a model that never read the tell."""
    if not paths:
        return 0
    from git_korus_mail.core import reservations
    cwd, session = payload.cwd, payload.session
    try:
        root = reservations.root_of(repo or cwd)
        told = reservations.before_edit(root, paths, cwd, session) if root is not None else None
    except Exception as exc:  # noqa: BLE001 - the edit goes on; the reason is on stderr
        sys.stderr.write(f"git korus-mail: drain at {payload.event}: "
                         f"reservations not checked: {_said(exc)}\n")
        return 0
    answer = getattr(client, "pre_edit_output", None)  # a client with pre_edit_paths has it
    if told is None or answer is None or root is None:
        return 0
    try:
        _emit(answer(told.text, told.refuse))
    except OSError as exc:
        sys.stderr.write(f"git korus-mail: drain: output not written ({exc.strerror or exc}); nothing recorded\n")
        return 1
    if told.told and session:
        from git_korus_mail import crash
        crash.point("told:answered")
        try:
            reservations.record_told(root, told.told, session)
        except Exception as exc:  # noqa: BLE001 - the refusal is out; at worst it comes once more
            sys.stderr.write(f"git korus-mail: drain at {payload.event}: told record not made: {_said(exc)}\n")
    return 0


def _said(exc: BaseException) -> str:
    """An unexpected error as told to the model and the user: its kind and, for an OSError,
    the system's words, never its message, which may carry a file name someone else chose
    (a 240-byte junk name once reached the opening show's context this way). The traceback
    on stderr has everything."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"
    return type(exc).__name__


def _emit(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
