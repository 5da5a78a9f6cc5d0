"""The hook JSON that Claude Code, Codex and Gemini share: one JSON object in on stdin (session_id,
cwd, hook_event_name), one out on stdout with an optional hookSpecificOutput for the event and
systemMessage, the person's line and the channel our faults use (docs/CLIENTS.md).

- `check_answer`: install's self-test checks the stub's answer with it.
- `read_fields`: the fields every payload must carry, checked alike for each client.
- `Answers`: a client's answers, with that client's values: its showing events, its opening
  event, and its context limit in its own unit (Codex: UTF-8 bytes; Gemini: UTF-16 units).
  Codex and Gemini bind one each (clients/<client>/protocol.py keeps the module-level names).
"""

from git_korus_mail import fastjson as json  # the parser the drain's answers are written with

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

    from git_korus_mail.clients.interface import Shown


def check_answer(event: str, stdout: str) -> "Optional[str]":
    """None when a hook's stdout is an answer the client accepts at `event` and carries no
    fault; otherwise what is wrong. Empty output is accepted (the hook said nothing)."""
    text = stdout.strip()
    if not text:
        return None
    try:
        answer = json.loads(text)
    except ValueError:
        return f"output is not JSON: {text[:120]!r}"
    if not isinstance(answer, dict):
        return "output is not a JSON object"
    spec = answer.get("hookSpecificOutput")
    if spec is not None:
        if not isinstance(spec, dict) or spec.get("hookEventName") != event:
            return f"hookSpecificOutput.hookEventName is not {event}"
        if "additionalContext" in spec and not isinstance(spec["additionalContext"], str):
            return "hookSpecificOutput.additionalContext is not a string"
    message = answer.get("systemMessage")
    if message is not None:
        # the channel faults use: a drain that reports one is not working (the line that says
        # which mail was shown uses it too, but a self-test's run shows none)
        return f"the hook reported: {message}" if isinstance(message, str) else "systemMessage is not a string"
    return None


def read_fields(data: bytes, max_cwd: int,
                bad: "Type[Exception]") -> "Tuple[Dict[str, Any], str, str, str]":
    """(payload, event, session, cwd) of stdin bytes; `bad` (the client's BadPayload) when it
    is not a hook payload we can act on."""
    try:
        raw = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        raise bad("stdin is not JSON") from None
    if not isinstance(raw, dict):
        raise bad("stdin is not a JSON object")
    event, session, cwd = raw.get("hook_event_name"), raw.get("session_id"), raw.get("cwd")
    if not isinstance(event, str) or not event:
        raise bad("no hook_event_name")
    if not isinstance(session, str) or not session:
        raise bad("no session_id")
    if not isinstance(cwd, str) or not cwd:
        raise bad("no cwd")
    if "\0" in cwd:
        raise bad("cwd contains a NUL character")
    if len(cwd) > max_cwd:
        raise bad(f"cwd is {len(cwd)} characters long, over {max_cwd}")
    return raw, event, session, cwd


def optional_str(raw: "Dict[str, Any]", key: str) -> "Optional[str]":
    """A payload's string field, when it is one that can name a file (no NUL, not empty)."""
    value = raw.get(key)
    return value if isinstance(value, str) and value and "\0" not in value else None


def _frame_line(line: str, end: bool) -> bool:
    return line.startswith("[mail ") and line.endswith(" end]" if end else " begin]")


class Answers:
    """One client's answers on stdout. Per client: its `label` (in the cut note), the events
    whose context reaches the model (`show_events`), the one that also tells the model a fault
    (`opening_event`), and the context `limit` in `units`, the client's own measure of text."""

    def __init__(self, label: str, show_events: "Sequence[str]", opening_event: str, limit: int,
                 units: "Callable[[str], int]") -> None:
        self.label, self.show_events, self.opening_event = label, tuple(show_events), opening_event
        self.limit, self.units = limit, units

    def fit(self, text: str, limit: "Optional[int]" = None) -> str:
        """`text` within `limit` (default: the client's) in the client's unit. Mail never needs
        this: the core fits a batch at whole messages in that unit (drain_facts), so every
        receipt is true. It guards any other text we pass: whole lines from the start, never
        part of a frame (a frame cut open would let the next line pass as its body), then one
        line of ours."""
        limit = self.limit if limit is None else limit
        if self.units(text) <= limit:
            return text
        lines = text.split("\n")
        room = limit - 200  # the note's line
        kept: "List[str]" = []
        used, open_at = 0, None
        for line in lines:
            n = self.units(line) + 1
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
        note = (f"korus-mail: {len(lines) - len(kept)} more lines cut here to fit {self.label}'s context limit; "
                f"`git korus-mail status` lists what this worktree received")
        return "\n".join(kept + [note])

    def answer(self, event: str, context: "Optional[str]", notice: "Optional[str]",
               shown: "Optional[Shown]" = None) -> "Optional[str]":
        """The hook's stdout for an outcome; None when there is nothing to say. Context reaches
        the model only at a showing event (elsewhere it could start another turn: Gemini's
        AfterAgent, Codex's Stop); elsewhere the notice alone, to the person. `shown`
        (core/shown.Shown) sums up the mail in `context` in one line for the person
        (systemMessage); the mail itself goes into the context only."""
        if context and event in self.show_events:
            if shown:
                notice = f"{notice}\n{shown.line()}" if notice else shown.line()
            return self.context_output(event, context, notice=notice)
        if notice:
            return self.user_notice_output(notice)
        return None

    def context_output(self, event: str, text: str, notice: "Optional[str]" = None) -> str:
        out: "Dict[str, Any]" = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": self.fit(text)}}
        if notice:
            out["systemMessage"] = notice
        return json.dumps(out, ensure_ascii=True)

    def user_notice_output(self, text: str) -> str:
        """Output the client shows the person only: the model never sees it."""
        return json.dumps({"systemMessage": text}, ensure_ascii=True)

    def fault_output(self, event: str, text: str) -> str:
        """A fault: to the person, and at the opening event to the model too."""
        if event == self.opening_event:
            return json.dumps({"systemMessage": text,
                               "hookSpecificOutput": {"hookEventName": event, "additionalContext": self.fit(text)}},
                              ensure_ascii=True)
        return self.user_notice_output(text)


def pre_tool_use_output(event: str, text: str, block: bool) -> str:
    """The answer before an edit of reserved paths where the client's pre-tool event takes Claude
    Code's shape (Claude Code's and Codex's PreToolUse; Gemini's BeforeTool has its own,
    clients/gemini/preedit.py). `block` (the told-once refusal, or a `--block` reservation's):
    `permissionDecision: "deny"`, whose reason the model reads as the tool's output before the
    tool runs; otherwise the tell as context, which both clients place after the tool's result
    (docs/HOOKS.md, "Before an edit"). The person is shown the first line either way
    (systemMessage). `text` already fits the client's limit."""
    out: "Dict[str, Any]" = {"hookEventName": event}
    if block:
        out["permissionDecision"] = "deny"
        out["permissionDecisionReason"] = text
    else:
        out["additionalContext"] = text
    first = text.split("\n", 1)[0][:300]
    return json.dumps({"hookSpecificOutput": out, "systemMessage": ("refused an edit: " if block else "") + first},
                      ensure_ascii=True)
