"""The message format: one UTF-8 JSON file per message, and the checks a reader makes.

A file in an inbox is hostile input: anyone running as the user can write one. So
`parse` checks every field's type and shape and raises Invalid with a reason that
the drain quarantines under; nothing here trusts the sender's own checks.
"""

import os
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.stamps import epoch, parse_stamp, utc_stamp
from git_korus_mail.store.layout import valid_session as valid_session  # the `session` field; for callers

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Optional

    from git_korus_mail.store.shapes import AnswerStatus, Sender
    from git_korus_mail.store.shapes import Message as Message  # the shape `build` makes and `parse` checks

FORMAT_VERSION = 1
MAX_BODY_BYTES = 32 * 1024          # sender's limit (advice: the drain caps on render)
MAX_FILE_BYTES = 8 * 1024 * 1024    # reader's limit: larger files are quarantined
DEFAULT_TTL_MINUTES = 4320          # 3 days: an overnight gap lost mail at 720 (docs/DESIGN.md R9)
# The longest TTL send accepts: ten years. The drain honours any expires_at up to year 9999
# (stamps have four-digit years), so everything send accepts stays far inside what it reads.
MAX_TTL_MINUTES = 10 * 365 * 24 * 60

# Shapes checked with plain string tests rather than `re`, which costs the hook hot path
# several milliseconds to import. Each check is whole-string: nothing may ride along.
_DIGITS = frozenset("0123456789")
_HEX_CHARS = "0123456789abcdef"  # for str.strip: what is left after it is not lowercase hex
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_KIND_REST = _LOWER | _DIGITS | {"-"}

# Kinds with a meaning to the product (docs/CONTRACT.md, "Message format"); any other valid kind
# is a display label. `send` refuses these: only `ask` and `reply` write them.
KIND_QUESTION, KIND_ANSWER, KIND_REPLY = "question", "answer", "reply"
RESERVED_KINDS = (KIND_QUESTION, KIND_ANSWER, KIND_REPLY)
# An answer's status: done (the run's final text, given automatically), failed (the run ended
# in an error, or the session ended, with the question open), stopped (the user interrupted
# the run), answered (an explicit `reply`).
STATUSES = ("done", "failed", "stopped", "answered")


def _digits(s: str) -> bool:
    # str methods run in C: a drain checks every queued name (1,000 queued: ~10x faster than a
    # loop over characters, issue 26). isdigit() alone admits non-ASCII digits such as U+0663
    return s.isdigit() and s.isascii()


def valid_kind(s: "Any") -> bool:
    """[a-z][a-z0-9-]{0,15}"""
    return isinstance(s, str) and 1 <= len(s) <= 16 and s[0] in _LOWER and all(c in _KIND_REST for c in s)


def valid_id(s: "Any") -> bool:
    """YYYYMMDDTHHMMSS.ffffffZ-p<pid>-<16 hex>, as new_id writes it."""
    if not isinstance(s, str) or len(s) < 43 or s[8] != "T" or s[15] != "." or s[22:25] != "Z-p":
        return False
    pid, sep, rand = s[25:].partition("-")
    return (_digits(s[:8]) and _digits(s[9:15]) and _digits(s[16:22]) and sep == "-"
            and _digits(pid) and len(pid) <= 10 and len(rand) == 16 and not rand.strip(_HEX_CHARS))


class Invalid(Exception):
    """The file is not a valid message; the text says why (first words distinguish causes)."""


# -- ids -------------------------------------------------------------------
def new_id(t: "Optional[float]" = None) -> str:
    """Maildir-style unique id that sorts by time: UTC to the microsecond, pid, 64 random bits.

    No '/' or ':' (both unsafe in file names on some systems)."""
    t = time.time() if t is None else t
    secs = int(t)
    us = int((t - secs) * 1_000_000)
    return (time.strftime("%Y%m%dT%H%M%S", time.gmtime(secs)) + f".{us:06d}Z"
            f"-p{os.getpid()}-{os.urandom(8).hex()}")


def id_time(msg_id: "Any") -> float:
    """Send time encoded in an id (seconds since the epoch); ValueError for a malformed id."""
    if not valid_id(msg_id):
        raise ValueError("not a message id")
    t = epoch(int(msg_id[0:4]), int(msg_id[4:6]), int(msg_id[6:8]), int(msg_id[9:11]), int(msg_id[11:13]),
              int(msg_id[13:15]))
    return t + int(msg_id[16:22]) / 1e6


