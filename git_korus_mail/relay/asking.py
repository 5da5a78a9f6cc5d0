"""`ask` of a worktree on another clone (docs/RELAY.md, "Questions across machines"), the
asker's side; no nats. The question goes through this clone's outbox like any remote mail.
It is answered on the other clone as a local question is (an explicit `reply`, or the
automatic answer at the Stop of the session shown it: core/answer.py decides there, once),
and its answer comes back across as mail into the asker's box. `ask` waits for that mail,
prints it, and consumes it for the asking session, as a local ask settles its answer.
"""

import os
import time

from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store import message, moves

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Set

POLL = 0.05


def wait(root: "Any", key: str, qid: str, timeout: float,
         sleep: "Callable[[float], None]" = time.sleep) -> "Optional[Dict[str, Any]]":
    """The answer to `qid` once it is queued in box `key` (this worktree's), or None after
    `timeout` seconds (it arrives later as ordinary mail all the same)."""
    end = time.monotonic() + timeout
    other: "Set[str]" = set()  # queued mail that is no answer to it: read once
    while True:
        box = root.box(key)
        for mid in (box.inbox_ids()[0] if box is not None else ()):
            if mid in other:
                continue
            try:
                msg, _ = box.load(mid)
            except (OSError, ValueError, message.Invalid):
                continue  # the drain quarantines what cannot be read
            if msg.get("kind") == message.KIND_ANSWER and msg.get("in_reply_to") == qid:
                return dict(msg)
            other.add(mid)
        if time.monotonic() >= end:
            return None
        sleep(POLL)


def delivered(root: "Any", key: str, answer: "Dict[str, Any]", session: "Optional[str]", qid: str) -> str:
    """The answer is on the asker's stdout: consumed for the asking session (or `ask` outside a
    client), so no drain shows it again. Returns moves.consume's result."""
    box = root.box(key)
    if box is None:
        return "gone"
    obs = {"by": "ask", "question": qid, "pid": os.getpid(), "at": utc_stamp(time.time())}
    got = moves.consume(box, str(answer["id"]), session or "ask", obs)
    root.journal("answer-delivered", id=qid, answer=answer.get("id"), to="ask")
    return got


def came(root: "Any", key: str, common_dir: str, qid: str) -> "Optional[Dict[str, Any]]":
    """The answer to `qid` if it came already: queued in box `key` (marked `_queued`, to be
    settled), or consumed there (its id noted on the question's relay record), else None."""
    from git_korus_mail.relay import local
    queued = wait(root, key, qid, 0)
    if queued is not None:
        return dict(queued, _queued=True)
    noted = (local.read_entry(common_dir, local.SENT, qid) or {}).get("answer")
    box = root.box(key)
    if not isinstance(noted, dict) or box is None:
        return None
    try:
        msg, _ = box.load(str(noted.get("answer_id")), "seen")
    except (OSError, ValueError, message.Invalid):
        return None
    return dict(msg)
