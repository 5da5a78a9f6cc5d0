"""`ask --to <label>:<worktree>` (or `@<name>` of a session on another clone): the question
goes across and `ask` waits for its answer as mail (relay/asking.py, docs/RELAY.md). Exit
status as commands/ask.py's: 0 answered, 2 no answer in time (it arrives later as mail),
3 answered with status failed or stopped."""

import sys

from git_korus_mail.commands.text import safe, wrap
from git_korus_mail.store import message

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any, Dict, Optional, Tuple

    from git_korus_mail.core.clone import Clone


def run(clone: "Clone", target: "Dict[str, Any]", body: str, timeout: int, session: "Optional[str]",
        sender_launch: "Optional[str]", as_json: bool, out: "IO[str]") -> int:
    from git_korus_mail.core import send as core_send
    from git_korus_mail.relay import address
    root = clone.mail_root(create=True)
    assert root is not None  # create=True makes it or raises
    _refuse_a_cycle(clone, root, target["clone"], target["key"])
    sender = core_send.sender_record(clone, session, sender_launch)
    [r] = address.queue(clone.common_dir, root, [target], body, message.KIND_QUESTION, message.DEFAULT_TTL_MINUTES,
                        sender.copy(), None, True, own_box=clone.own_box(create=True))
    qid, where = r["id"], f"{target['label']}:{target['name']}"
    root.journal("asked", id=qid, box=target["key"], timeout=timeout, to=where)
    if not as_json:
        sys.stderr.write(f"asked {qid} of {where}; waiting up to {timeout}s for its answer "
                         f"({address.link_words(clone.common_dir)})\n")
    return _await(clone, root, qid, where, timeout, session, as_json, out, (target["clone"], target["key"]))


def _refuse_a_cycle(clone: "Clone", root: "Any", target_clone: str, target_key: str) -> None:
    """Refused, with nothing queued, when the waits here and on the other clones lead from the
    target back to this worktree (relay/asking.py cycle_across)."""
    from git_korus_mail.core.ask import Refused
    from git_korus_mail.relay import asking
    chain = asking.cycle_across(clone.common_dir, root, clone.own_key.name, target_clone, target_key)
    if chain:
        raise Refused(asking.refusal(clone.common_dir, root, chain))


def again(clone: "Clone", rec: "Dict[str, Any]", timeout: int, session: "Optional[str]", as_json: bool,
          out: "IO[str]") -> int:
    """`ask --again` of a question asked of another clone: its answer, when it came already
    (consumed by an earlier ask, or queued), or a new wait for it."""
    from git_korus_mail.relay import asking
    root = clone.mail_root()
    assert root is not None  # a sent record was found in it
    remote = rec["remote"]
    where = f"{remote.get('label')}:{remote.get('name')}"
    came = asking.came(root, clone.own_key.name, clone.common_dir, str(rec["id"]))
    if came is not None:
        return _print(root, clone, came, str(rec["id"]), session, as_json, out, settle=False)
    target = (str(remote.get("clone")), str(rec.get("box")))
    _refuse_a_cycle(clone, root, *target)
    return _await(clone, root, str(rec["id"]), where, timeout, session, as_json, out, target)


def _await(clone: "Clone", root: "Any", qid: str, where: str, timeout: int, session: "Optional[str]",
           as_json: bool, out: "IO[str]", target: "Tuple[str, str]") -> int:
    import time

    from git_korus_mail.relay import asking
    from git_korus_mail.store import answers
    # a wait record like a local ask's, its target on another clone: this clone's relay tells the
    # others of it, so an ask that would close a cycle through it is refused there (and here)
    answers.live_waits(root)  # removes a killed ask's record of this question (`ask --again` after it)
    try:
        answers.open_wait(root, qid, clone.own_key.name, target[1], time.time() + timeout, None,
                          target_clone=target[0])
        opened = True
    except FileExistsError:
        opened = False  # another ask of this question waits now: its record stands for both
    try:
        answer = asking.wait(root, clone.own_key.name, qid, timeout)
    finally:
        if opened:
            answers.close_wait(root, qid)
    if answer is None:
        line = (f"no answer to question {qid} within {timeout}s; the answer will arrive later as "
                f"ordinary mail (it is on another clone: {where})")
        if as_json:
            import json
            out.write(json.dumps({"question": qid, "status": "timeout", "timeout": timeout, "note": line},
                                 indent=2) + "\n")
        else:
            out.write("\n".join(wrap(line, indent=2)) + "\n")
        return 2
    return _print(root, clone, answer, qid, session, as_json, out, settle=True)


def _print(root: "Any", clone: "Clone", answer: "Dict[str, Any]", qid: str, session: "Optional[str]",
           as_json: bool, out: "IO[str]", settle: bool) -> int:
    from git_korus_mail.relay import asking
    by = answer.get("from") or {}
    status = answer.get("status")
    if as_json:
        import json
        out.write(json.dumps({"question": qid, "status": status, "by": by, "at": answer.get("sent_at"),
                              "answer_id": answer.get("id"), "body": answer.get("body")}, indent=2) + "\n")
    else:
        # the answerer's path is a path on its own clone, and its clone the relay's word
        # (docs/RELAY.md, "Trust"): shown as unverified, as a local sender is
        out.write(f"status {safe(status)} · answer to question {safe(qid)} · from (unverified) {safe(by.get('path'))}"
                  f" · session {safe(by.get('session'))} · at {safe(answer.get('sent_at'))}\n")
        for line in str(answer.get("body", "")).split("\n"):
            out.write(safe(line) + "\n")
    out.flush()  # only now is the answer the asker's
    if settle or answer.get("_queued"):
        asking.delivered(root, clone.own_key.name, answer, session, qid)
    return 0 if status in ("answered", "done") else 3
