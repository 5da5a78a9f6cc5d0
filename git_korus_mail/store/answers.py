"""Questions, their answers, and the asks that wait for them (docs/STORE.md, "Questions").

Three records, each written whole in tmp/ and linked into place (never torn):
- `box/<asked>/answers/<question id>.json`, in the box of the worktree that was asked: the
  decision. Created exclusively, so of an explicit `reply` and an automatic answer racing
  (separate processes) exactly one wins; the loser reads the winner's record. It holds the
  whole answer message, so whoever finds the answer not yet in the asker's box publishes it
  (`publish_answer`), under the answer's claim in the asker's box, once:
  `box/<asker>/published/<answer id>.json` records that it was.
- `box/<asked>/asked/<question id>.json`: an index of the questions a box was asked, for
  `status` (bookkeeping: its loss costs a line of report, never a question).
- `mail/waits/<question id>.json`: an ask blocked on its answer: asker, target, deadline and
  the owner process. A wait whose owner is provably dead does not count, and is swept.
"""

import time

from git_korus_mail import crash
from git_korus_mail import fastjson as json
from git_korus_mail.errors import MailError
from git_korus_mail.store import claims, fifo, message, moves, publish, records
# the publication record is the box's (records.py), which a move's repair also completes
from git_korus_mail.store.records import PUBLISH_PURPOSE, PUBLISHED, mark_published
from git_korus_mail.store.layout import MSG_SUFFIX

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.store.files import Box, MailRoot
    from git_korus_mail.store.message import Message

ANSWERS = "answers"
ASKED = "asked"
WAITS = "waits"
PUBLISH_PATIENCE = 0.5  # seconds a publisher waits for a live holder of the answer's claim
RECORD_LIMIT = 8 * 1024 * 1024  # an answer record holds a whole message (body up to 32 KiB, escaped)


# -- answers: the decision ------------------------------------------------------
def decide(box: "Box", qid: str, record: "Dict[str, Any]") -> "Optional[Dict[str, Any]]":
    """Record the answer to `qid`; None when this call decided it, else the record that won
    (an empty dict when the winner's record cannot be read)."""
    d = box.ensure_sub(ANSWERS)
    try:
        d.create_staged(qid + MSG_SUFFIX, json.dumps(record, sort_keys=True).encode(), box.root.tmp,
                        "answer", sync=True)
    except FileExistsError:
        return answer_of(box, qid) or {}
    crash.point("answer:decided")
    _signal(box.root, qid)
    return None


def answer_of(box: "Box", qid: str) -> "Optional[Dict[str, Any]]":
    """The answer record of question `qid` in the asked box, or None (none yet, or unreadable)."""
    d = box.open_sub(ANSWERS)
    rec = d.read_json(qid + MSG_SUFFIX, RECORD_LIMIT) if d is not None else None
    return rec if isinstance(rec, dict) and isinstance(rec.get("message"), dict) else None


def is_answered(box: "Box", qid: str) -> bool:
    return box.has(ANSWERS, qid + MSG_SUFFIX)


def publish_answer(root: "MailRoot", rec: "Dict[str, Any]") -> str:
    """Make sure the answer message of a decided record is in the asker's box, in some state.
    Returns "published" (this call did), "there" (it already was, or a live process is putting
    it there or consuming it now), or "nowhere" (no box).

    Published once, ever (issue 22): the check and the link are one decision, taken under the
    answer's claim in the asker's box (the claim every consume, expire and prune of it takes
    too), and `published/<answer id>.json` records it for good once made. So a publisher that
    stalled after its check cannot link the answer again after the ask consumed it, and a late
    losing `reply` cannot put it back after retention pruned it (the record is never pruned)."""
    msg = rec["message"]
    to = msg.get("to") or {}
    box = root.box(str(to.get("key")), create=True, path=to.get("path"))
    if box is None:
        return "nowhere"
    aid = str(msg["id"])
    if box.has(PUBLISHED, aid + MSG_SUFFIX):
        return "there"
    owner = claims.me(PUBLISH_PURPOSE)
    if moves.claim(box, aid, owner, patience=PUBLISH_PATIENCE, queued=False) != "won":
        return "there"  # a live holder: a consume of the queued answer, or another publisher
    try:
        if box.has(PUBLISHED, aid + MSG_SUFFIX):
            return "there"
        result = "there"
        if records.fate(box, aid)[0] == "gone":
            try:
                # again: a publisher killed between staging and linking leaves the staging file behind
                publish.publish(box, msg, message.encode(msg), again=True)
                result = "published"
            except MailError:
                pass  # queued already (by a publisher of an older version): it is there
            crash.point("answer:published")
        mark_published(box, aid, rec.get("question"))
        return result
    finally:
        moves.release(box, aid, owner)


