"""`ask`: queue a question for one worktree and wait for its answer (docs/CONTRACT.md, "ask").

The question is ordinary durable mail of kind `question`; the wait is a record in the store
(store/answers.py) that says who waits on whom until when, so that a wait that could never
end is refused before it starts: A asking B while B waits on A, or a longer cycle of waits.
The answer is decided in the asked box (core/answer.py) and also published to the asker's
box as mail. A killed ask loses nothing: its wait's owner is dead, so the wait stops
counting, and the answer waits in the box as ordinary mail. When the answer has been
written and flushed, `delivered` settles that mail so the drain does not show it again; an
ask that dies before that leaves it for the drain to show.

The asking launch's model has the answer only once that launch reads this command's output.
Claude Code runs a Bash command in a process group of its own with its output in a file, so a
SIGKILLed claude leaves its `ask` running, and that ask's stdout reaches no model. So an ask
run by a known launch of a known session does not consume: it marks the answer shown to that
launch, exactly as its drain marks what it shows (docs/DESIGN.md R7), and the launch's own Stop
consumes it. A launch killed before its Stop leaves a marker that authorizes nothing, and the
session's next launch (a `--resume`) is shown the answer. A launch already ended when the
answer came gets no marker at all (journal: answer-kept). Outside any client, the ask consumes
the answer itself (a receipt naming it), as there is no other reader to wait for (R5a).

A wait nobody can end is not waited out (omp-mail's rules, issue 21 item 10): when no session
there can answer soon (one working, or idle and wakeable), the question stays queued and `wait`
returns at once; and when the session that was shown it stops running, or no session runs
there any more, the wait ends at once. Either way the answer comes later as ordinary mail.
"""

import os
import time

from git_korus_mail.core import send, verdict
from git_korus_mail.errors import MailError, UsageError
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store import answers, fifo, launch as launches, markers, message, presence, sent
from git_korus_mail import crash
from git_korus_mail.store import layout, moves, publish, records

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import Box, MailRoot
    from git_korus_mail.store.launch import Launch
    from git_korus_mail.store.message import Message

# Claude Code 2.1.332's Bash tool kills a command after 120 s unless the call gives a longer
# `timeout` (up to 600 s); measured in docs/HOOKS.md, "Questions". The default wait ends well
# before the default kill, so the asker sees exit 2 and its message rather than a killed tool.
DEFAULT_TIMEOUT = 110
MAX_TIMEOUT = 7 * 24 * 3600
# A look for the answer is two opens in the asked box (tens of microseconds): every 20 ms at most
# costs well under 1% of a core, and the answer reaches stdout 10 ms after it is decided on
# average, where the former 100 ms ceiling added 50 ms to every round trip (issue 26, bench row 8)
POLL_FIRST, POLL_MAX = 0.005, 0.02
ENDED_EVERY = 0.5  # seconds between looks at the question's own state while waiting
# with the answer's signal (store/answers.py open_signal), a look at least this often all the
# same: an answerer of an older version writes no signal
SIGNAL_POLL = 0.25
QUEUED_PATIENCE = 10.0  # seconds a delivered answer's ask waits for its mail to be queued
ENDED = {"dropped": "the receiver's limits dropped the question", "expired": "it expired unanswered",
         "cancelled": "its sender cancelled it"}


class Refused(MailError):
    """The ask would wait on itself: nothing was queued."""


def check_timeout(text: "Optional[str]") -> int:
    if text is None:
        return DEFAULT_TIMEOUT
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--timeout {text!r}: seconds as a whole number, 1 to {MAX_TIMEOUT}") from None
    if not 1 <= value <= MAX_TIMEOUT:
        raise UsageError(f"--timeout {text}: out of range; use 1 to {MAX_TIMEOUT} seconds")
    return value


def target_of(clone: "Clone", dest: str, roster: "Optional[Callable[[], List[Any]]]" = None) -> send.Target:
    """The one worktree a question goes to (addressed as `send` addresses, `all` excepted; a
    session name through `roster`, as send does: that worktree plus a session filter)."""
    if dest == "all":
        raise UsageError("--to all: a question goes to exactly one worktree")
    t = send.resolve(clone, [dest], roster=roster)[0]
    if t.stopped is not None and t.path is not None:
        from git_korus_mail.core.roster import stopped
        raise MailError(stopped(dest, t.stopped, t.path, "ask"))
    if t.error:
        raise MailError(t.error)
    assert t.key is not None
    if t.key.name == clone.own_key.name:
        raise Refused(f"{dest}: that is this worktree; a question to yourself would wait on its own answer")
    return t


