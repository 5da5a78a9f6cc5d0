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
  model's commands get CODEX_SESSION_ID (`session_of`).
"""

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

    from git_korus_mail.clients.interface import Shown
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


def _optional_str(raw: "Dict[str, Any]", key: str) -> "Optional[str]":
    value = raw.get(key)
    return value if isinstance(value, str) and value and "\0" not in value else None


def read_payload(data: bytes) -> Payload:
    """Parse stdin bytes; BadPayload when it is not a hook payload we can act on."""
    try:
        raw = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        raise BadPayload("stdin is not JSON") from None
    if not isinstance(raw, dict):
        raise BadPayload("stdin is not a JSON object")
    event, session, cwd = raw.get("hook_event_name"), raw.get("session_id"), raw.get("cwd")
    if not isinstance(event, str) or not event:
        raise BadPayload("no hook_event_name")
    if not isinstance(session, str) or not session:
        raise BadPayload("no session_id")
    if not isinstance(cwd, str) or not cwd:
        raise BadPayload("no cwd")
    if "\0" in cwd:
        raise BadPayload("cwd contains a NUL character")
    if len(cwd) > MAX_CWD:
        raise BadPayload(f"cwd is {len(cwd)} characters long, over {MAX_CWD}")
    last = raw.get("last_assistant_message")
    return Payload(event, session, cwd, _optional_str(raw, "transcript_path"),
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
                      context_unit="utf-8", context_limit=CONTEXT_LIMIT)  # Codex cuts at 10,000 UTF-8 bytes


def _event_key(data: bytes) -> "Optional[str]":
    """A digest of the payload: every wiring of one event gets the same bytes (store/events.py)."""
    from git_korus_mail.clients.claude.protocol import event_key_of
    return event_key_of(data)


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


def _frame_line(line: str, end: bool) -> bool:
    return line.startswith("[mail ") and line.endswith(" end]" if end else " begin]")


def fit(text: str, limit: int = CONTEXT_LIMIT) -> str:
    """`text` within `limit` UTF-8 bytes. Mail never needs this: the core fits a batch at whole
    messages in Codex's unit (drain_facts: context_unit, context_limit), so every receipt is
    true. It guards any other text we pass: whole lines from the start, never part of a frame
    (a frame cut open would let the next line pass as its body), then one line of ours."""
    if _utf8_len(text) <= limit:
        return text
    lines = text.split("\n")
    room = limit - 200  # the note's line
    kept: "list[str]" = []
    used, open_at = 0, None
    for line in lines:
        n = _utf8_len(line) + 1
        if used + n > room:
            break
        if _frame_line(line, end=False):
            open_at = len(kept)
        elif _frame_line(line, end=True):
            open_at = None
        kept.append(line)
        used += n
    if open_at is not None:
        kept = kept[:open_at]
    note = (f"korus-mail: {len(lines) - len(kept)} more lines cut here to fit Codex's context limit; "
            f"`git korus-mail status` lists what this worktree received")
    return "\n".join(kept + [note])


def answer(event: str, context: "Optional[str]", notice: "Optional[str]",
           shown: "Optional[Shown]" = None) -> "Optional[str]":
    """The hook's stdout for an outcome; None when there is nothing to say. Context reaches the
    model only at a showing event; elsewhere the notice alone, to the user. `shown`
    (core/shown.Shown) sums up the mail in `context` in one line for the person (Codex prints
    systemMessage as a warning line); the mail itself goes into the context only."""
    if context and event in SHOW_EVENTS:
        if shown:
            notice = f"{notice}\n{shown.line()}" if notice else shown.line()
        return context_output(event, context, notice=notice)
    if notice:
        return user_notice_output(notice)
    return None


def context_output(event: str, text: str, notice: "Optional[str]" = None) -> str:
    out: "Dict[str, Any]" = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": fit(text)}}
    if notice:
        out["systemMessage"] = notice
    return json.dumps(out, ensure_ascii=True)


def user_notice_output(text: str) -> str:
    """Output Codex shows the user only (a warning line): the model never sees it."""
    return json.dumps({"systemMessage": text}, ensure_ascii=True)


def fault_output(event: str, text: str) -> str:
    """A fault: to the user, and at SessionStart to the model too."""
    if event == OPENING_EVENT:
        return json.dumps({"systemMessage": text,
                           "hookSpecificOutput": {"hookEventName": event, "additionalContext": fit(text)}},
                          ensure_ascii=True)
    return user_notice_output(text)


def check_answer(event: str, stdout: str) -> "Optional[str]":
    """None when a hook's stdout is an answer Codex accepts at `event` and carries no fault;
    otherwise what is wrong (clients/hookjson.py: the same for every client)."""
    from git_korus_mail.clients.hookjson import check_answer as check
    return check(event, stdout)


# -- before an edit (issue 29, reservations): clients/codex/preedit.py; the drain finds these --
def pre_edit_paths(payload: Payload) -> "Optional[list[str]]":
    """The files an editing tool is about to write ([] for another tool); None: no pre-edit event."""
    from git_korus_mail.clients.codex import preedit
    return preedit.paths(payload.event, payload.raw)


def pre_edit_output(text: str, block: bool) -> str:
    """The answer before an edit of reserved paths (the tell, or the refusal of a --block one)."""
    from git_korus_mail.clients.codex import preedit
    return preedit.output(fit(text), block)
