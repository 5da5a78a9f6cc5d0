"""Codex CLI's hook protocol: JSON in on stdin, JSON out on stdout, the launch proved from /proc.

Everything Codex-specific lives in clients/codex/ (docs/CLIENTS.md, "Codex CLI"). Facts this
follows (Codex CLI 0.171.0, observed):
- every payload carries session_id, transcript_path, cwd, hook_event_name; Stop adds
  last_assistant_message;
- `hookSpecificOutput.additionalContext` reaches the model at SessionStart, UserPromptSubmit
  and PostToolUse; plain stdout only at the first two, so we always answer in JSON;
- Codex cuts an additionalContext over 2,500 tokens (it counts 4 UTF-8 bytes a token) to a
  head and a tail joined inside one line, which could glue a body's text onto a line of
  ours: the core fits each batch below that limit at whole messages, measured in UTF-8
  bytes (drain_facts), and `fit` guards any other text at whole lines and whole frames;
- the session id survives `exec resume`, and hook context is replayed on resume; no hook's
  environment names the session or the process (launch.py proves the process), while the
  model's commands get CODEX_SESSION_ID (`session_of`); every payload begins with its
  session_id, which the stub's fast path reads from the payload's head (`fast_key_of`).
"""

from git_korus_mail.clients import hookjson  # the JSON in and out every client shares

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

    from git_korus_mail.core.drain_context import DrainFacts
    from git_korus_mail.core.vocab import PhaseOf
    from git_korus_mail.store.launch import AnyLaunch, Launch

NAME = "codex"
SHOW_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse")
CONSUME_EVENT = "Stop"
END_EVENT = "SessionEnd"
EVENTS = SHOW_EVENTS + (CONSUME_EVENT, END_EVENT)
OPENING_EVENT = "SessionStart"
TURN_EVENTS = ("UserPromptSubmit", "PostToolUse")
LOCAL_SETTINGS_NAME = ".codex/hooks.json"
CONTEXT_LIMIT = 9600  # UTF-8 bytes; Codex's default cut is at 10,000 (2,500 tokens of 4 bytes)
MAX_CWD = 4096
PHASE_OF: "PhaseOf" = {"SessionStart": ("show", True, False), "UserPromptSubmit": ("show", False, False),
            "PostToolUse": ("show", False, True), "Stop": ("consume", False, False),
            "SessionEnd": ("end", False, False)}


class Payload:
    """The fields of a hook payload the drain uses."""

    __slots__ = ("event", "session", "cwd", "transcript", "last_message", "raw", "data")

    def __init__(self, event: str, session: str, cwd: str, transcript: "Optional[str]", last_message: "Optional[str]",
                 raw: "Dict[str, Any]", data: bytes = b"") -> None:
        self.event, self.session, self.cwd, self.raw = event, session, cwd, raw
        self.transcript, self.last_message = transcript, last_message
        self.data = data  # the stdin bytes: what identifies the event to every wiring (event_key)


class BadPayload(Exception):
    pass


def read_payload(data: bytes) -> Payload:
    """Parse stdin bytes; BadPayload when it is not a hook payload we can act on."""
    raw, event, session, cwd = hookjson.read_fields(data, MAX_CWD, BadPayload)
    last = raw.get("last_assistant_message")
    return Payload(event, session, cwd, hookjson.optional_str(raw, "transcript_path"),
                   last if isinstance(last, str) else None, raw, data)


def launch_of(payload: Payload) -> "AnyLaunch":
    from git_korus_mail.clients.codex import launch
    return launch.launch_of(payload.transcript)


def account_of(environ: "Mapping[str, str]") -> "Optional[str]":
    """Which Codex config root (CODEX_HOME) the session runs under, when it says."""
    return environ.get("CODEX_HOME") or None


def drain_facts(payload: Payload, environ: "Mapping[str, str]") -> "DrainFacts":
    """What the core's drain needs of this payload (core/drain_context.DrainFacts). The launch
    comes from the payload and /proc, not the environment (launch.py): with Codex's daemon, the
    environment is that of whichever session started the daemon. It is proved only when the
    drain needs it (`find_launch`): an event with an empty box reads no /proc at all."""
    from git_korus_mail.core.drain_context import DrainFacts
    event = payload.event
    phase, opening, frequent = PHASE_OF.get(event, (None, False, False))
    return DrainFacts(phase, payload.session, payload.cwd, label=event, opening=opening, frequent=frequent,
                      find_launch=lambda: launch_of(payload), account=account_of(environ),
                      # the automatic answer to open questions (core/answer.py)
                      final_text=payload.last_message if event == CONSUME_EVENT else None,
                      run_start=event == "UserPromptSubmit", event_key=lambda: _event_key(payload.data),
                      fast_key=fast_key_of(payload, environ),
                      context_unit="utf-8", context_limit=CONTEXT_LIMIT)  # Codex cuts at 10,000 UTF-8 bytes


