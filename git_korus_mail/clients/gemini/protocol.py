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

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

    from git_korus_mail.clients.interface import Shown
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
    transcript = raw.get("transcript_path")
    transcript = transcript if isinstance(transcript, str) and transcript and "\0" not in transcript else None
    return Payload(event, session, cwd, transcript, raw, data)


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


def _frame_line(line: str, end: bool) -> bool:
    return line.startswith("[mail ") and line.endswith(" end]" if end else " begin]")


def fit(text: str, limit: int = CONTEXT_LIMIT) -> str:
    """`text` within `limit` UTF-16 units. Mail never needs this: the core fits a batch at whole
    messages in Gemini's unit (drain_facts). It guards any other text we pass: whole lines from
    the start, never part of a frame, then one line of ours."""
    def units(s: str) -> int:
        return len(s.encode("utf-16-le", "surrogatepass")) // 2
    if units(text) <= limit:
        return text
    lines = text.split("\n")
    room = limit - 200
    kept: "List[str]" = []
    used, open_at = 0, None
    for line in lines:
        n = units(line) + 1
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
    note = (f"korus-mail: {len(lines) - len(kept)} more lines cut here to fit Gemini's context limit; "
            f"`git korus-mail status` lists what this worktree received")
    return "\n".join(kept + [note])


def answer(event: str, context: "Optional[str]", notice: "Optional[str]",
           shown: "Optional[Shown]" = None) -> "Optional[str]":
    """The hook's stdout for an outcome; None when there is nothing to say. Context reaches the
    model only at a showing event (at AfterAgent, a `deny` would start another turn: never
    used); elsewhere the notice alone, to the person. `shown` (core/shown.Shown) sums up the mail
    in `context` in one line for the person (systemMessage)."""
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
    """Output Gemini shows the person only ("Hook system message: ..."): the model never sees it."""
    return json.dumps({"systemMessage": text}, ensure_ascii=True)


def fault_output(event: str, text: str) -> str:
    """A fault: to the person, and at SessionStart to the model too."""
    if event == OPENING_EVENT:
        return json.dumps({"systemMessage": text,
                           "hookSpecificOutput": {"hookEventName": event, "additionalContext": fit(text)}},
                          ensure_ascii=True)
    return user_notice_output(text)


def check_answer(event: str, stdout: str) -> "Optional[str]":
    """None when a hook's stdout is an answer Gemini accepts at `event` and carries no fault."""
    from git_korus_mail.clients.hookjson import check_answer as check
    return check(event, stdout)


# -- before an edit (issue 29, reservations): clients/gemini/preedit.py; the drain finds these --
def pre_edit_paths(payload: Payload) -> "Optional[List[str]]":
    """The files an editing tool is about to write ([] for another tool); None: no pre-edit event."""
    from git_korus_mail.clients.gemini import preedit
    return preedit.paths(payload.event, payload.raw)


def pre_edit_output(text: str, block: bool) -> str:
    """The answer before an edit of reserved paths (the tell, or the refusal of a --block one)."""
    from git_korus_mail.clients.gemini import preedit
    return preedit.output(text, block)
