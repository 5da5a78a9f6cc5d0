"""The honest verdict at send (docs/HOOKS.md, "The verdict at send"): for each destination,
`delivered` only when the recipient's drain proved a live launch was shown the message (its
display marker, or the receipt of its consume, which holds that marker's observation);
`queued` otherwise, with why; `refused` when it was not queued at all. Every verdict carries
the time it was true at. `send --wait` (and `ask`) poll `judge` for a few seconds."""

import time

from git_korus_mail.core.render import field
from git_korus_mail.errors import MailError
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store import claims, markers, presence, records
from git_korus_mail.store.launch import parse_tag

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from git_korus_mail.core.vocab import Judged, SendResult, Verdict
    from git_korus_mail.store.files import Box, MailRoot

NOT_SHOWN = ("dropped", "expired", "cancelled", "gone")  # verdicts of mail queued, then ended unshown
# the fates (store/records.py `fate`) that are their own verdict: mail that ended unshown, not by a drop
ENDED_UNSHOWN: "Dict[str, Verdict]" = {"expired": "expired", "cancelled": "cancelled", "gone": "gone"}
DEFAULT_WAIT = 2.0  # seconds send waits for the proof by default
POLL = 0.05


def _session(session: "Any") -> str:
    """`session <id>` as read from disk, escaped; words, never `session None`, when none is named."""
    return f"session {field(session)}" if session else "a session that named no id"


def launch_alive(tag: "Optional[str]") -> bool:
    """Whether the client launch of this tag (store/launch.py) still runs."""
    parsed = parse_tag(tag) if isinstance(tag, str) else None
    if parsed is None:
        return False
    pid, start, boot8 = parsed
    mine = claims.me("check")
    if boot8 and mine["boot"] and not mine["boot"].startswith(boot8):
        return False
    return claims.judge({"pid": pid, "start": start, "host": mine["host"], "pidns": mine["pidns"],
                         "boot": mine["boot"]})[0] == "alive"


def judge(box: "Box", msg_id: str, only_for: "Optional[str]" = None, wired: bool = True) -> "Judged":
    """{"verdict", "as_of", "why", "shown_to"?} for a queued message, as things are now;
    `only_for` is the message's session filter (only that session is ever shown it)."""
    now = time.time()
    try:
        state, session = records.fate(box, msg_id)
    except (OSError, MailError):
        state, session = None, None
    if state in ("consumed", "consumed-unmoved"):
        return {"verdict": "delivered", "as_of": utc_stamp(now), "shown_to": {"session": session},
                "why": f"consumed by {_session(session)}"}
    for shown in markers.shown_by(box, msg_id):
        if launch_alive(shown.get("launch")):
            return {"verdict": "delivered", "as_of": utc_stamp(now), "shown_to": shown,
                    "why": f"shown to {_session(shown.get('session'))} at {field(shown.get('event'))}"}
    if state == "dropped":
        # the receiver's limits decided: it is shown to nobody, so the verdict is the fate itself
        why = session if isinstance(session, dict) else {}
        rule = f" ({why.get('rule')}: {why.get('detail')})" if why.get("rule") else ""
        return {"verdict": "dropped", "as_of": utc_stamp(now),
                "why": f"the receiver's limits dropped it{rule}; it is shown to nobody"}
    ended = ENDED_UNSHOWN.get(state) if state is not None else None
    if ended is not None:
        return {"verdict": ended, "as_of": utc_stamp(now), "why": f"it is {ended} before anyone was shown it"}
    return {"verdict": "queued", "as_of": utc_stamp(now), "why": _why_queued(box, msg_id, only_for, wired)}


