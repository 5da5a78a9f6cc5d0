"""`cancel`: a sender withdraws a message nobody has consumed yet.

Only what this worktree sent can be cancelled: the message is found through the sender's
own sent records (store/sent.py), followed along forwarded/ to the box that holds it now,
and withdrawn by moves.cancel, which decides under the message's claim, as a consume does:
of a cancel and a Stop that race for one message exactly one wins (docs/STORE.md). A
message a model was already shown can still be withdrawn, but not unseen: the result
names the display markers, so the person is told.
"""


from git_korus_mail.core import ids
from git_korus_mail.core.render import field
from git_korus_mail.errors import MailError
from git_korus_mail.store import forwarding, markers, moves, records, sent
from git_korus_mail.store.layout import CANCELLED, DROPPED

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import Box, MailRoot

def _sent_id(clone: "Clone", root: "MailRoot", own: "Optional[Box]", idt: "ids.IdText") -> str:
    """The id of the one message this worktree sent that `idt` names (core/ids.py's rule)."""
    found = ids.one(idt, sent.ids(root, own, clone.own_key.path, shared=not clone.in_worktree()))
    if found is None:
        raise MailError(f"not cancelled: {field(idt.given, 80)} is no message sent from this worktree "
                        f"({field(clone.own_key.path)}); cancel withdraws only mail sent from here (status lists it)")
    return found


def _holder(root: "MailRoot", rec: "Dict[str, Any]") -> "Optional[Box]":
    """The box that holds the message now: the one its sent record names, or where that box's
    forwarded/ records lead (a moved worktree's adopted queue, `forward`)."""
    name = rec["box"]
    seen: List[str] = []
    while len(seen) < forwarding.MAX_HOPS:
        box = root.box(name)
        if box is None:
            return None
        moves.repair(box)  # a dead mover's half-done move is finished first, so the fate below is settled
        if records.filed_in(box, rec["id"]) is not None:
            return box
        fwd = records.forward_record(box, rec["id"])
        if fwd is None or fwd["box"] in seen or fwd["box"] == rec["box"]:
            return box
        name = fwd["box"]
        seen.append(name)
    return None


def cancel(clone: "Clone", text: str, session: "Optional[str]" = None) -> "Dict[str, Any]":
    """Withdraw the message `text` names. Returns {"id", "result", "to", "shown"}: result
    "cancelled", or "already-cancelled"; MailError (one line, for the person) otherwise."""
    idt = ids.IdText(text, "status prints the ids of mail sent from here")
    root = clone.mail_root()
    if root is None:
        raise MailError("not cancelled: no mail has been sent in this clone")
    own = clone.own_box()  # read only: a worktree without a box has sent nothing
    msg_id = _sent_id(clone, root, own, idt)
    rec = sent.find(root, own, clone.own_key.path, not clone.in_worktree(), msg_id)
    if rec is None:
        raise MailError(f"not cancelled: the sent record of {msg_id} cannot be read")
    if isinstance(rec.get("remote"), dict):
        return _cancel_remote(clone, rec, session)
    box = _holder(root, rec)
    if box is None:
        raise MailError(f"not cancelled: the box {field(rec['box'], 120)} that {msg_id} was sent to no longer exists")
    to = box.recorded_path() or rec.get("path")
    shown = markers.shown_by(box, msg_id)  # read before: the Stop that consumes it clears them
    # the journal's `by`: the sender's worktree, and its session when an agent ran the command
    # (the session comes from the client registry, through the command: the core knows no client)
    result = moves.cancel(box, msg_id, by=clone.own_key.path + (f" (session {session})" if session else ""))
    out: Dict[str, Any] = {"id": msg_id, "to": to, "box": box.name, "shown": shown}
    if result == "cancelled":
        return dict(out, result="cancelled")
    if result == "consumed":
        r = records.receipt(box, msg_id) or {}
        raise MailError(f"not cancelled: {msg_id} was consumed already, by session {field(r.get('session'), 80)}"
                        f" at {field(r.get('consumed_at'), 40)}")
    if result == "held":
        raise MailError(f"not cancelled: a live process holds the claim on {msg_id} now (a Stop consuming it, "
                        f"most likely); run cancel again, and status says which won")
    state = records.filed_in(box, msg_id)
    if state == CANCELLED:
        return dict(out, result="already-cancelled")
    if state in ("expired", DROPPED):
        raise MailError(f"not cancelled: {msg_id} was {state} already; nobody consumed it")
    for q in records.quarantine_entries(box):
        if q["id"] == msg_id:
            raise MailError(f"not cancelled: {msg_id} was quarantined by the recipient's drain "
                            f"({field(q['reason'], 200)}); it was never shown")
    raise MailError(f"not cancelled: {msg_id} is in no state of box {box.name}")


def _cancel_remote(clone: "Clone", rec: "Dict[str, Any]", session: "Optional[str]") -> "Dict[str, Any]":
    """Mail sent to another clone (docs/RELAY.md, "Cross-machine decisions"): result
    "cancelled" (decided before its delivery, or withdrawn there), "asked" or "waiting" (the
    outcome comes back as its fate: status shows it); MailError when it is too late."""
    from git_korus_mail.relay import address  # no nats: the request goes through the relay's files
    label = str(rec["remote"].get("label"))
    by = clone.own_key.path + (f" (session {session})" if session else "")
    fate = address.cancel(clone.common_dir, rec, by)
    to = f"{label}:{rec['remote'].get('name') or rec.get('path')}"
    out: "Dict[str, Any]" = {"id": rec["id"], "to": None, "remote_to": to, "box": rec["box"], "shown": []}
    state = fate["state"]
    if state == "cancelled":
        return dict(out, result="cancelled", detail=fate.get("detail"))
    if state == "consumed":
        raise MailError(f"not cancelled: {rec['id']} was consumed already on {field(label)}, by session "
                        f"{field(fate.get('session'), 80)} at {field(fate.get('at'), 40)}")
    if state in ("expired", "dropped"):
        raise MailError(f"not cancelled: {rec['id']} was {state} already on {field(label)}; nobody consumed it")
    return dict(out, result=fate["request"])