def _refusal(chain: "List[Dict[str, Any]]", root: "MailRoot") -> str:
    first = chain[0]
    path = " -> ".join([_path_of(root, first["asker"])] + [_path_of(root, w["target"]) for w in chain])
    deadline = first.get("deadline")
    until = utc_stamp(deadline) if isinstance(deadline, (int, float)) else "?"
    return (f"refused: {_path_of(root, first['asker'])} is waiting on an answer (question {first['question']}, "
            f"until {until}; waits {path}); asking it now would make both wait until the timeout")


def _refuse_across(clone: "Clone", root: "MailRoot", qid: str, target: str) -> None:
    """A cycle through other clones' waits (an ask across waits on a box there, whose ask waits on
    one here): refused like a local one. Only with a remote configured (docs/RELAY.md, "A wait
    cycle across clones")."""
    if not layout.remote_configured(clone.common_dir):
        return  # one stat: without a remote, ask loads nothing of the relay (tests/test_text_stamps.py)
    from git_korus_mail.relay import asking
    line = asking.refusal_here(clone.common_dir, root, clone.own_key.name, target)
    if line is not None:
        answers.close_wait(root, qid)
        raise Refused(line)


def _path_of(root: "MailRoot", key_name: str) -> str:
    box = root.box(key_name)
    return (box.recorded_path() if box is not None else None) or key_name


class Question:
    """One asked question: what `wait` and `delivered` need."""

    def __init__(self, root: "MailRoot", target: "Box", msg: "Message", deadline: float,
                 nobody: "Optional[str]" = None, launch: "Optional[str]" = None) -> None:
        self.root, self.target, self.msg, self.deadline = root, target, msg, deadline
        self.id = str(msg["id"])
        self.nobody = nobody  # why no session there could answer when it was asked (nobody_to_answer)
        self.launch = launch  # the tag of the client process that asked; None outside any client


def ask(clone: "Clone", dest: str, body: str, timeout: int, session: "Optional[str]",
        launch: "Optional[str]", roster: "Optional[Callable[[], List[Any]]]" = None,
        sender_launch: "Optional[str]" = None) -> Question:
    """Queue the question and open its wait; Refused when the wait could never end. `launch`:
    the client launch that waits; `sender_launch`: the asking process as `from.launch` names it."""
    t = target_of(clone, dest, roster)
    assert t.key is not None
    root = clone.mail_root(create=True)
    assert root is not None
    own_box = clone.own_box(create=True)
    sender = send.sender_record(clone, session, sender_launch)
    msg = message.build(body, t.key.path, t.key.name, sender, kind=message.KIND_QUESTION, session=t.session)
    qid = msg["id"]
    deadline = time.time() + timeout
    # the wait is written before the check, so two asks that would wait on each other cannot
    # both miss the other: at worst both are refused, and nothing was queued
    answers.open_wait(root, qid, clone.own_key.name, t.key.name, deadline, launch)
    chain = answers.cycle(answers.live_waits(root), clone.own_key.name, t.key.name)
    if chain:
        answers.close_wait(root, qid)
        raise Refused(_refusal(chain, root))
    _refuse_across(clone, root, qid, t.key.name)
    box = root.box(t.key.name, create=True, path=t.key.path, adopt=send.owner_of(clone, t))
    assert box is not None
    # judged before the question is queued: a wake-up watcher disarms as soon as it sees new
    # mail, so the moment after, the session it is waking would look idle and unwakeable
    nobody = nobody_to_answer(box, t.session)
    try:
        publish.publish(box, msg, message.encode(msg))
    except BaseException:
        answers.close_wait(root, qid)
        raise
    crash.point("ask:published")
    try:
        sent.record(root, own_box, msg, t.key.name, t.path, clone.own_key.path)
        answers.note_asked(box, msg)
    except (OSError, MailError):
        pass  # bookkeeping for status: the question is queued and its wait open all the same
    root.journal("asked", id=qid, box=t.key.name, sender=clone.own_key.path, timeout=timeout)
    return Question(root, box, msg, deadline, nobody, launch)


def again(clone: "Clone", text: str, timeout: int, launch: "Optional[str]") -> Question:
    """Wait again for the answer to a question this worktree asked (`ask --again`, after a
    Ctrl-C or a timeout): the question is found as `cancel` finds what was sent from here (any
    form of its id, core/ids.py), and its wait is opened again, refused as a new one would be."""
    from git_korus_mail.core import ids, retract
    from git_korus_mail.core.render import field
    idt = ids.IdText(text, "status lists the questions asked from here")
    root = clone.mail_root()
    if root is None:
        raise MailError("nothing to wait for: no question has been asked in this clone")
    own = clone.own_box()
    shared = not clone.in_worktree()
    found = ids.one(idt, sent.ids(root, own, clone.own_key.path, shared=shared))
    rec = sent.find(root, own, clone.own_key.path, shared, found) if found is not None else None
    box = retract._holder(root, rec) if rec is not None else None
    state = records.filed_in(box, found) if box is not None and found is not None else None
    try:
        msg = box.load(str(found), state)[0] if box is not None and state is not None else None
    except (OSError, MailError):
        msg = None
    if msg is None or msg.get("kind") != message.KIND_QUESTION:
        raise MailError(f"{field(text, 80)}: no question asked from this worktree "
                        f"({field(clone.own_key.path)}) by that id; status lists them")
    assert box is not None
    qid = str(msg["id"])
    deadline = time.time() + timeout
    answers.open_wait(root, qid, clone.own_key.name, box.name, deadline, launch)
    chain = answers.cycle(answers.live_waits(root), clone.own_key.name, box.name)
    if chain:
        answers.close_wait(root, qid)
        raise Refused(_refusal(chain, root))
    _refuse_across(clone, root, qid, box.name)
    root.journal("ask-again", id=qid, box=box.name, timeout=timeout)
    return Question(root, box, msg, deadline, None, launch)