# -- questions a box was asked ---------------------------------------------------
def note_asked(box: "Box", msg: "Message") -> None:
    rec = {"id": msg["id"], "from": (msg.get("from") or {}).get("path"), "sent_at": msg["sent_at"],
           "expires_at": msg["expires_at"]}
    try:
        box.ensure_sub(ASKED).create_exclusive(msg["id"] + MSG_SUFFIX, json.dumps(rec, sort_keys=True).encode(),
                                               sync=False)
    except FileExistsError:
        pass


def asked(box: "Box") -> "List[Dict[str, Any]]":
    """The questions this box was asked (newest first), each with its answer record or None."""
    d = box.open_sub(ASKED)
    if d is None:
        return []
    out: "List[Dict[str, Any]]" = []
    for name in sorted((n for n in d.names() if n.endswith(MSG_SUFFIX)), reverse=True):
        rec = d.read_json(name)
        if isinstance(rec, dict) and message.valid_id(rec.get("id")):
            out.append({**rec, "answer": answer_of(box, str(rec["id"]))})
    return out


# -- open waits --------------------------------------------------------------------
def open_wait(root: "MailRoot", qid: str, asker: str, target: str, deadline: float,
              launch: "Optional[str]", target_clone: "Optional[str]" = None) -> None:
    """Record that this process now waits for the answer to `qid` (asker and target: box keys).
    `target_clone`: the target is a box of another clone, by that clone's id (an ask across,
    docs/RELAY.md "A wait cycle across clones"): `cycle` passes it over, relay/asking.py follows it."""
    from git_korus_mail.store import life
    life.hold(root)  # so its owner is proven alive or dead from any pid namespace (a sandbox's)
    rec: "Dict[str, Any]" = {"question": qid, "asker": asker, "target": target, "deadline": deadline,
                             "launch": launch, "owner": claims.me("ask", root=root)}
    if target_clone is not None:
        rec["target_clone"] = target_clone
    root.dir.ensure_sub(WAITS).create_staged(qid + MSG_SUFFIX, json.dumps(rec, sort_keys=True).encode(),
                                             root.tmp, "wait", sync=False)


def close_wait(root: "MailRoot", qid: str) -> None:
    d = root.dir.open_sub(WAITS)
    if d is not None:
        d.unlink_quiet(qid + MSG_SUFFIX)
        d.unlink_quiet(qid + SIGNAL_SUFFIX)


# -- the answer's signal: how a waiting ask learns at once that its answer was decided ---------
# `mail/waits/<question id>.signal` is a FIFO the ask holds open (read and write, so it never
# reads an end of file) while it waits; `decide` writes a byte to it after the answer record is
# linked. A wake-up only: the answer is the record, which the ask reads as before, and an ask
# that sees no signal (none made, an answerer of an older version, a killed ask's leftover)
# still looks every SIGNAL_POLL seconds (issue 26: the answer reaches stdout without a poll's wait).
SIGNAL_SUFFIX = ".signal"


def open_signal(root: "MailRoot", qid: str) -> "Optional[int]":
    """A file descriptor that becomes readable when the answer to `qid` is decided, or None
    where one cannot be made (the caller then only polls). Close it with `close_signal`."""
    import os
    import stat
    try:
        d = root.dir.ensure_sub(WAITS)
    except (OSError, MailError):
        return None
    fd = fifo.open_fifo(d, qid + SIGNAL_SUFFIX)  # `ask --again` after a killed ask: its FIFO serves again
    if fd is None:
        return None
    if stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
        try:
            os.fchmod(fd, 0o600)  # whatever the umask: every file of the store is 0600 (tests/test_umask.py)
        except OSError:
            pass
    return fd


def close_signal(fd: "Optional[int]") -> None:
    if fd is not None:
        import os
        os.close(fd)


def _signal(root: "MailRoot", qid: str) -> None:
    """Wake the ask waiting on `qid`, if one holds its signal open: never blocks, never fails
    the answer (no FIFO, no reader, a full pipe or anything else there is only no wake-up)."""
    d = root.dir.open_sub(WAITS)
    if d is not None:
        fifo.poke_fifo(d, qid + SIGNAL_SUFFIX)


