"""The receiver's limits, judged by the drain at show time (docs/DESIGN.md, "Limits").

Sender checks are advice (anyone can write an inbox), so the drain is where the rules hold:
- loop: the same text from the same sender to this box again within `loop_seconds` is dropped;
- rate: a message that finds `rate_count` messages or more from its sender within the
  `rate_seconds` before it is dropped (the 9th in 30 s at 8/30), until the sender lets the
  window pass;
- backlog: a message behind `backlog` unread ones that the reading session can read is held
  back (left queued, not shown). Mail filtered for another session (`send --to @name`,
  `--session`) is not in that count: only its own session can read it, so it counts toward
  that session's backlog alone, and a session that ended with 50 of them blocks no one else.
Answers (kind `answer`) are never dropped, held or counted.

Every rule is a pure function of what is published: the message, the earlier messages of the
same sender in this box (in any state: queued, seen, expired, cancelled, dropped; their send
times come from their ids, which sort by time), and the settings. Mail relayed from another
clone is timed by its arrival here instead (the relay's record, store/arrivals.py): its id holds
the sending machine's clock, which may be days off, or hours old after a wait in an outbox
(docs/RELAY.md, "Limits and expiry by arrival"). So two drains judging the same
message at once agree, and a drop, made under the claim (store/drops.py), never races a show
of the same message. The one exception is a message already shown to some launch (settings
changed since, or an older version showed it): that is never dropped.

The "same sender" is the `from` path (the worktree the box key hashes) plus `from.session`
plus `from.launch`, the sending process as `send` proved it from /proc (clients.sender_of): a
client's launch, or outside every client the Unix session (a terminal, a script's).
So two agents, a shell and a script in one worktree are different senders, and a process that
only sets a session's variable is not that session. Still claims the sender wrote: limits stop
accidents and loops between cooperating agents; anyone who can write the inbox can forge them.
"""

import bisect
import time

from git_korus_mail.core import render
from git_korus_mail.core.limitconf import ANSWER, Limits, read
from git_korus_mail.errors import MailError
from git_korus_mail.store import markers
from git_korus_mail.store.files import NotOwned, NotRegular, TooLarge
from git_korus_mail.store.layout import CANCELLED, DROPPED
from git_korus_mail.store.message import Invalid, id_time

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.core.drain_context import DrainContext
    from git_korus_mail.store.arrivals import Arrivals
    from git_korus_mail.store.files import Box
    from git_korus_mail.store.message import Message

    Sender = Tuple[Optional[str], Optional[str], Optional[str]]  # from's path, session, launch
    Text = Tuple[int, int]  # a body's length and hash(): compared within one process, never stored
    Known = Optional[Tuple[Sender, Text]]  # of a countable message; None when it is not countable

HISTORY = ("inbox", "seen", "expired", CANCELLED, DROPPED)  # every state a published message can be in


def sender_of(msg: "Message") -> "Sender":
    sender = msg.get("from") or {}
    return sender.get("path"), sender.get("session"), sender.get("launch")


def exempt(msg: "Message") -> bool:
    return msg.get("kind") == ANSWER


