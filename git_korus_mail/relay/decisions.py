"""The relay's cross-machine decisions about mail in transit (docs/RELAY.md, "Cross-machine
decisions"): a cancel against its delivery, decided by a create-only put of fate.<id> in the
namespace's KV bucket; an ack decides nothing (docs/RELAY.md, "The shape"). Functions of the
running relay (relay/link.py), which alone imports this module: it imports nats.
"""

import json
import time

import nats
from nats.js.errors import KeyWrongLastSequenceError

from git_korus_mail import crash
from git_korus_mail.relay import local, names
from git_korus_mail.stamps import utc_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict

    Relay = Any  # relay/link.Relay: named, not imported (link imports this module)


async def decide(relay: "Relay", msg_id: str, decision: "Dict[str, Any]") -> "Dict[str, Any]":
    """The one cross-machine decision about mail in transit: a create-only put of
    fate.<id> (docs/RELAY.md, "Cross-machine decisions"). The sender's relay puts
    "cancelled", the receiver's "delivered" before its inbox publish; what is there already
    won, and is returned (also our own decision, taken before a crash)."""
    key = f"fate.{msg_id}"
    try:
        await relay.kv.create(key, json.dumps(decision, sort_keys=True).encode())
        return decision
    except KeyWrongLastSequenceError:
        entry = await relay.kv.get(key)
        won = json.loads(entry.value.decode())
        return won if isinstance(won, dict) else {"state": "unknown"}


async def decide_cancel(relay: "Relay", msg_id: str) -> bool:
    """A sender's cancel of mail for another clone. Won here (decided before the delivery):
    it is never published, or never put in an inbox there. Lost (delivered first): the
    cancel goes to the receiving relay, whose local claim decides it against a consume;
    its outcome comes back as the message's fate."""
    req = local.read_entry(relay.common_dir, local.CANCELS, msg_id) or {}
    env = local.read_entry(relay.common_dir, local.OUTBOX, msg_id)
    rec = local.read_entry(relay.common_dir, local.SENT, msg_id)
    to_clone = (rec or {}).get("to_clone") or (env or {}).get("to_clone")
    mine = {"state": "cancelled", "clone": relay.conf["clone"], "by": req.get("by"), "at": utc_stamp(time.time())}
    try:
        won = await decide(relay, msg_id, mine)
    except Exception as exc:  # noqa: BLE001 - the request stays; decided at the next round
        relay.error = f"cancel {msg_id}: {exc or type(exc).__name__}"
        return False
    base = rec or {"id": msg_id, "to_clone": to_clone, "to_label": (env or {}).get("to_label"),
                   "expires_at": ((env or {}).get("msg") or {}).get("expires_at")}
    if won.get("state") == "cancelled":
        crash.point("relay:cancel-decided")
        fate = {"state": "cancelled", "at": won.get("at"), "detail": "decided before its delivery"}
        local.mark(relay.common_dir, local.SENT, msg_id, {**base, "fate": fate}, replace=True)
        local.remove_entry(relay.common_dir, local.OUTBOX, msg_id)
        relay.root.journal("relay-cancelled", id=msg_id, by=req.get("by"), how="before its delivery")
    elif to_clone:
        cancel = {"v": local.FORMAT, "type": "cancel", "id": msg_id, "from_clone": relay.conf["clone"],
                  "from_label": relay.conf["label"], "by": req.get("by")}
        try:
            await relay.js.publish(names.subject_to(relay.ns, str(to_clone), relay.conf["label"]), local.encode(cancel), timeout=3,
                                  headers={"Nats-Msg-Id": f"cancel-{msg_id}"})
        except Exception as exc:  # noqa: BLE001 - the request stays; sent at the next round
            relay.error = f"cancel {msg_id}: {exc or type(exc).__name__}"
            return False
        local.mark(relay.common_dir, local.SENT, msg_id, {**base, "cancel": "asked"}, replace=True)
        relay.root.journal("relay-cancel-asked", id=msg_id, by=req.get("by"), to=str(to_clone))
    local.remove_entry(relay.common_dir, local.CANCELS, msg_id)
    return True


async def take_cancel(relay: "Relay", env: "Dict[str, Any]") -> bool:
    """The sender's cancel of mail delivered here: the local claim decides it against a
    consume (moves.cancel), and the fate goes back as any fate does. True when it may be acked."""
    from git_korus_mail.store import moves
    msg_id = str(env.get("id"))
    rec = local.read_entry(relay.common_dir, local.RECEIVED, msg_id)
    if rec is None:
        # delivered (decided) but not yet in an inbox: its mail comes again after the ack
        # wait, and so does this cancel; anything else names no mail of ours
        try:
            won = json.loads((await relay.kv.get(f"fate.{msg_id}")).value.decode())
        except nats.js.errors.KeyNotFoundError:
            return True
        except Exception:  # noqa: BLE001 - asked again after the ack wait
            return False
        return not (isinstance(won, dict) and won.get("state") == "delivered"
                    and won.get("clone") == relay.conf["clone"])
    # the label is what the server checked (docs/RELAY.md, "Trust"); records older than it lack one
    if rec.get("from_clone") != env.get("from_clone") or rec.get("from_label", env.get("from_label")) != env.get("from_label"):
        relay.root.journal("relay-refused", id=msg_id[:64], why="a cancel from another clone than its sender")
        return True
    box = relay.root.box(str(rec.get("box")))
    if box is None:
        return True
    result = moves.cancel(box, msg_id, by=f"{env.get('from_label')}: {env.get('by')}")
    return result != "held"  # held: a consume holds its claim now; asked again after the ack wait