def _why_queued(box: "Box", msg_id: str = "", session: "Optional[str]" = None, wired: bool = True) -> str:
    from git_korus_mail.core import wake
    if not wired:
        return ("nothing is wired to show it: no hook is installed in this clone; "
                "`git korus-mail install` wires one")
    records = presence.sessions(box)
    if session is not None:
        # mail filtered to one session waits for that session alone: never "when one starts"
        # when a new session there would not be shown it (issue 21, item 9)
        records = [r for r in records if r.get("session") == session]
        if not any(r["liveness"] in ("working", "idle") for r in records):
            return (f"for session {session} alone, which is not running: it is shown only when that "
                    f"session is resumed; no other session there is shown it")
    live = [r for r in records if r["liveness"] in ("working", "idle")]
    if not live:
        return "no live session there; it is shown when one starts"
    if msg_id and any(wake.woken_for(box, r, msg_id) for r in live):
        return "a session there was woken for it; it is shown in the turn the wake started"
    if any(r["liveness"] == "working" for r in live):
        return "a session there is working; it is shown at its next tool call or prompt"
    until = [u for u in (wake.wakeable_until(box, r) for r in live) if u]
    if until:
        return f"a session there is idle and wakeable until {max(until)}; not shown yet"
    spent = [f for f in (wake.budget_frees_at(box, r) for r in live) if f is not None]
    if spent:
        return (f"a session there is idle and its wake budget is spent until {utc_stamp(min(spent))}; "
                "it is shown at its next prompt")
    return "the sessions there are idle and not wakeable; it is shown at their next prompt"


def worth_waiting(box: "Box", sender: "Optional[str]" = None, working: bool = True) -> bool:
    """Whether a live session there could show it soon: idle with a watcher, or (`working`) one
    working. Never the sending session itself: its next event comes only after this send ends."""
    from git_korus_mail.core import wake
    for r in presence.sessions(box):
        if sender is not None and r.get("session") == sender:
            continue
        if working and r["liveness"] == "working":
            return True
        if r["liveness"] == "idle" and wake.wakeable_until(box, r):
            return True
    return False


def await_verdicts(root: "MailRoot", queued: "List[SendResult]", wait: "Optional[float]",
                   sender: "Optional[str]" = None, wired: bool = True) -> None:
    """Add "verdict", "as_of", "why" (and "shown_to") to each queued result ({"box", "id", ...}),
    waiting up to `wait` seconds for destinations where a live session could show it."""
    # no --wait: DEFAULT_WAIT, and only for a wakeable session, whose proof comes within a second;
    # a working one shows it at its next tool call, which may be minutes away
    working = wait is not None
    wait = DEFAULT_WAIT if wait is None else wait
    deadline = time.time() + max(0.0, wait)
    boxes: "Dict[str, Optional[Box]]" = {}
    pending = []
    for r in queued:
        box = boxes.setdefault(r["box"], root.box(r["box"]))
        if box is None:
            r.update({"verdict": "queued", "as_of": utc_stamp(time.time()), "why": "its box is gone"})
            continue
        _take(r, judge(box, r["id"], r.get("session"), wired))
        if r["verdict"] == "queued" and wait > 0 and worth_waiting(box, sender, working):
            pending.append((r, box))
    while pending and time.time() < deadline:
        time.sleep(POLL)
        still = []
        for r, box in pending:
            _take(r, judge(box, r["id"], r.get("session"), wired))
            if r["verdict"] == "queued":
                still.append((r, box))
        pending = still
    for r, box in pending:
        _take(r, judge(box, r["id"], r.get("session"), wired))


def _take(r: "SendResult", judged: "Judged") -> None:
    """Give a send result what `judge` said (a shown_to once given stays: it was shown)."""
    r["verdict"], r["as_of"], r["why"] = judged["verdict"], judged["as_of"], judged["why"]
    if "shown_to" in judged:
        r["shown_to"] = judged["shown_to"]


def settle(clone: "Any", results: "List[SendResult]", wait: "Optional[float]",
           sender: "Optional[str]" = None, wired: bool = True) -> None:
    """Give each of send.deliver's results its verdict: `refused` for one not queued, else what
    `await_verdicts` finds within `wait` seconds. `wired`: whether install wired any hook in this
    clone (the command asks wiring/record.py; the core knows no wiring): without one, no
    session's event runs the drain, and the verdict says so."""
    queued = [r for r in results if r.get("ok")]
    for r in results:
        if not r.get("ok"):
            r.update({"verdict": "refused", "as_of": utc_stamp(time.time()), "why": r.get("error")})
    if queued:
        root = clone.mail_root()
        if root is None:
            for r in queued:
                r.update({"verdict": "queued", "as_of": utc_stamp(time.time()), "why": "the mail root is gone"})
            return
        await_verdicts(root, queued, wait, sender, wired)
