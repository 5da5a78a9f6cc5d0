"""What Claude Code and Codex both accept as a hook's answer on stdout: one JSON object, with an
optional hookSpecificOutput for the event and systemMessage, the channel our faults use
(docs/CLIENTS.md). Install's self-test checks the stub's answer with it; the drain's answers
are each client's own (clients/<client>/protocol.py: Codex cuts its context to fit)."""

from git_korus_mail import fastjson as json  # the parser the drain's answers are written with

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Optional


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
