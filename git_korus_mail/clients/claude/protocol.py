"""Claude Code's hook protocol: JSON in on stdin, JSON out on stdout, facts from the environment.

Everything client-specific lives in clients/claude/ (this module; settings, settings_file, stub,
verify and wiring for install), so a second client is one more package beside it
(docs/CLIENTS.md).
Facts this follows (Claude Code 2.1.332, observed):
- every payload carries session_id, transcript_path, cwd, hook_event_name;
- `hookSpecificOutput.additionalContext` reaches the model at SessionStart,
  UserPromptSubmit and PostToolUse; at Stop it would start another turn, so the
  drain never uses it there;
- `systemMessage` reaches only the user, at every event we wire but SessionEnd (the terminal UI
  draws it as "<event> says: <text>"; stream-json has it as a `system`/`informational` line, and
  at SessionStart only inside the raw `hook_response`; docs/HOOKS.md, "The user line"): the
  channel for faults and for the line that says which mail the model was shown;
- context over 10,000 characters is not sent inline (it is saved to a file), so the
  drain's cap sits well below it;
- a wrong type in the output drops the whole output: we print only our own keys
  and only strings;
- the session id survives `--resume` and `--continue`, so it does not tell two
  processes apart; every hook's environment names the Claude Code process in
  CLAUDE_PID and its account in CLAUDE_CONFIG_DIR (`launch_of`, `account_of`).
"""

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.clients import hookjson  # the payload's fields, checked as for every client
# the package's own: below this module and registry.py, which the SessionStart here asks for a name
from git_korus_mail.clients.claude import NAME as NAME  # re-exported: the client's name (clients.hook_protocols)
from git_korus_mail.clients.claude import surface_of

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

    from git_korus_mail.clients.interface import Shown
    from git_korus_mail.core.drain_context import DrainFacts
    from git_korus_mail.core.vocab import PhaseOf
    from git_korus_mail.store.launch import AnyLaunch, Launch

SHOW_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse")
CONSUME_EVENT = "Stop"
END_EVENT = "SessionEnd"
# Fired instead of Stop when a run ends in an API error (observed on 2.1.332 for "prompt is
# too long"; a plain 400 fired neither Stop nor StopFailure, only SessionEnd later): see
# docs/HOOKS.md, "Questions".
FAIL_EVENT = "StopFailure"
EVENTS = SHOW_EVENTS + (CONSUME_EVENT, END_EVENT, FAIL_EVENT)
# Before an edit (issue 29, reservations): PreToolUse for the tools that write files, each
# naming its file in tool_input (file_path; notebook_path for NotebookEdit). Its
# additionalContext reaches the model; permissionDecision "deny" refuses the tool with the
# reason as its error (docs/HOOKS.md, "Before an edit").
PRE_EDIT_EVENT = "PreToolUse"
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
OPENING_EVENT = "SessionStart"  # what install's self-test and doctor run the stub with
TURN_EVENTS = ("UserPromptSubmit", "PostToolUse")  # a session that ran one must reach CONSUME_EVENT
LOCAL_SETTINGS_NAME = ".claude/settings.local.json"  # where doctor points a person (install wires it)
INLINE_LIMIT = 10_000  # Claude Code's inline limit for additionalContext / plain stdout
# SessionStart sources that start a new context under the same launch (observed on 2.1.332:
# `/compact` and auto-compaction both fire PreCompact, SessionStart "compact", PostCompact, with the
# same session id; `/clear` fires SessionStart "clear" under a new id). What was shown before is
# gone from the model: docs/HOOKS.md, "A new context under the same launch".
NEW_CONTEXT_SOURCES = ("compact", "clear")
MAX_CWD = 4096  # PATH_MAX on Linux: no longer path can name a directory a session runs in


class Payload:
    """The fields of a hook payload the drain uses."""

    __slots__ = ("event", "session", "cwd", "source", "raw", "data")

    def __init__(self, event: str, session: str, cwd: str, source: "Optional[str]", raw: "Dict[str, Any]",
                 data: bytes = b"") -> None:
        self.event, self.session, self.cwd, self.source, self.raw = event, session, cwd, source, raw
        self.data = data  # the stdin bytes as received: what identifies the event (event_key_of)


class BadPayload(Exception):
    pass


def read_payload(data: bytes) -> Payload:
    """Parse stdin bytes; BadPayload when it is not a hook payload we can act on (the fields
    every client's payload must carry are checked alike: clients/hookjson.read_fields)."""
    raw, event, session, cwd = hookjson.read_fields(data, MAX_CWD, BadPayload)
    source = raw.get("source") if isinstance(raw.get("source"), str) else None
    return Payload(event, session, cwd, source, raw, data)


