"""Gemini CLI's hook protocol: JSON in on stdin, JSON out on stdout, the launch proved from /proc.

Everything Gemini-specific lives in clients/gemini/ (docs/CLIENTS.md, "Gemini CLI"). Facts this
follows (Gemini CLI 0.61.0, observed offline; /work/shared/reference/gemini-cli-hooks.md):
- every payload carries session_id, transcript_path, cwd, hook_event_name and timestamp;
  SessionStart adds source, BeforeAgent prompt, AfterTool tool_name/tool_input/tool_response,
  AfterAgent prompt, prompt_response and stop_hook_active, SessionEnd reason;
- `hookSpecificOutput.additionalContext` reaches the model at SessionStart (headless: before
  the prompt), BeforeAgent (a user part) and AfterTool (appended to the tool's output), each
  wrapped in `<hook_context>` with every `<` and `>` escaped as `&lt;` / `&gt;`;
- `systemMessage` is shown to the person: headless, on stderr as "Hook system message: <text>"
  (the person's line, docs/CLIENTS.md);
- the hooks' parent is the `gemini` node process, and their environment names the session in
  GEMINI_SESSION_ID (equal to the payload's session_id); the model's shell commands get
  GEMINI_CLI=1 and no session id;
- no hook can wake an idle session (no async hook, no rewake).
"""

from git_korus_mail.clients import hookjson  # the JSON in and out every client shares

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

    from git_korus_mail.core.drain_context import DrainFacts
    from git_korus_mail.core.vocab import PhaseOf
    from git_korus_mail.store.launch import AnyLaunch, Launch

NAME = "gemini"
SHOW_EVENTS = ("SessionStart", "BeforeAgent", "AfterTool")
CONSUME_EVENT = "AfterAgent"
END_EVENT = "SessionEnd"
EVENTS = SHOW_EVENTS + (CONSUME_EVENT, END_EVENT)
OPENING_EVENT = "SessionStart"
TURN_EVENTS = ("BeforeAgent", "AfterTool")
LOCAL_SETTINGS_NAME = ".gemini/settings.json"
# Gemini measures text in JS string length (UTF-16 code units). Hook context is never cut by the
# hook runner, but AfterTool's is appended to the shell tool's output, which Gemini cuts above
# 40,000 units to its first 20% and last 80% (32,000): our context, at its end, stays whole
# while it is below that after Gemini escapes `<` and `>` (4 units each at worst). 7,000 units,
# times 4, is 28,000: whole in the kept tail, with room for the tool's last lines.
CONTEXT_LIMIT = 7000
MAX_CWD = 4096
PHASE_OF: "PhaseOf" = {"SessionStart": ("show", True, False), "BeforeAgent": ("show", False, False),
            "AfterTool": ("show", False, True), "AfterAgent": ("consume", False, False),
            "SessionEnd": ("end", False, False)}


class Payload:
    """The fields of a hook payload the drain uses."""

    __slots__ = ("event", "session", "cwd", "transcript", "raw", "data")

    def __init__(self, event: str, session: str, cwd: str, transcript: "Optional[str]", raw: "Dict[str, Any]",
                 data: bytes = b"") -> None:
        self.event, self.session, self.cwd, self.raw = event, session, cwd, raw
        self.transcript = transcript
        self.data = data  # the stdin bytes: what identifies the event to every wiring (event_key)


class BadPayload(Exception):
    pass


def read_payload(data: bytes) -> Payload:
    """Parse stdin bytes; BadPayload when it is not a hook payload we can act on."""
    raw, event, session, cwd = hookjson.read_fields(data, MAX_CWD, BadPayload)
    return Payload(event, session, cwd, hookjson.optional_str(raw, "transcript_path"), raw, data)


def launch_of(payload: Payload, environ: "Mapping[str, str]") -> "AnyLaunch":
    from git_korus_mail.clients.gemini import launch
    return launch.launch_of(payload.session, environ)


def account_of(environ: "Mapping[str, str]") -> "Optional[str]":
    """Which Gemini config root the session runs under: Gemini keeps it in $HOME/.gemini (it has
    no variable of its own for it)."""
    home = environ.get("HOME")
    return f"{home.rstrip('/')}/.gemini" if home else None


def final_text_of(payload: Payload) -> "Optional[str]":
    """The automatic answer (core/answer.py): AfterAgent's prompt_response, the run's text as
    Gemini hands it to its stop hooks. Gemini 0.61.0 sends "[no response text]" when the run
    wrote none: that is no final text."""
    text = payload.raw.get("prompt_response")
    if not isinstance(text, str) or not text.strip() or text == "[no response text]":
        return None
    return text