class Judge:
    """One drain's judgments over one box: reads the settings and the box's history once, and
    only when there is mail to judge (an empty box's event never builds one)."""

    def __init__(self, box: "Box", common_dir: str, faults: "List[str]") -> None:
        self.box = box
        self.limits: Limits = read(common_dir, faults)
        self._ids: "Optional[List[Tuple[str, str]]]" = None  # (id, state), sorted by id
        self._known: "Dict[str, Known]" = {}
        self._times: "Dict[str, float]" = {}  # id -> its send time, parsed once (_earlier)
        self._arrivals: "Optional[Arrivals]" = None  # relayed mail's arrival times (_arrival)
        self._arrivals_looked = False
        self.dropped: "Dict[str, str]" = {}  # id -> what drops.drop returned
        self.held_back: "List[Tuple[str, Optional[str]]]" = []  # (id, sender path), oldest first

    def judge(self, msg_id: str, msg: "Message", position: int, readable: bool = True) -> bool:
        """Apply the limits to a message with `position` unread ones ahead of it that this
        session can read; True when it is not to be shown now (dropped, or held back behind a
        full backlog). `readable`: False for mail filtered for another session, which the loop
        and rate rules judge like any (they are the box's), but which no backlog here holds."""
        rule = self.verdict(msg_id, msg)
        if rule is not None:
            from git_korus_mail.store import drops  # loaded where used (hot path)
            self.dropped[msg_id] = drops.drop(self.box, msg_id, msg, rule[0], rule[1])
            return True
        if readable and self.held(position, msg):
            self.held_back.append((msg_id, sender_of(msg)[0]))
            return True
        return False

    def verdict(self, msg_id: str, msg: "Message") -> "Optional[Tuple[str, str]]":
        """(rule, detail) when a limit drops this message, None when it may be shown."""
        if exempt(msg):
            return None
        lim = self.limits
        arrived = self._arrival(msg_id)
        try:
            t = id_time(msg_id) if arrived is None else arrived
        except ValueError:
            return None
        who, text = sender_of(msg), _text(msg)
        self._known[msg_id] = (who, text)  # the next messages compare with it: no second read
        window = max(lim.loop_seconds, lim.rate_seconds)
        # relayed mail by its arrival here, among what arrived: its id's time is another machine's
        # clock (store/arrivals.py); a relayed sender's path names its clone, so no local mail is
        # ever its "same sender", and local mail is judged by its ids as before
        near = self._earlier(msg_id, t, window) if self._arrivals is None or arrived is None \
            else self._arrivals.before(msg_id, t, window)
        earlier = [(i, age) for i, age in near if self._same(i, who)]
        rule: "Optional[Tuple[str, str]]" = None
        for i, age in earlier:
            if age <= lim.loop_seconds and self._text(i) == text:
                rule = ("loop", f"the same text as {i}, {'sent' if arrived is None else 'arrived'} {age:.1f} s before it")
                break
        if rule is None:
            n = sum(1 for _, age in earlier if age < lim.rate_seconds)
            if n >= lim.rate_count:
                rule = ("rate", f"{n + 1} messages within {_secs(lim.rate_seconds)} s from one sender "
                                f"(korus-mail.rate is {lim.rate_count}/{_secs(lim.rate_seconds)})")
        if rule is not None and markers.shown_by(self.box, msg_id):
            return None  # shown already (before the settings changed): what was shown stands
        return rule

    def held(self, position: int, msg: "Message") -> bool:
        """Whether a message with `position` unread ones ahead of it waits for room (backlog)."""
        return position >= self.limits.backlog and not exempt(msg)

    # -- the box's history ---------------------------------------------------------
    def _arrival(self, msg_id: str) -> "Optional[float]":
        """When relayed mail `msg_id` arrived in this box; None for local mail. The records are
        read once per judge; a box that never received any has no arrived/ directory, and costs
        one failed open and no module (hot path)."""
        if self._arrivals is None:
            if not self._arrivals_looked:
                self._arrivals_looked = True
                if self.box.has_arrivals():
                    from git_korus_mail.store.arrivals import Arrivals  # loaded where used (hot path)
                    self._arrivals = Arrivals(self.box)
            if self._arrivals is None:
                return None
        return self._arrivals.time_of(msg_id)

    def _earlier(self, msg_id: str, t: float, window: float) -> "List[Tuple[str, float]]":
        """[(id, seconds before t)] of every message published before `msg_id` within `window`."""
        if self._ids is None:
            # judged oldest first, so nothing sent before this message's window matters to any
            # later one: only names from there on are kept and sorted (seen/ may hold thousands)
            since = time.strftime("%Y%m%dT%H%M%S", time.gmtime(max(0, int(t - window) - 1)))
            pairs: "List[Tuple[str, str]]" = []
            for sub in HISTORY:
                try:
                    pairs.extend((n[:-5], sub) for n in self.box.names(sub) if n >= since and n.endswith(".json"))
                except MailError:
                    continue  # a refused state (a symlink): it counts nothing; its move reports it
            self._ids = sorted(pairs)
        ids, times = self._ids, self._times
        out: "List[Tuple[str, float]]" = []
        last = None
        # walked back from this message by index, each id's time parsed once for the whole show:
        # judging a batch costs what the batch and its window hold, not the queue (issue 26)
        for at in range(bisect.bisect_left(ids, (msg_id, "")) - 1, -1, -1):
            i = ids[at][0]
            if i == last:
                continue  # listed in two states (a move under way): one message
            last = i
            sent = times.get(i)
            if sent is None:
                try:
                    sent = times[i] = id_time(i)
                except ValueError:
                    continue  # not a message id: nothing we count
            age = t - sent
            if age > window:
                break
            out.append((i, age))
        return out

    def _load(self, msg_id: str) -> "Known":
        if msg_id in self._known:
            return self._known[msg_id]
        known: "Known" = None
        ids = self._ids or []  # none listed when only relayed mail was judged (by its arrivals)
        at = bisect.bisect_left(ids, (msg_id, ""))
        listed = ids[at][1] if at < len(ids) and ids[at][0] == msg_id else "inbox"
        # where it was listed first, then wherever it moved since (consumed, expired, dropped)
        for sub in [listed] + [s for s in HISTORY if s != listed]:
            try:
                msg, _ = self.box.load(msg_id, sub)
            except FileNotFoundError:
                continue
            except (OSError, MailError, Invalid, NotOwned, NotRegular, TooLarge):
                break  # not a message we count (the drain quarantines the invalid)
            if not exempt(msg):
                known = (sender_of(msg), _text(msg))
            break
        self._known[msg_id] = known
        return known

    def _same(self, msg_id: str, who: "Sender") -> bool:
        k = self._load(msg_id)
        return k is not None and k[0] == who

    def _text(self, msg_id: str) -> "Optional[Text]":
        k = self._load(msg_id)
        return None if k is None else k[1]