def event_key_of(data: bytes) -> "Optional[str]":
    """What identifies one hook event to every wiring that runs it: a digest of its stdin. Claude
    Code 2.1.332 runs the hooks of every settings file in parallel and hands each the same
    bytes (observed with two scopes wired: identical stdin and CLAUDE_PID at every event), and
    two different events differ in their payload (tool_use_id, prompt_id, prompt, source, ...).
    None for an empty payload."""
    if not data:
        return None
    from git_korus_mail.core.keys import sha256_hex  # loaded by the drain already; not hashlib (OpenSSL)
    return sha256_hex(data)[:32]


def launch_of(environ: "Mapping[str, str]") -> "AnyLaunch":
    """The Claude Code process running this hook (launch.Launch), from CLAUDE_PID; a
    launch.NoLaunch when Claude Code named none (a hand-run drain, an older client)."""
    from git_korus_mail.store.launch import Launch, NoLaunch
    raw = environ.get("CLAUDE_PID")
    if not raw:
        return NoLaunch("CLAUDE_PID is not set")
    try:
        pid = int(raw)
    except ValueError:
        return NoLaunch("CLAUDE_PID is not a process id")
    return Launch.of_process("claude", pid)


def command_launch(environ: "Mapping[str, str]") -> "AnyLaunch":
    """The Claude Code process a command (a Bash tool call) runs under: CLAUDE_PID again."""
    return launch_of(environ)


def sender_launch(environ: "Mapping[str, str]", chain: "Sequence[int]") -> "Optional[Tuple[int, Launch]]":
    """(its place in `chain`, launch) of the Claude Code process a command runs under, when
    CLAUDE_PID names one of the command's ancestors `chain` (nearest first); None otherwise: a
    variable anyone can set proves nothing by itself (clients.sender_of)."""
    raw = environ.get("CLAUDE_PID") or ""
    if not raw.isdigit() or int(raw) not in chain:
        return None
    launch = launch_of(environ)
    return (chain.index(int(raw)), launch) if launch.known else None


def account_of(environ: "Mapping[str, str]") -> "Optional[str]":
    """Which Claude Code account (config dir) the session runs under, when it says."""
    return environ.get("CLAUDE_CONFIG_DIR") or None


# How each event drives the client-free drain: (phase, opening, frequent); see core/drain_context.py
# DrainFacts.
# SessionStart opens a launch; PostToolUse fires at every tool call; Stop ends a turn, the one
# point where the model has certainly read what was shown (consume); SessionEnd ends the launch.
PHASE_OF: "PhaseOf" = {"SessionStart": ("show", True, False), "UserPromptSubmit": ("show", False, False),
            "PostToolUse": ("show", False, True), "Stop": ("consume", False, False),
            "SessionEnd": ("end", False, False), "StopFailure": ("fail", False, False)}
def drain_facts(payload: Payload, environ: "Mapping[str, str]") -> "DrainFacts":
    """What the core's drain needs of this payload (core/drain_context.DrainFacts): the session
    and cwd, the event's phase, the event as a label, the account and surface and (identified
    only when the drain needs it) the launch, from the environment. An event we do not wire has
    no phase: the drain only records presence for it."""
    from git_korus_mail.core.drain_context import DrainFacts
    event = payload.event
    phase, opening, frequent = PHASE_OF.get(event, (None, False, False))
    account = account_of(environ)
    launch = name = final = None
    if event in (OPENING_EVENT, END_EVENT):
        launch = launch_of(environ)  # needed now, for the name
        if launch.known:
            # the session's name, while Claude Code's registry holds it: it is there at SessionStart, and at
            # a SessionEnd the process outlives (/clear), not at exit (docs/CLIENTS.md, "The session registry")
            from git_korus_mail.clients.claude import registry
            name = registry.name_of(account, launch.pid, launch.start)
    if event == CONSUME_EVENT:
        # the run's final text: Stop's stdin carries it (the transcript may lag behind Stop)
        final = payload.raw.get("last_assistant_message")
    return DrainFacts(phase, payload.session, payload.cwd, label=event, opening=opening, frequent=frequent,
                      launch=launch, find_launch=lambda: launch_of(environ), account=account,
                      surface=surface_of(environ.get("CLAUDE_CODE_ENTRYPOINT")), name=name,
                      final_text=final if isinstance(final, str) else None,
                      run_start=event == "UserPromptSubmit",  # a prompt begins a run (a wake-up's notification too)
                      new_context=event == OPENING_EVENT and payload.source in NEW_CONTEXT_SOURCES,
                      fast_key=fast_key_of(payload, environ), event_key=lambda: event_key_of(payload.data),
                      context_unit="utf-16")  # Claude Code measures its 10,000 inline limit so (core/render.py)