def nobody_to_answer(box: "Box", only_for: "Optional[str]") -> "Optional[str]":
    """Why no session in `box` (only session `only_for`, when the question is filtered to one)
    can answer soon, or None when one can: a session working is shown the question at its next
    tool call, and an idle one the wake-up tier can wake is woken by it. An idle session that
    cannot be woken sees it only when a person prompts it: nothing to wait for either."""
    records = [r for r in presence.sessions(box) if only_for is None or r.get("session") == only_for]
    live = [r for r in records if r["liveness"] in presence.LIVE]
    for r in live:
        if r["liveness"] == "working" or presence.wakeable_until(box, r):
            return None
    if not live:
        return f"session {only_for} does not run there" if only_for else "no session runs there"
    who = f"session {only_for}" if only_for else "the session there" if len(live) == 1 else "the sessions there"
    return (f"{who} {'is' if len(live) == 1 else 'are'} idle and cannot be woken (install --urgent arms "
            f"the wake-up tier); the question is shown at the next prompt")


def holder_stopped(q: "Question") -> "Optional[str]":
    """Why the wait can end now although nothing answered: every launch that was shown the
    question has stopped running (a killed or exited session runs no Stop, so no automatic
    answer comes), or no session (of the filter) runs there any more. None while one may answer."""
    only_for = q.msg.get("session")
    records = presence.sessions(q.target)
    mine = launches.pid_ns()
    if any(r.get("pidns") not in (None, mine) for r in records):
        return None  # the sessions' pids count in another pid namespace (a sandbox): not provable here
    shown = markers.shown_by(q.target, q.id)
    if shown and not any(verdict.launch_alive(m.get("launch")) for m in shown):
        return f"session {shown[0].get('session')}, which was shown it, stopped running"
    if not any(r["liveness"] in presence.LIVE for r in records
               if only_for is None or r.get("session") == only_for):
        return f"session {only_for} stopped running" if only_for else "no session runs there any more"
    return None


def _left_queued(q: "Question", why: str) -> "Dict[str, Any]":
    answers.close_wait(q.root, q.id)
    return {"question": q.id, "status": "queued", "how": why, "left_queued": True}


def wait(q: Question, sleep: "Callable[[float], None]" = time.sleep) -> "Optional[Dict[str, Any]]":
    """The answer record once one is decided; None at the deadline (the wait is then closed). A
    question that can no longer be answered (the receiver's limits dropped it, it expired, its
    sender cancelled it) ends the wait at once with a record of that state and no message. A
    question nobody could answer soon when asked (`nobody_to_answer`: at once), or whose holder
    stopped (`holder_stopped`, while waiting) ends it with {"status": "queued", "how": <why>, "left_queued": True}: the question
    stays queued and its answer comes as mail."""
    delay = POLL_FIRST
    checked = time.time()
    if q.nobody is not None and answers.answer_of(q.target, q.id) is None:
        return _left_queued(q, q.nobody)
    # opened before the first look: an answer decided after that look signals this descriptor
    signal = answers.open_signal(q.root, q.id) if sleep is time.sleep else None
    try:
        return _wait(q, sleep, signal, delay, checked)
    finally:
        answers.close_signal(signal)


def _wait(q: Question, sleep: "Callable[[float], None]", signal: "Optional[int]", delay: float,
          checked: float) -> "Optional[Dict[str, Any]]":
    while True:
        rec = answers.answer_of(q.target, q.id)
        if rec is not None:
            return rec
        if time.time() - checked >= ENDED_EVERY:
            checked = time.time()
            state, detail = records.fate(q.target, q.id)
            if state in ENDED:
                answers.close_wait(q.root, q.id)
                return {"question": q.id, "status": state, "how": ENDED[state], "detail": detail}
            why = holder_stopped(q)
            if why is not None and answers.answer_of(q.target, q.id) is None:
                return _left_queued(q, why)
        left = q.deadline - time.time()
        if left <= 0:
            answers.close_wait(q.root, q.id)
            return None
        if signal is not None:
            # woken by the answerer's signal at once; else a look when the ended checks are due
            if fifo.await_fifo(signal, min(SIGNAL_POLL, left, max(0.0, checked + ENDED_EVERY - time.time()))) is None:
                sleep(min(delay, left))  # the descriptor failed: the looks alone, as without one
            continue
        sleep(min(delay, left))
        delay = min(delay * 1.5, POLL_MAX)


