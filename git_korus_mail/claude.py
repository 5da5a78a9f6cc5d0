"""Claude Code: the hook protocol (JSON in on stdin, JSON out on stdout) and its settings files.

Everything client-specific lives here, so a second client is one more module.
Facts this follows (Claude Code 2.1.332, observed):
- every payload carries session_id, transcript_path, cwd, hook_event_name;
- `hookSpecificOutput.additionalContext` reaches the model at SessionStart,
  UserPromptSubmit and PostToolUse; at Stop it would start another turn, so the
  drain never uses it there;
- `systemMessage` reaches only the user: the channel for faults;
- context over 10,000 characters is not sent inline (it is saved to a file), so the
  drain's cap sits well below it;
- a wrong type in the output drops the whole output: we print only our own keys
  and only strings.
"""

import json

SHOW_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse")
CONSUME_EVENT = "Stop"
END_EVENT = "SessionEnd"
EVENTS = SHOW_EVENTS + (CONSUME_EVENT, END_EVENT)
INLINE_LIMIT = 10_000  # Claude Code's inline limit for additionalContext / plain stdout


class Payload:
    """The fields of a hook payload the drain uses."""

    __slots__ = ("event", "session", "cwd", "source", "raw")

    def __init__(self, event, session, cwd, source, raw):
        self.event, self.session, self.cwd, self.source, self.raw = event, session, cwd, source, raw


class BadPayload(Exception):
    pass


def read_payload(data):
    """Parse stdin bytes; BadPayload when it is not a hook payload we can act on."""
    try:
        raw = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        raise BadPayload("stdin is not JSON") from None
    if not isinstance(raw, dict):
        raise BadPayload("stdin is not a JSON object")
    event = raw.get("hook_event_name")
    session = raw.get("session_id")
    cwd = raw.get("cwd")
    if not isinstance(event, str) or not event:
        raise BadPayload("no hook_event_name")
    if not isinstance(session, str) or not session:
        raise BadPayload("no session_id")
    if not isinstance(cwd, str) or not cwd:
        raise BadPayload("no cwd")
    source = raw.get("source") if isinstance(raw.get("source"), str) else None
    return Payload(event, session, cwd, source, raw)


def context_output(event, text):
    """Output that puts `text` into the model's context at a showing event."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                      ensure_ascii=True)


def user_notice_output(text):
    """Output shown to the user only (faults at Stop): the model never sees it."""
    return json.dumps({"systemMessage": text}, ensure_ascii=True)


def fault_output(event, text):
    """A fault in the form the event shows: the user's channel; at SessionStart the model's too,
    because that is where a reader decides whether mail works at all."""
    if event == "SessionStart":
        return json.dumps({"systemMessage": text,
                           "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                          ensure_ascii=True)
    return user_notice_output(text)
