"""Retention: mail in a final state (consumed, expired, cancelled, dropped) is kept for a while,
then pruned with its receipt, notice and display markers. Queued mail is never pruned.

A message's age here is counted from when this store moved it into its final state, by the
mover's own clock: a consumed message by its receipt's mtime (set at consume), any other by
its file's mtime, which the move sets (moves.finish_move), or its ctime (the link into that
state) when later. Never by its expiry: a clock stepped forward expires mail, and the same run
must not prune it. A clock that reads earlier than one of these stamps, or than the box's last
prune, has gone back: the run prunes nothing (docs/STORE.md, "Retention").
Pruning one message is a claim, a marker `pruning/<id>.json`, the unlinks (message, receipt,
notice, display markers); once the run's journal line (counts and ids) is written, the markers
go. A process killed in between leaves the markers, and the next prune finishes those messages
first and journals them. So a receipt never outlives its message unannounced, and every pruned
id is journaled (docs/STORE.md, I2). The box's `pruned` file says when it last ran: at most once a day per box,
at a bounded number of messages per run (docs/STORE.md, "Retention"). Records that outlive what they
describe (sent records, quarantined junk, ended sessions' presence) go in the same run (`prune_records`).
"""

import stat
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.errors import MailError
from git_korus_mail.store.fsafe import NotRegular, TooLarge
from git_korus_mail.store.layout import DROPS, FINAL, MSG_SUFFIX, PRUNED_STAMP, PRUNING_DIR, WHY_SUFFIX
from git_korus_mail.stamps import parse_stamp, utc_stamp
# crash, claims and markers: loaded by a prune only; an opening show asks Box.prune_due first (hot path)

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.store.files import Box
    from git_korus_mail.store.fsafe import Dir

MAX_PRUNED = 100      # messages one run removes: the rest wait for the next run
MAX_EXAMINED = 2000   # files one run looks at
MAX_RECORDS = 500     # records (sent, quarantine, sessions) one run removes
CLOCK_SLACK = 5 * 60  # seconds a stamp may lie ahead of the clock before the clock counts as gone back


def prune(box: "Box", keep_seconds: float, now: "Optional[float]" = None,
          limit: int = MAX_PRUNED) -> "Dict[str, List[str]]":
    """Remove messages that reached a final state more than `keep_seconds` ago (up to `limit`),
    with their records; first finish what a killed prune left. Returns {state: [ids removed]};
    journals one `pruned` line with the counts; stamps the box. Prunes nothing when the clock
    reads earlier than one of the store's own stamps (`_clock_went_back`)."""
    from git_korus_mail import crash
    now = time.time() if now is None else now
    if _clock_went_back(box, now):
        return {}
    due = _due(box, keep_seconds, now, limit)
    if due is None:
        _stamp(box, now)  # the next try a day later; the message's own stamp stays the mark to pass
        return {}
    done: Dict[str, List[str]] = {}
    pending = box.open_sub(PRUNING_DIR)
    for name in (pending.names() if pending is not None else []):
        if pending is not None and name.endswith(MSG_SUFFIX) and not name.startswith("."):
            rec = pending.read_json(name)
            state = rec.get("state") if isinstance(rec, dict) else None
            if _one(box, name[:-len(MSG_SUFFIX)], state if state in FINAL else None):
                done.setdefault(state if state in FINAL else "unknown", []).append(name[:-len(MSG_SUFFIX)])
    count = sum(len(v) for v in done.values())
    for state, msg_id in due:
        if count >= limit:
            break
        if _one(box, msg_id, state):
            done.setdefault(state, []).append(msg_id)
            count += 1
    records = prune_records(box, keep_seconds, now)
    if done or records:
        ids = sorted(i for v in done.values() for i in v)
        box.root.journal("pruned", box=box.name, count=count, states={k: len(v) for k, v in done.items()},
                         ids=ids, kept_days=round(keep_seconds / 86400, 2), records=records)
        crash.point("prune:journaled")
        pending = box.ensure_sub(PRUNING_DIR)
        for msg_id in ids:
            pending.unlink_quiet(msg_id + MSG_SUFFIX)  # journaled: the prune of each is complete
    if count < limit and sum(records.values()) < MAX_RECORDS:
        # done for today; a run that hit its limit leaves no stamp, so the next opening show goes on
        # (one that only examined its fill of young mail does not: it would find the same again)
        _stamp(box, now)
    return done


def _stamp(box: "Box", now: float) -> None:
    """The box's `pruned` file: its content, this run's time by the store's clock (the mark a later
    run's clock must not fall behind: `_clock_went_back`); its mtime, when to run next (`prune_due`)."""
    box.dir.write_replace(PRUNED_STAMP, f"{utc_stamp(now)}\n".encode(), box.root.tmp)


