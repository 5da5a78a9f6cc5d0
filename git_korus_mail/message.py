"""The message format: one UTF-8 JSON file per message, and the checks a reader makes.

A file in an inbox is hostile input: anyone running as the user can write one. So
`parse` checks every field's type and shape and raises Invalid with a reason that
the drain quarantines under; nothing here trusts the sender's own checks.
"""

import json
import os
import re
import time

FORMAT_VERSION = 1
MAX_BODY_BYTES = 32 * 1024          # sender's limit (advice: the drain caps on render)
MAX_FILE_BYTES = 8 * 1024 * 1024    # reader's limit: larger files are quarantined
DEFAULT_TTL_MINUTES = 4320          # 3 days: an overnight gap lost mail at 720 (seed step 6)

# \Z, not $: `$` also matches before a trailing newline, which let "note\n" pass as a kind
KIND_RE = re.compile(r"[a-z][a-z0-9-]{0,15}\Z")
ID_RE = re.compile(r"\d{8}T\d{6}\.\d{6}Z-p\d{1,10}-[0-9a-f]{16}\Z")
SESSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
STAMP_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z\Z")


class Invalid(Exception):
    """The file is not a valid message; the text says why (first words distinguish causes)."""


# -- time ------------------------------------------------------------------
def utc_stamp(t):
    """ISO 8601 UTC with microseconds: sortable, unambiguous, as-of times everywhere."""
    secs = int(t)
    us = int(round((t - secs) * 1_000_000))
    if us >= 1_000_000:
        secs, us = secs + 1, us - 1_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{us:06d}Z"


def parse_stamp(s):
    """Seconds since the epoch for a stamp written by utc_stamp (or without microseconds)."""
    if not isinstance(s, str) or not STAMP_RE.match(s):
        raise ValueError("not a UTC stamp")  # strict: nothing may ride along behind the digits
    main, _, frac = s[:-1].partition(".")
    tm = time.strptime(main, "%Y-%m-%dT%H:%M:%S")
    import calendar  # only readers of stored times need it
    return calendar.timegm(tm) + (int(frac.ljust(6, "0")[:6]) / 1e6 if frac else 0.0)


def human_age(seconds):
    seconds = int(max(0, seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


# -- ids -------------------------------------------------------------------
def new_id(t=None):
    """Maildir-style unique id that sorts by time: UTC to the microsecond, pid, 64 random bits.

    No '/' or ':' (both unsafe in file names on some systems)."""
    t = time.time() if t is None else t
    secs = int(t)
    us = int((t - secs) * 1_000_000)
    return (time.strftime("%Y%m%dT%H%M%S", time.gmtime(secs)) + f".{us:06d}Z"
            f"-p{os.getpid()}-{os.urandom(8).hex()}")


def id_time(msg_id):
    """Send time encoded in an id (seconds since the epoch)."""
    import calendar
    tm = time.strptime(msg_id[:15], "%Y%m%dT%H%M%S")
    return calendar.timegm(tm) + int(msg_id[16:22]) / 1e6


# -- building and parsing --------------------------------------------------
def build(body, to_path, to_key, sender, kind="note", ttl_minutes=DEFAULT_TTL_MINUTES, session=None, now=None):
    now = time.time() if now is None else now
    msg_id = new_id(now)
    return {
        "v": FORMAT_VERSION,
        "id": msg_id,
        "sent_at": utc_stamp(now),
        "expires_at": utc_stamp(now + ttl_minutes * 60),
        "kind": kind,
        "from": sender,
        "to": {"path": to_path, "key": to_key},
        "session": session,
        "body": body,
    }


def encode(msg):
    # ensure_ascii: the file is 7-bit whatever the body holds, so no reader's decoder can trip
    return (json.dumps(msg, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")


def parse(data, expected_id=None):
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
    if not isinstance(msg_id, str) or not ID_RE.match(msg_id):
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
    if not isinstance(kind, str) or not KIND_RE.match(kind):
        raise Invalid("bad kind")
    sender = msg.get("from")
    if not isinstance(sender, dict) or not all(
            v is None or isinstance(v, str) for v in sender.values()):
        raise Invalid("bad from")
    to = msg.get("to")
    if not isinstance(to, dict) or not isinstance(to.get("key"), str):
        raise Invalid("bad to")
    session = msg.get("session")
    if session is not None and not (isinstance(session, str) and SESSION_RE.match(session)):
        raise Invalid("bad session filter")
    return msg


def expires_at(msg):
    return parse_stamp(msg["expires_at"])