def fast_key_of(payload: Payload, environ: "Mapping[str, str]") -> "Optional[str]":
    """The name the stub (hooks/hook.sh, with clients/claude/stub.py's values) looks this launch's
    fast-path stamp up by, `<session id>@<CLAUDE_PID>`: spelled from the hook's environment alone, so the stub needs
    no payload. None when the environment does not name this very session."""
    sid, pid = environ.get("CLAUDE_CODE_SESSION_ID"), environ.get("CLAUDE_PID") or ""
    if not sid or sid != payload.session or not pid.isdigit():
        return None
    return f"{sid}@{pid}"


def session_of(environ: "Mapping[str, str]") -> "Optional[str]":
    """The session this process runs in, when Claude Code says (a Bash tool call's environment)."""
    return environ.get("CLAUDE_CODE_SESSION_ID") or None


def answer(event: str, context: "Optional[str]", notice: "Optional[str]",
           shown: "Optional[Shown]" = None) -> "Optional[str]":
    """The hook's stdout for an outcome; None when there is nothing to say. Context reaches the
    model only at a showing event (at Stop it would start another turn): elsewhere the notice
    alone, to the user. `shown` (core/shown.Shown) sums up the mail in `context`: the person is
    told in one line, beside the notice, that the model was shown it; the mail itself goes into
    the context only, once."""
    if context and event in SHOW_EVENTS:
        if shown:
            notice = f"{notice}\n{shown.line()}" if notice else shown.line()
        return context_output(event, context, notice=notice)
    if notice:
        return user_notice_output(notice)
    return None


def context_output(event: str, text: str, notice: "Optional[str]" = None) -> str:
    """Output that puts `text` into the model's context at a showing event (and, when given,
    `notice` before the user only)."""
    out: "Dict[str, Any]" = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    if notice:
        out["systemMessage"] = notice
    return json.dumps(out, ensure_ascii=True)


def user_notice_output(text: str) -> str:
    """Output shown to the user only (faults at Stop): the model never sees it."""
    return json.dumps({"systemMessage": text}, ensure_ascii=True)


def fault_output(event: str, text: str) -> str:
    """A fault in the form the event shows: the user's channel; at SessionStart the model's too,
    because that is where a reader decides whether mail works at all."""
    if event == "SessionStart":
        return json.dumps({"systemMessage": text,
                           "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                          ensure_ascii=True)
    return user_notice_output(text)


def check_answer(event: str, stdout: str) -> "Optional[str]":
    """None when a hook's stdout is an answer Claude Code accepts at `event` and carries no fault;
    otherwise what is wrong (clients/hookjson.py: the same for every client)."""
    return hookjson.check_answer(event, stdout)


# The wake-up tier (docs/HOOKS.md): install --urgent adds a second CONSUME_EVENT entry that runs
# the stub as `<stub> Watch`, async and asyncRewake, which runs `drain --watch`.
WATCH_ARG = "Watch"


def wake_facts(environ: "Mapping[str, str]", pid: int) -> "Tuple[Optional[str], Callable[[], bool]]":
    """(why Claude Code's process `pid` cannot be woken, or None; a check that it still can)."""
    from git_korus_mail.clients.claude.wakeable import wake_facts as facts
    return facts(environ, pid)


def pre_edit_paths(payload: Payload) -> "Optional[list[str]]":
    """The files an editing tool is about to write ([] for another tool), or None when the event
    is no pre-edit event."""
    if payload.event != PRE_EDIT_EVENT:
        return None
    tool = payload.raw.get("tool_name")
    args = payload.raw.get("tool_input")
    if tool not in EDIT_TOOLS or not isinstance(args, dict):
        return []
    found = [args.get(k) for k in ("file_path", "notebook_path")]
    return [p for p in found if isinstance(p, str) and p and "\0" not in p]


def pre_edit_output(text: str, block: bool) -> str:
    """The answer before an edit of reserved paths: the refusal (told once, or a `--block`
    reservation's) or the tell as context (clients/hookjson.py: Codex's PreToolUse takes the
    same shape)."""
    return hookjson.pre_tool_use_output(PRE_EDIT_EVENT, text, block)