# -- building and parsing --------------------------------------------------
def build(body: str, to_path: str, to_key: str, sender: "Sender", kind: str = "note",
          ttl_minutes: float = DEFAULT_TTL_MINUTES, session: "Optional[str]" = None,
          now: "Optional[float]" = None, in_reply_to: "Optional[str]" = None, thread: "Optional[str]" = None,
          status: "Optional[AnswerStatus]" = None, wake: "Optional[bool]" = None) -> "Message":
    """A new message. The optional fields are written only when given, so a note is the same
    file it always was (old readers and old mail stay valid)."""
    now = time.time() if now is None else now
    msg: "Message" = {
        "v": FORMAT_VERSION,
        "id": new_id(now),
        "sent_at": utc_stamp(now),
        "expires_at": utc_stamp(now + ttl_minutes * 60),
        "kind": kind,
        "from": sender,
        "to": {"path": to_path, "key": to_key},
        "session": session,
        "body": body,
    }
    if in_reply_to is not None:
        msg["in_reply_to"] = in_reply_to
    if thread is not None:
        msg["thread"] = thread
    if status is not None:
        msg["status"] = status
    if wake is not None:
        msg["wake"] = wake
    return msg


def encode(msg: "Message") -> bytes:
    # ensure_ascii: the file is 7-bit whatever the body holds, so no reader's decoder can trip
    return (json.dumps(msg, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")


def parse(data: bytes, expected_id: "Optional[str]" = None) -> "Message":
    """Decode and validate message bytes; Invalid(reason) when they are not a message we wrote."""
    text = data.decode("utf-8", "replace")  # invalid UTF-8 is replaced, never fatal
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Invalid(f"bad JSON: {str(exc)[:60]}") from None
    if not isinstance(msg, dict):
        raise Invalid("bad JSON: not an object")
    if msg.get("v") != FORMAT_VERSION:
        raise Invalid(f"wrong version: {str(msg.get('v'))[:20]!r}")
    msg_id = msg.get("id")
    if not valid_id(msg_id):
        raise Invalid("bad id")
    if expected_id is not None and msg_id != expected_id:
        raise Invalid("id does not match file name")
    for field in ("sent_at", "expires_at"):
        try:
            parse_stamp(msg.get(field))
        except (ValueError, TypeError):
            raise Invalid(f"bad {field}") from None
    if not isinstance(msg.get("body"), str):
        raise Invalid("bad body: not a string")
    kind = msg.get("kind")
    if not valid_kind(kind):
        raise Invalid("bad kind")
    sender = msg.get("from")
    if not isinstance(sender, dict) or not all(
            v is None or isinstance(v, str) for v in sender.values()):
        raise Invalid("bad from")
    to = msg.get("to")
    if not isinstance(to, dict) or not isinstance(to.get("key"), str):
        raise Invalid("bad to")
    session = msg.get("session")
    if session is not None and not valid_session(session):
        raise Invalid("bad session filter")
    _check_optional(msg, str(kind))
    return _checked(msg)


def _checked(msg: "Any") -> "Message":
    """A decoded object `parse` has checked field by field: from here on it is a Message. (The
    checks are the ones above: the type checker cannot follow them, so this is where it is told.)"""
    checked: "Message" = msg
    return checked


def _check_optional(msg: "dict[str, Any]", kind: str) -> None:
    """The optional fields: absent is fine (older mail has none); present means the right shape."""
    for field in ("in_reply_to", "thread"):
        if field in msg and not valid_id(msg[field]):
            raise Invalid(f"bad {field}")
    if "wake" in msg and not isinstance(msg["wake"], bool):
        raise Invalid("bad wake: not true or false")
    if "status" in msg and (kind != KIND_ANSWER or msg["status"] not in STATUSES):
        raise Invalid("bad status" if kind == KIND_ANSWER else "bad status: only an answer has one")
    if kind == KIND_ANSWER and ("in_reply_to" not in msg or "status" not in msg):
        raise Invalid("bad answer: in_reply_to and status are required")
    if kind == KIND_REPLY and "in_reply_to" not in msg:
        raise Invalid("bad reply: in_reply_to is required")


def wakes(msg: "Message") -> bool:
    """Whether the message asks to wake an idle recipient: `wake` absent means yes; a question
    always does."""
    return msg.get("kind") == KIND_QUESTION or msg.get("wake", True) is not False


def thread_of(msg: "Message") -> str:
    """The id of the thread a message belongs to: its `thread`, or its own id (a first message)."""
    return str(msg.get("thread") or msg["id"])


def expires_at(msg: "Message") -> float:
    return parse_stamp(msg["expires_at"])