def _due(box: "Box", keep_seconds: float, now: float, limit: int) -> "Optional[List[Tuple[str, str]]]":
    """[(state, id)] of up to `limit` messages that reached their final state more than
    `keep_seconds` ago, oldest ids first; None when one examined was moved later than `now`
    (its stamp is the store's own: the clock went back since, so no age here can be trusted)."""
    from git_korus_mail.store.message import valid_id
    due: "List[Tuple[str, str]]" = []
    examined = 0
    for state in FINAL:
        d = box.open_sub(state)
        if d is None:
            continue
        for name in sorted(d.names()):  # ids sort by send time: the oldest first
            if len(due) >= limit or examined >= MAX_EXAMINED:
                break
            msg_id = name[:-len(MSG_SUFFIX)]
            if not name.endswith(MSG_SUFFIX) or not valid_id(msg_id):
                continue  # not a message (a record beside it, junk): never taken for one
            examined += 1
            sent = _sent_time(msg_id)
            if sent is not None and now - sent < keep_seconds:
                break  # sent too recently to have reached any state long ago: so is every later id
            at = _state_time(box, d, state, msg_id)
            if at is not None and at > now + CLOCK_SLACK:
                return None
            if at is not None and now - at >= keep_seconds:
                due.append((state, msg_id))
    return due


def _clock_went_back(box: "Box", now: float) -> bool:
    """Whether `now` is earlier than the box's last prune by its own stamp (the `pruned` file
    holds the time that prune ran by its clock). Then nothing is pruned: the clock was wrong
    then or is wrong now, and either way no age measured against it can be trusted. The stamp
    is left as it is (it stays the mark to pass) and only its mtime is set to `now`, so that
    `Box.prune_due` asks again a day later, not at every opening show."""
    try:
        data, _ = box.dir.read_regular(PRUNED_STAMP, 256)
        last = parse_stamp(data.decode("ascii", "replace").strip())
    except (OSError, ValueError, NotRegular, TooLarge):
        return False  # none yet, or not ours: nothing to compare with
    if last <= now + CLOCK_SLACK:
        return False
    try:
        box.dir.set_mtime(PRUNED_STAMP, now)
    except OSError:
        pass  # gone meanwhile: the next opening show tries again, which costs a listing
    return True


def prune_records(box: "Box", keep_seconds: float, now: float, limit: int = MAX_RECORDS) -> "Dict[str, int]":
    """The box's records that outlive what they describe (docs/STORE.md, "Retention"), up to
    `limit`; {kind: how many removed}, only the kinds with any.

    - sent/<id>.json, the sender's view of one message: once that message's expiry is older
      than the keeping time, it is final wherever it went and pruned there too;
    - quarantine/ entries (junk set aside, and each one's .why.json), by when they were set
      aside (ctime: the move into quarantine/);
    - sessions/<session>.json (presence) and its .roster file, of a session whose client no
      longer runs (presence.liveness: closed or gone) and whose last event is that old;
    - arrived/ records (store/arrivals.py) by their arrival, unless that message is still queued.
    None of them is a message, so none needs a claim: each is one unlink, and a run killed
    between two leaves only records the next run removes."""
    removed: "Dict[str, int]" = {}

    def gone(kind: str, d: "Dir", *names: str) -> None:
        if sum(d.unlink_quiet(name) for name in names):  # every name is tried
            removed[kind] = removed.get(kind, 0) + 1

    def listed(sub: str) -> "List[Tuple[Dir, str]]":
        """(dir, name) of `sub`'s first MAX_EXAMINED entries in name order (ids: oldest first)."""
        d = box.open_sub(sub)
        return [(d, n) for n in sorted(d.names())[:MAX_EXAMINED] if not n.startswith(".")] if d is not None else []

    for sent, name in listed("sent"):
        if sum(removed.values()) >= limit:
            break
        if not name.endswith(MSG_SUFFIX):
            continue
        sent_at = _sent_time(name[:-len(MSG_SUFFIX)])
        if sent_at is not None and now - sent_at < keep_seconds:
            break  # sent too recently to have expired long ago: so was every later id
        if _older(sent.read_json(name), "expires_at", now, keep_seconds):
            gone("sent", sent, name)
    for aside, name in listed("quarantine"):
        if sum(removed.values()) >= limit:
            break
        if name.endswith(WHY_SUFFIX):
            continue  # a reason goes with its entry
        try:
            st = aside.lstat(name)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode) and now - st.st_ctime >= keep_seconds:  # a directory: a person's to judge
            gone("quarantine", aside, name, name + WHY_SUFFIX)
    from git_korus_mail.store import presence
    for sessions, name in listed("sessions"):
        if sum(removed.values()) >= limit:
            break
        if not name.endswith(MSG_SUFFIX):
            continue
        rec = sessions.read_json(name)
        if _older(rec, "at", now, keep_seconds) and presence.liveness(rec, now) not in presence.LIVE:
            base = name[:-len(MSG_SUFFIX)]
            gone("sessions", sessions, name, base + presence.ROSTER_SUFFIX, base + presence.STATE_SUFFIX,
                 base + presence.FAULTS_SUFFIX)
    left = limit - sum(removed.values())
    if left > 0:
        from git_korus_mail.store import arrivals  # a box that never received relayed mail has none
        n = arrivals.prune(box, keep_seconds, now, left)
        if n:
            removed["arrived"] = n
    return removed