def abandon(q: Question) -> None:
    """The asker stopped waiting (Ctrl-C): close the wait, so it no longer counts as one that
    could make a cycle; the question stays queued and its answer comes as ordinary mail."""
    answers.close_wait(q.root, q.id)
    q.root.journal("ask-interrupted", id=q.id, box=q.target.name)


def _consume_when_queued(root: "MailRoot", box: "Box", aid: str, session: str, obs: "Dict[str, Any]",
                         rec: "Dict[str, Any]", patience: float = QUEUED_PATIENCE) -> str:
    """Consume the answer's mail. The answerer decides before it publishes, so an ask that saw
    the decision can find the mail not queued yet: wait for it (`patience` seconds at most: a
    live publisher holds the answer's claim until its link is made, store/answers.py),
    publishing it from the record meanwhile in case the answerer died between the two."""
    got = "gone"
    deadline = time.monotonic() + patience
    while True:
        got = moves.consume(box, aid, session, obs)
        if got != "gone" or records.fate(box, aid)[0] != "gone" or time.monotonic() >= deadline:
            return got
        answers.publish_answer(root, rec)
        time.sleep(0.02)


def _mark_shown(root: "MailRoot", box: "Box", aid: str, rec: "Dict[str, Any]", session: str, launch: "Launch",
                qid: str, tries: int = 250) -> bool:
    """Mark the answer shown to the asking launch, once its mail is queued (the answerer decides
    before it publishes: wait for it, about 5 s at most, publishing it from the record meanwhile).
    False when it never was queued: the caller consumes it as outside a client."""
    from git_korus_mail.core.drain_context import session_dir_name
    for _ in range(tries):
        state = records.fate(box, aid)[0]
        if state == "queued":
            obs = {"session": session, "launch": launch.tag, "event": "ask", "question_of": qid,
                   "at": utc_stamp(time.time())}
            markers.for_launch(box, session_dir_name(session), launch).mark(aid, obs)
            return True
        if state != "gone":
            return False
        answers.publish_answer(root, rec)
        time.sleep(0.02)
    return False


def delivered(q: Question, rec: "Dict[str, Any]", session: "Optional[str]",
              launch: "Optional[Launch]" = None) -> "List[str]":
    """The answer is on the asker's stdout: settle its mail in the asker's box (so no drain shows
    it again) and close the wait: marked shown to the asking `launch` of `session`, whose Stop
    consumes it, or consumed here outside a client (see the module's note). Returns what could
    not be done (warnings)."""
    warnings: "List[str]" = []
    kept = False
    answers.close_wait(q.root, q.id)
    try:
        answers.publish_answer(q.root, rec)  # a killed answerer may have decided it only
        to = rec["message"].get("to") or {}
        box = q.root.box(str(to.get("key")))
        aid = str(rec["message"]["id"])
        # looked at after the answer was written, just before its consume: a launch that ended
        # by then read nothing of this command's output (its model is gone with it)
        kept = launches.ended(q.launch)
        if kept:
            q.root.journal("answer-kept", id=q.id, answer=aid, launch=q.launch)
            warnings.append(f"the launch that asked ({q.launch}) has ended: answer {aid} stays queued in this "
                            f"worktree's box, and the session's next launch is shown it")
            box = None
        if box is not None and launch is not None and session and launch.tag == q.launch \
                and _mark_shown(q.root, box, aid, rec, session, launch, q.id):
            box = None  # the launch's Stop consumes it
        if box is not None:
            obs = {"by": "ask", "question": q.id, "pid": os.getpid(), "at": utc_stamp(time.time())}
            got = _consume_when_queued(q.root, box, aid, session or "ask", obs, rec)
            if got == "held":
                warnings.append(f"answer {aid} is claimed by another process; a drain may show it too")
            elif got == "gone" and records.fate(box, aid)[0] == "gone":
                warnings.append(f"answer {aid} was not yet in this worktree's box; a drain shows it when it is")
    except (OSError, MailError) as exc:
        warnings.append(f"answer not marked delivered ({exc}); the drain will show it again")
    crash.point("ask:delivered")
    if not kept:
        q.root.journal("answer-delivered", id=q.id, answer=rec["message"].get("id"), to="ask")
    return warnings + q.root.take_journal_faults()
