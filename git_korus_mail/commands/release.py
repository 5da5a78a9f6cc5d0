"""`release <id>`: let go of a claim, or of an ask's wait, whose owner a person knows is gone.

The store breaks a claim only when its owner is provably dead (claims.judge). A claim
taken on another host, in another pid namespace without a life lock, or with a mangled owner
record can never be proven so, and it holds its message forever. `doctor` names such claims;
this command is the way out: run by a person, never automatically, and journaled.
A claim whose owner provably runs here is refused: that is a move in progress.

The same for the wait of an `ask` on question <id> (`mail/waits/<id>.json`): while it counts,
asks back to the asker are refused as a cycle. A wait whose ask provably runs is refused.
"""

from dataclasses import dataclass

from git_korus_mail.store import answers, message, moves, records
from git_korus_mail.store import claims
from git_korus_mail.core import ids
from git_korus_mail.errors import MailError
from git_korus_mail.core.render import escape_line

NEXT = {
    "queued": "the message is queued again; the next hook event shows it",
    "consumed": "its consume had been decided (a receipt exists): it is now in seen/",
    "expired": "its expiry had been decided: it is now in expired/",
    "gone": "the message is no longer in the inbox",
}


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, Any, Dict, List

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import Box, MailRoot


@dataclass(frozen=True)
class ReleaseArgs:
    id: str   # the message id whose claim to release (doctor prints it), in any form core/ids.py takes


def _e(value: object) -> str:
    return escape_line(str(value), 1 << 12)[0]


def run(clone: "Clone", args: ReleaseArgs, out: "IO[str]") -> int:
    idt = ids.IdText(args.id, "doctor prints the id of each claim")
    root = clone.mail_root()
    held: "Dict[str, List[Box]]" = {}  # {id: [box]}: every claim of the clone, what an id may name here
    for box in root.boxes() if root is not None else []:
        for name in records.claim_names(box):
            if name.endswith(claims.CLAIM_SUFFIX) and message.valid_id(name[:-len(claims.CLAIM_SUFFIX)]):
                held.setdefault(name[:-len(claims.CLAIM_SUFFIX)], []).append(box)
    waits = [w.get("question") for w in answers.open_waits(root)] if root is not None else []
    msg_id = ids.one(idt, sorted(set(held) | {q for q in waits if isinstance(q, str)}))
    if msg_id is None:
        raise MailError(f"no claim on {_e(args.id)} in any box of this clone, and no ask waits on it: "
                        f"nothing to release")
    if root is None:
        return 0  # no mail root: no box held it and no wait names it (what the lines below would find)
    boxes = held.get(msg_id, [])
    wait = answers.read_wait(root, msg_id)
    status = 0
    for box in boxes:
        status = max(status, _release(root, box, msg_id, out))
    if wait is not None:
        status = max(status, _release_wait(root, msg_id, wait, out))
    return status


def _release_wait(root: "MailRoot", qid: str, wait: "Dict[str, Any]", out: "IO[str]") -> int:
    owner = wait.get("owner")
    verdict, known = claims.judge(owner, root)
    who = (f"ask pid {_e(owner.get('pid'))} on host {_e(owner.get('host'))}" if isinstance(owner, dict) and owner
           else "an ask with an unreadable owner")
    if verdict == "alive":
        raise MailError(f"not released: the wait on question {qid} belongs to {who}, which {_e(known)}: that ask "
                        f"still waits; it ends when answered or at its deadline (or stop that command)")
    if not answers.release_wait(root, qid, wait):
        out.write(f"the wait on question {qid}: gone already (its ask ended)\n")
        return 0
    root.journal("wait-released", id=qid, by="git korus-mail release", verdict=verdict,
                 owner_pid=owner.get("pid") if isinstance(owner, dict) else None)
    out.write(f"released the wait on question {qid}, held by {who} ({'it was dead' if verdict == 'dead' else 'not provably dead'}: "
              f"{_e(known)}); asks to {_e(wait.get('asker'))} are no longer refused on its account\n")
    return 0


def _release(root: "MailRoot", box: "Box", msg_id: str, out: "IO[str]") -> int:
    try:
        data = records.read_claim(box, msg_id)
    except FileNotFoundError:
        out.write(f"{msg_id} in box {box.name}: the claim is gone already (released or finished)\n")
        return 0
    owner = claims.parse_owner(data) if data is not None else None
    verdict, known = claims.judge(owner, root)
    who = (f"pid {_e(owner.get('pid'))} on host {_e(owner.get('host'))} ({_e(owner.get('purpose') or '?')})"
           if owner else "an unreadable owner")
    if verdict == "alive":
        raise MailError(f"not released: the claim on {msg_id} in box {box.name} is held by {who}, which "
                        f"{_e(known)}: a move in progress, not a dead claim")
    result = records.release_claim_as_seen(box, msg_id, data)
    if result is None:
        out.write(f"{msg_id} in box {box.name}: the claim is gone already (released or finished)\n")
        return 0
    if result is False:
        raise MailError(f"not released: the claim on {msg_id} in box {box.name} changed while releasing it; "
                        f"run doctor again")
    root.journal("claim-released", id=msg_id, box=box.name, by="git korus-mail release", verdict=verdict,
                 owner_pid=owner.get("pid") if owner else None, owner_host=owner.get("host") if owner else None,
                 owner_session=owner.get("session") if owner else None)
    state = moves.finish_released(box, msg_id)
    out.write(f"released the claim on {msg_id} in box {box.name}, held by {who}"
              f" ({'it was dead' if verdict == 'dead' else 'not provably dead'}: {_e(known)}); {NEXT[state]}\n")
    return 0
