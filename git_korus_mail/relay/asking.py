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
    from typing import Any, Callable, Dict, List, Optional, Set, Tuple

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


# -- a wait cycle across clones (docs/RELAY.md, "A wait cycle across clones") ------------------
# An ask across opens a wait record like a local ask (store/answers.py, with `target_clone`), and
# each relay puts its clone's open waits in its directory entry once a second. An ask, across or
# local, is refused when the waits of this clone and of the others lead from its target back to
# its asker: A asking B while B waits on A would have both wait until the timeout. The others'
# waits are as old as their directory entries: two asks that close a cycle within about a second
# of each other both go (each then ends at its timeout, and nothing is lost), as before.
STALE = 10.0  # seconds without a new revision of a clone's entry before its waits are not trusted


def published_waits(root: "Any", clone_id: str, now: "Optional[float]" = None) -> "List[Dict[str, Any]]":
    """This clone's open waits as its directory entry tells them: box keys, the target's clone,
    and the seconds left (a count, not a time: the other clones' clocks are not ours)."""
    from git_korus_mail.store import answers
    now = time.time() if now is None else now
    out: "List[Dict[str, Any]]" = []
    for w in answers.live_waits(root, now):
        deadline = w.get("deadline")
        out.append({"question": w.get("question"), "asker": w["asker"], "target": w["target"],
                    "target_clone": w.get("target_clone") or clone_id,
                    "left": max(0.0, deadline - now) if isinstance(deadline, (int, float)) else None})
    return out


def seen_at(revision: "Optional[int]", known: "Optional[Dict[str, Any]]", now: float) -> "Dict[str, Any]":
    """The fields the relay adds to a peer's entry in relay/peers.json: its revision, and when this
    clone first saw that revision by its own clock (a relay that stops leaves its entry as it
    was: its waits then stop counting after STALE seconds, whatever either clock says)."""
    if isinstance(known, dict) and known.get("rev") == revision and isinstance(known.get("seen_at"), (int, float)):
        return {"rev": revision, "seen_at": known["seen_at"]}
    return {"rev": revision, "seen_at": now}


def cycle_across(common_dir: str, root: "Any", asker: str, target_clone: str, target: str,
                 now: "Optional[float]" = None) -> "Optional[List[Dict[str, Any]]]":
    """The chain of open waits, on this clone and the others, that leads from `target` (a box of
    clone `target_clone`) back to `asker` (a box here), if any; None with no remote configured."""
    from git_korus_mail.relay import local
    from git_korus_mail.store import answers
    conf = local.load_config(common_dir)
    if conf is None:
        return None
    now = time.time() if now is None else now
    me = str(conf["clone"])
    by_asker: "Dict[Any, List[Tuple[Any, Dict[str, Any]]]]" = {}

    def add(cid: str, w: "Dict[str, Any]") -> None:
        w = {"clone": cid, "asker": w["asker"], "target_clone": w.get("target_clone") or cid,
             "target": w["target"], "question": w.get("question")}
        by_asker.setdefault((cid, w["asker"]), []).append(((w["target_clone"], w["target"]), w))
    for w in answers.live_waits(root, now):
        add(me, w)
    for cid, peer in (local.load_peers(common_dir) or {}).items():
        if cid == me or not isinstance(peer, dict):
            continue  # our own entry is what we published: the records themselves are fresher
        seen = peer.get("seen_at")
        if not isinstance(seen, (int, float)) or now - seen > STALE:
            continue
        for w in peer.get("waits") or ():
            if not (isinstance(w, dict) and all(isinstance(w.get(f), str) for f in ("asker", "target", "target_clone"))):
                continue  # not what a relay of ours writes: nothing to follow
            left = w.get("left")
            if isinstance(left, (int, float)) and seen + left < now:
                continue
            add(cid, w)
    return answers.chain(by_asker, (target_clone, target), (me, asker))


def refusal(common_dir: str, root: "Any", chain: "List[Dict[str, Any]]") -> str:
    """One line for a refused ask: who waits on whom, each box as <label>:<path>."""
    first = chain[0]
    hops = " -> ".join([_where(common_dir, root, first["clone"], first["asker"])]
                       + [_where(common_dir, root, w["target_clone"], w["target"]) for w in chain])
    return (f"refused: {_where(common_dir, root, first['clone'], first['asker'])} is waiting on an answer "
            f"(question {first.get('question')}; waits {hops}); asking it now would make both wait "
            f"until the timeout")


def _where(common_dir: str, root: "Any", clone_id: str, key: str) -> str:
    from git_korus_mail.relay import local
    conf = local.load_config(common_dir) or {}
    if clone_id == conf.get("clone"):
        box = root.box(key)
        return f"{conf.get('label')}:{(box.recorded_path() if box is not None else None) or key}"
    peer = (local.load_peers(common_dir) or {}).get(clone_id) or {}
    paths = [w.get("path") for w in peer.get("worktrees") or () if isinstance(w, dict) and w.get("key") == key]
    return f"{peer.get('label') or clone_id}:{paths[0] if paths else key}"


def refusal_here(common_dir: str, root: "Any", asker: str, target: str) -> "Optional[str]":
    """For a local ask (core/ask.py), after its own check: the refusal line when the waits lead
    from `target`, a box here, through other clones back to `asker`; None when they do not, or
    when no remote is configured (one failed open: a clone without one pays nothing more)."""
    from git_korus_mail.relay import local
    conf = local.load_config(common_dir)
    if conf is None:
        return None
    chain = cycle_across(common_dir, root, asker, str(conf["clone"]), target)
    return refusal(common_dir, root, chain) if chain else None