def _older(rec: "Any", field: str, now: float, keep_seconds: float) -> bool:
    """Whether the record `rec` (parsed JSON) has a time stamp `field` older than `keep_seconds`."""
    try:
        return isinstance(rec, dict) and now - parse_stamp(rec.get(field)) >= keep_seconds
    except ValueError:
        return False


def _sent_time(msg_id: str) -> "Optional[float]":
    from git_korus_mail.store.message import id_time
    try:
        return id_time(msg_id)
    except ValueError:
        return None


def _state_time(box: "Box", d: "Dir", state: str, msg_id: str) -> "Optional[float]":
    """When the store moved the message into `state` (see the module's note); None when it
    cannot be told. A consumed message: its receipt's mtime. Any other: the later of the
    message file's mtime, which the move stamps by the mover's clock (moves.finish_move), and
    its ctime, the file system's time of the link (all a message moved before that stamp has)."""
    name = msg_id + MSG_SUFFIX
    try:
        if state == "seen":
            receipts = box.open_sub("receipts")
            if receipts is not None and receipts.exists(name):
                return receipts.lstat(name).st_mtime
        st = d.lstat(name)
        return max(st.st_mtime, st.st_ctime)
    except FileNotFoundError:
        return None


def _one(box: "Box", msg_id: str, state: "Optional[str]") -> bool:
    """Prune one message under its claim, leaving its marker for `prune` to remove once journaled;
    True when it is pruned now (by this call, or by a killed prune whose marker this finishes)."""
    name = msg_id + MSG_SUFFIX
    from git_korus_mail import crash
    from git_korus_mail.store import claims
    owner = claims.me("prune", root=box.root)
    claiming = box.ensure_sub("claiming")
    if claims.acquire(box.root.tmp, claiming, msg_id, owner)[0] != "won":
        return False  # a live mover has it (or a dead one's claim waits for repair): next run
    try:
        if box.has("inbox", name):
            return False  # a move into a final state not finished: the repair completes it first
        pending = box.ensure_sub(PRUNING_DIR)
        try:
            # not fsynced: an fsync per message made a day's prune of 80 cost 0.6 s at a session's
            # start, and a power cut can at worst part a pair of mail delivered long ago
            pending.create_staged(name, json.dumps({"id": msg_id, "state": state, "at": utc_stamp(time.time())},
                                                   sort_keys=True).encode(), box.root.tmp, "prune", sync=False)
        except FileExistsError:
            pass  # a killed prune's marker: finish its work
        crash.point("prune:marked")
        for sub in ([state] if state else list(FINAL)):
            d = box.open_sub(sub)
            if d is not None:
                d.unlink_quiet(name)
        crash.point("prune:message")
        for sub in ("receipts", "notices", DROPS):  # DROPS: a dropped message's reason goes with it
            d = box.open_sub(sub)
            if d is not None:
                d.unlink_quiet(name)
        crash.point("prune:receipt")
        _unlink_markers(box, msg_id)
        return True
    finally:
        claims.release_own(claiming, msg_id, owner)


def _unlink_markers(box: "Box", msg_id: str) -> None:
    """Display markers of other launches for a message long gone: they authorize nothing now."""
    from git_korus_mail.store.markers import SKIP_SUFFIX
    shown = box.open_sub("shown")
    if shown is None:
        return
    for launch_dir in shown.names():
        try:
            d = shown.open_sub(launch_dir) if not launch_dir.startswith(".") else None
        except (OSError, MailError):
            continue  # junk in shown/ is the marker sweep's to clear
        if d is not None:
            d.unlink_quiet(msg_id)
            d.unlink_quiet(msg_id + SKIP_SUFFIX)
            d.close()