def drain_facts(payload: Payload, environ: "Mapping[str, str]") -> "DrainFacts":
    """What the core's drain needs of this payload (core/drain_context.DrainFacts). The launch is
    the gemini process among this hook's parents, proved only when the drain needs it
    (`find_launch`), except at SessionStart and SessionEnd, where the surface needs it now."""
    from git_korus_mail.core.drain_context import DrainFacts
    event = payload.event
    phase, opening, frequent = PHASE_OF.get(event, (None, False, False))
    found: "Optional[AnyLaunch]" = None
    surface = None
    if event in (OPENING_EVENT, END_EVENT):
        from git_korus_mail.clients.gemini import launch
        found = launch_of(payload, environ)  # needed now, for the surface
        if found.known:
            surface = launch.surface_of(found.pid)
    # A hook cannot know at an AfterAgent whether another AfterAgent hook will deny and so
    # continue the run (stop_hook_active: true at the next one): the questions shown so far are
    # answered with the text this one carries, as at Claude Code's Stop (docs/HOOKS.md,
    # "stop_hook_active"); those shown during a continuation at its end.
    return DrainFacts(phase, payload.session, payload.cwd, label=event, opening=opening, frequent=frequent,
                      launch=found, find_launch=lambda: launch_of(payload, environ), account=account_of(environ),
                      surface=surface, final_text=final_text_of(payload) if event == CONSUME_EVENT else None,
                      run_start=event == "BeforeAgent", event_key=lambda: _event_key(payload.data),
                      context_unit="utf-16", context_limit=CONTEXT_LIMIT)  # Gemini's unit: JS string length


def _event_key(data: bytes) -> "Optional[str]":
    """A digest of the payload: every wiring of one event gets the same bytes (store/events.py)."""
    from git_korus_mail.clients.claude.protocol import event_key_of
    return event_key_of(data)


def session_of(environ: "Mapping[str, str]") -> "Optional[str]":
    """The session a command runs in, when Gemini says. Its hooks get GEMINI_SESSION_ID, the
    model's shell commands do not (0.61.0: only GEMINI_CLI=1), so a command learns nothing here;
    the sending launch (sender_launch) tells it apart."""
    from git_korus_mail.store.layout import valid_session
    if environ.get("GEMINI_CLI") == "1":
        return None
    session = environ.get("GEMINI_SESSION_ID")
    return session if valid_session(session) else None


def sender_launch(environ: "Mapping[str, str]", chain: "Sequence[int]") -> "Optional[Tuple[int, Launch]]":
    """(its place in `chain`, launch) of the nearest gemini process among a command's ancestors."""
    from git_korus_mail.clients.gemini import launch
    for n, pid in enumerate(chain):
        if launch.is_gemini(pid):
            found = launch.Launch.of_process(launch.CLIENT, pid)
            return (n, found) if found.known else None
    return None


def command_launch(environ: "Mapping[str, str]") -> "Optional[AnyLaunch]":
    """The gemini process a command (a shell tool call) runs under, proved from /proc; None
    outside Gemini (it says GEMINI_CLI=1 in its commands' environment)."""
    if environ.get("GEMINI_CLI") != "1":
        return None
    from git_korus_mail.clients.gemini import launch
    pid = launch.gemini_ancestor(None, depth=launch.COMMAND_DEPTH)
    return launch.Launch.of_process(launch.CLIENT, pid) if pid is not None else None


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# Gemini's answers (clients/hookjson.Answers): its context measured in UTF-16 units (JS string
# length). Context only at a showing event: at AfterAgent, a `deny` would start another turn.
# Gemini shows systemMessage to the person ("Hook system message: ..."), never to the model.
ANSWERS = hookjson.Answers("Gemini", SHOW_EVENTS, OPENING_EVENT, CONTEXT_LIMIT, _utf16_units)
fit = ANSWERS.fit
answer = ANSWERS.answer
context_output = ANSWERS.context_output
user_notice_output = ANSWERS.user_notice_output
fault_output = ANSWERS.fault_output


def check_answer(event: str, stdout: str) -> "Optional[str]":
    """None when a hook's stdout is an answer Gemini accepts at `event` and carries no fault."""
    return hookjson.check_answer(event, stdout)


# -- before an edit (issue 29, reservations): clients/gemini/preedit.py; the drain finds these --
def pre_edit_paths(payload: Payload) -> "Optional[list[str]]":
    """The files an editing tool is about to write ([] for another tool); None: no pre-edit event."""
    from git_korus_mail.clients.gemini import preedit
    return preedit.paths(payload.event, payload.raw)


def pre_edit_output(text: str, block: bool) -> str:
    """The answer before an edit of reserved paths (the tell, or the refusal of a --block one)."""
    from git_korus_mail.clients.gemini import preedit
    return preedit.output(text, block)