def live_waits(root: "MailRoot", now: "Optional[float]" = None) -> "List[Dict[str, Any]]":
    """Every open wait whose owner may still run, whose deadline has not passed and whose question
    is not answered yet. A wait whose owner is provably dead (killed by the tool's timeout, the
    user's Esc, its pid namespace gone: the one liveness rule, claims.judge) is removed here; one
    whose question has its answer waits on nothing, so it is passed over (its ask removes it)."""
    now = time.time() if now is None else now
    d = root.dir.open_sub(WAITS)
    if d is None:
        return []
    out: "List[Dict[str, Any]]" = []
    for name in d.names():
        if not name.endswith(MSG_SUFFIX):
            continue
        rec = d.read_json(name)
        if not isinstance(rec, dict) or not isinstance(rec.get("asker"), str) or not isinstance(rec.get("target"), str):
            continue
        if claims.owner_is_dead(rec.get("owner"), root):
            d.unlink_quiet(name)
            d.unlink_quiet(name[:-len(MSG_SUFFIX)] + SIGNAL_SUFFIX)  # a killed ask's FIFO goes with its wait
            continue
        deadline = rec.get("deadline")
        if isinstance(deadline, (int, float)) and deadline < now:
            continue
        if _answered(root, rec):
            continue
        out.append(rec)
    return out


def _answered(root: "MailRoot", wait: "Dict[str, Any]") -> bool:
    qid, target = wait.get("question"), wait["target"]
    if wait.get("target_clone") is not None:
        return False  # a box on another clone: its answer comes as mail, and its ask then ends the wait
    if not message.valid_id(qid) or "/" in target or target in ("", ".", ".."):
        return False  # not a record we wrote: a name that is no single box
    try:
        box = root.box(target)
    except (OSError, MailError):
        return False
    return box is not None and is_answered(box, str(qid))


def release_wait(root: "MailRoot", qid: str, seen: "Dict[str, Any]") -> bool:
    """Remove the wait on `qid` that a person released, only while it is still the record `seen`
    they were shown (a new ask of the same id cannot be: ids are unique). True when removed."""
    if read_wait(root, qid) != seen:
        return False
    d = root.dir.open_sub(WAITS)
    return d is not None and d.unlink_quiet(qid + MSG_SUFFIX)


def open_waits(root: "MailRoot") -> "List[Dict[str, Any]]":
    """Every wait record as it is, with `answered` set (doctor): nothing is judged or swept."""
    d = root.dir.open_sub(WAITS)
    out: "List[Dict[str, Any]]" = []
    if d is None:
        return out
    for name in sorted(d.names()):
        rec = d.read_json(name) if name.endswith(MSG_SUFFIX) else None
        if isinstance(rec, dict) and isinstance(rec.get("asker"), str) and isinstance(rec.get("target"), str):
            out.append({**rec, "answered": _answered(root, rec)})
    return out


def read_wait(root: "MailRoot", qid: str) -> "Optional[Dict[str, Any]]":
    """The open wait on question `qid` (`release`), or None."""
    d = root.dir.open_sub(WAITS)
    rec = d.read_json(qid + MSG_SUFFIX) if d is not None else None
    return rec if isinstance(rec, dict) else None


def cycle(waits: "List[Dict[str, Any]]", asker: str, target: str) -> "Optional[List[Dict[str, Any]]]":
    """The chain of open waits that leads from `target` back to `asker`, if any: asking would
    then wait on itself (A asks B while B waits on A, or through any number of waits)."""
    by_asker: "Dict[Any, List[Tuple[Any, Dict[str, Any]]]]" = {}
    for w in waits:
        if w.get("target_clone") is None:  # one on another clone's box: relay/asking.py follows it
            by_asker.setdefault(w["asker"], []).append((w["target"], w))
    return chain(by_asker, target, asker)


def chain(waits_of: "Dict[Any, List[Tuple[Any, Dict[str, Any]]]]", start: "Any",
          goal: "Any") -> "Optional[List[Dict[str, Any]]]":
    """The waits, one after another, that lead from `start` to `goal` (a node: a box key here, a
    (clone, box key) across clones); `waits_of[node]` lists (the node it waits on, the wait)."""
    stack: "List[Tuple[Any, List[Dict[str, Any]]]]" = [(start, [])]
    seen = set()
    while stack:
        node, path = stack.pop()
        if node == goal and path:
            return list(path)
        if node in seen:
            continue
        seen.add(node)
        for nxt, w in waits_of.get(node, []):
            stack.append((nxt, path + [w]))
    return None
