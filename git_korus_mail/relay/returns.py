"""What comes back to the sender's clone (docs/RELAY.md, "Fates back"): a message's fate, and
the answer to a question asked from here, each noted on the message's relay record
(relay/sent/<id>.json), where `status` and `cancel` read them. No nats.
"""

from git_korus_mail.relay import local

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional


def take_fate(common_dir: str, env: "Dict[str, Any]",
              refuse: "Optional[Callable[[str, str], object]]" = None) -> bool:
    """A fate envelope from the receiving clone's relay; True: it may be acked. Only the clone
    the mail went to tells its fate: the envelope's label is the one the server checked against
    the sender's credentials (docs/RELAY.md, "Trust"); any other is refused (`refuse(id, why)`)."""
    msg_id = str(env.get("id"))
    rec = sent_record(common_dir, msg_id, env)
    if rec is None:
        return True  # a fate of mail this clone did not send (or forgot): nothing to record
    if rec.get("to_label") != env.get("from_label"):
        if refuse is not None:
            refuse(msg_id, f"a fate from {str(env.get('from_label'))[:40]!r}")
        return True
    local.mark(common_dir, local.SENT, msg_id, {**rec, "fate": env.get("fate")}, replace=True)
    return True


def note_answer(common_dir: str, msg: "Dict[str, Any]", env: "Dict[str, Any]") -> None:
    """An answer to a question asked from here, noted on the question's relay record, so
    `status` shows it answered (docs/RELAY.md, "Questions across machines"). Only from the clone
    the question went to, and once: a redelivery finds it noted."""
    qid = str(msg["in_reply_to"])
    rec = sent_record(common_dir, qid, env)
    if (rec is None or rec.get("answer") is not None or rec.get("to_clone") != env.get("from_clone")
            or rec.get("to_label") != env.get("from_label")):
        return
    by = msg.get("from") or {}
    local.mark(common_dir, local.SENT, qid, {**rec, "answer": {
        "status": msg.get("status"), "at": msg.get("sent_at"), "by": by.get("path"),
        "session": by.get("session"), "answer_id": msg["id"]}}, replace=True)


def sent_record(common_dir: str, msg_id: str, env: "Dict[str, Any]") -> "Optional[Dict[str, Any]]":
    """The relay record of mail sent from here; for mail still in the outbox, one written from
    its entry, as the server's ack would have, and the entry taken out (docs/RELAY.md, "Fates
    back": a relay killed between the server's store and its record, and the receiver's word
    back before the next relay publishes again). Only the clone it was addressed to (`env`'s
    label, which the server checked, and clone) proves it stored; any other finds no record."""
    rec = local.read_entry(common_dir, local.SENT, msg_id)
    if rec is not None:
        return rec
    queued = local.read_entry(common_dir, local.OUTBOX, msg_id)
    if (queued is None or queued.get("to_label") != env.get("from_label")
            or queued.get("to_clone") != env.get("from_clone")):
        return None
    rec = local.sent_entry(queued, seq=None, duplicate=False)
    if not local.mark(common_dir, local.SENT, msg_id, rec):
        return local.read_entry(common_dir, local.SENT, msg_id)  # the ack's record came first
    local.remove_entry(common_dir, local.OUTBOX, msg_id)
    return rec