def _text(msg: "Message") -> "Text":
    """What the loop rule compares: a body may be megabytes, and a few hundred are judged at once."""
    return len(msg["body"]), hash(msg["body"])


def _secs(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


# -- what the recipient is told -------------------------------------------------------
def tell(ctx: "DrainContext", judge: "Optional[Judge]", behind: int) -> "Tuple[List[str], List[str], Optional[Dict[str, Any]]]":
    """(lines for the show, notice names to clear once it is out, presence fields to record).
    Drops are told once, from their notices (written with the move, so a drop by a concurrent
    drain is told too); the backlog once per session for each newer message held back."""
    lines: "List[str]" = []
    notes: "List[Dict[str, Any]]" = []
    names: "List[str]" = []
    if ctx.box.names("notices"):  # a drop writes its notice there: none, and drops.py (moves.py with it) stays unloaded (hot path)
        from git_korus_mail.store import drops
        notes, names = drops.drop_notices(ctx.box)
    if notes:
        lines.append(drop_line(notes, ctx.box.path_of(DROPPED)))
    extra: "Optional[Dict[str, Any]]" = None
    if judge is not None and judge.held_back:
        newest = judge.held_back[-1][0]
        told = ctx.prior.get("held_told")
        if not isinstance(told, str) or newest > told:
            lines.append(held_line(judge, len(judge.held_back) + behind))
            extra = {"held_told": newest}
    return lines, names, extra


def _by_sender(senders: "List[Optional[str]]") -> str:
    counts: "Dict[str, int]" = {}
    for s in senders:
        counts[s or "unknown sender"] = counts.get(s or "unknown sender", 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{c} from {render.field(s, 120)}" for s, c in top[:3]]
    if len(top) > 3:
        parts.append(f"{sum(c for _, c in top[3:])} from {len(top) - 3} more senders")
    return ", ".join(parts)


def drop_line(notes: "List[Dict[str, Any]]", kept_in: str) -> str:
    """One line: how many were dropped, by which rule, from whom, and where they are kept."""
    rules: "Dict[str, int]" = {}
    for n in notes:
        r = str(n.get("rule") or "a limit")
        rules[r] = rules.get(r, 0) + 1
    how = ", ".join(f"{c} as {render.field(r, 20)}" for r, c in sorted(rules.items()))
    count = len(notes)
    return (f"korus-mail: {count} message{'s' if count != 1 else ''} to this worktree dropped by its limits "
            f"({how}; {_by_sender([n.get('from') for n in notes])}), never shown; kept in "
            f"{render.field(kept_in, 300)}")


def held_line(judge: Judge, count: int) -> str:
    lim = judge.limits
    return (f"korus-mail: {count} message{'s' if count != 1 else ''} held back, not shown yet: this box holds "
            f"more than its backlog of {lim.backlog} unread for this session (git config korus-mail.backlog); "
            f"{_by_sender([s for _, s in judge.held_back])}; shown as earlier mail is consumed")