def fast_key_of(payload: Payload, environ: "Mapping[str, str]") -> "Optional[str]":
    """The name the stub (hooks/hook.sh, with clients/codex/stub.py's values) looked this launch's
    fast-path stamp up by, `<session id>@<the stub's parent pid>`, which it hands the drain as
    KORUS_MAIL_FAST_KEY: the session read from the payload's head, the launch its parent. None
    unless it names this payload's session. Whether that pid is the launch the drain proves is
    judged where the stamp is written (core/drain_fast.py): a stamp is only ever written for it.
    `environ` is the drain's copy: the process's own has lost the key (commands/drain.own_environ),
    so no process the drain starts inherits it."""
    key = environ.get("KORUS_MAIL_FAST_KEY") or ""
    session, _at, pid = key.rpartition("@")
    if not session or session != payload.session or not pid.isdigit():
        return None
    return key


def _event_key(data: bytes) -> "Optional[str]":
    """A digest of the payload: every wiring of one event gets the same bytes (store/events.py),
    less any trailing newline: the stub hands a payload its head held whole to the drain without
    them, and one it did not take with them (hooks/hook.sh; docs/HOOKS.md, "Codex's key: the
    payload's head")."""
    from git_korus_mail.clients.claude.protocol import event_key_of
    return event_key_of(data.rstrip(b"\n"))


def session_of(environ: "Mapping[str, str]") -> "Optional[str]":
    """The session a command runs in: Codex names it in its tool calls' environment as
    CODEX_SESSION_ID, equal to the hooks' session_id (0.171.0; its hooks get no such variable)."""
    from git_korus_mail.store.layout import valid_session
    session = environ.get("CODEX_SESSION_ID")
    return session if valid_session(session) else None


def sender_launch(environ: "Mapping[str, str]", chain: "Sequence[int]") -> "Optional[Tuple[int, Launch]]":
    """(its place in `chain`, launch) of the nearest Codex process among a command's ancestors
    `chain`; None when none is visible (the sandbox's pid namespace hides it)."""
    from git_korus_mail.clients.codex import launch
    for n, pid in enumerate(chain):
        if launch.is_codex(pid):
            found = launch.Launch.of_process(launch.CLIENT, pid)
            return (n, found) if found.known else None
    return None


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


# Codex's answers (clients/hookjson.Answers): its context measured in UTF-8 bytes, below its cut
ANSWERS = hookjson.Answers("Codex", SHOW_EVENTS, OPENING_EVENT, CONTEXT_LIMIT, _utf8_len)
fit = ANSWERS.fit
answer = ANSWERS.answer
context_output = ANSWERS.context_output
user_notice_output = ANSWERS.user_notice_output  # Codex shows it as a warning line
fault_output = ANSWERS.fault_output


def check_answer(event: str, stdout: str) -> "Optional[str]":
    """None when a hook's stdout is an answer Codex accepts at `event` and carries no fault;
    otherwise what is wrong (clients/hookjson.py: the same for every client)."""
    return hookjson.check_answer(event, stdout)


# -- before an edit (issue 29, reservations): clients/codex/preedit.py; the drain finds these --
def pre_edit_paths(payload: Payload) -> "Optional[list[str]]":
    """The files an editing tool is about to write ([] for another tool); None: no pre-edit event."""
    from git_korus_mail.clients.codex import preedit
    return preedit.paths(payload.event, payload.raw)


def pre_edit_output(text: str, block: bool) -> str:
    """The answer before an edit of reserved paths (the tell, or the refusal of a --block one), in
    Claude Code's shape (clients/hookjson.py), cut to Codex's limit."""
    from git_korus_mail.clients.codex import preedit
    return hookjson.pre_tool_use_output(preedit.PRE_EDIT_EVENT, fit(text), block)
