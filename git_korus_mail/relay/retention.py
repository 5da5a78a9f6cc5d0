"""Pruning the relay's own records (docs/RELAY.md, "Retention"): `relay/sent/` and
`relay/received/` follow the store's retention (`korus-mail.retention-days`, docs/STORE.md).

- `sent/<id>.json`, the sender's view of mail for another clone: removed once that message's
  expiry is older than the retention time, as the box's own sent records are
  (store/retention.prune_records): its fate has come back long before, or never will.
- `received/<id>.json`, the receiver's redelivery guard: removed once its fate went back and
  it is older than both the retention time and the stream's maximum age (the server can no
  longer give that message again, so nothing is left for the guard to stop).
Every removed id is journaled (`relay-pruned`) before its file goes, so a reader that finds a
sent record without its relay record can tell pruned from lost (tests/invariants.py). No nats.
"""

import time

from git_korus_mail import crash
from git_korus_mail.relay import local
from git_korus_mail.stamps import parse_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

MAX_RECORDS = 500           # records one run removes: the rest wait for the next run
STREAM_DAYS = 30            # relay/server.MAX_AGE_DAYS: how long the server keeps undelivered mail
DAY = 86400.0


def _sent_due(rec: "Dict[str, Any]", msg_id: str, now: float, keep: float) -> bool:
    ref: "Optional[float]" = None
    try:
        ref = parse_stamp(rec.get("expires_at"))
    except (ValueError, TypeError):
        from git_korus_mail.store.message import id_time
        try:
            ref = id_time(msg_id) + STREAM_DAYS * DAY  # an older record: its send time, plus the longest wait
        except ValueError:
            return False
    return now - ref > keep


def _received_due(rec: "Dict[str, Any]", now: float, keep: float) -> bool:
    if rec.get("fate") is None:
        return False  # its fate has not gone back yet
    at = rec.get("received_at")
    return isinstance(at, (int, float)) and now - at > max(keep, (STREAM_DAYS + 1) * DAY)


def prune(common_dir: str, root: "Any", keep_days: int, now: "Optional[float]" = None,
          limit: int = MAX_RECORDS) -> "Dict[str, List[str]]":
    """Remove what is due (up to `limit`); returns {"sent": ids, "received": ids}."""
    now = time.time() if now is None else now
    keep = keep_days * DAY
    due: "Dict[str, List[str]]" = {local.SENT: [], local.RECEIVED: []}
    for sub in (local.SENT, local.RECEIVED):
        for msg_id in local.ids_of(common_dir, sub):
            if sum(len(v) for v in due.values()) >= limit:
                break
            rec = local.read_entry(common_dir, sub, msg_id)
            if rec is None:
                continue
            if _sent_due(rec, msg_id, now, keep) if sub == local.SENT else _received_due(rec, now, keep):
                due[sub].append(msg_id)
    if not any(due.values()):
        return due
    # journaled first: a relay killed before the unlinks leaves records the next run prunes again
    if not root.journal("relay-pruned", sent=len(due[local.SENT]), received=len(due[local.RECEIVED]),
                        ids=due[local.SENT] + due[local.RECEIVED], days=keep_days):
        return {local.SENT: [], local.RECEIVED: []}  # unjournaled, nothing goes (the next run tries again)
    crash.point("relay:prune-journaled")
    for sub, ids in due.items():
        for msg_id in ids:
            local.remove_entry(common_dir, sub, msg_id)
    return due
