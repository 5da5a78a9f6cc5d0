"""The show phase: what a launch has not been shown yet, rendered, and marked shown only after
the output is out (Outcome.commit). Any show tells the expiry notices and withdrawals that
are pending (core/notices.py); the opening show also announces the box and sweeps stale
files. `ctx` is the run's DrainContext (core/drain_context.py).

`show` reads as its steps: what comes before any reading (`_before_reading`), the batch read
and judged (`_read`), what the session is told beside it (`_told`), the batch rendered
(`_render`), the presence recorded, and what runs after the output (`_after_output`)."""

import os

from git_korus_mail.core.drain_context import Outcome, why
from git_korus_mail.errors import MailError
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store.files import NotOwned, NotRegular, TooLarge
from git_korus_mail.store.layout import MSG_SUFFIX

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from git_korus_mail.core.drain_context import DrainContext
    from git_korus_mail.core.limits import Judge
    from git_korus_mail.core.render import BodyView, Rendered
    from git_korus_mail.core.shown import Shown
    from git_korus_mail.store.markers import LaunchMarkers
    from git_korus_mail.store.message import Message

    Item = Tuple[Message, str, str, BodyView]  # (message, its inbox path, its seen path, its body's view)

MAX_MESSAGES_EXAMINED = 200  # message files one show examines: a flood costs many events, not one long one
MAX_JUNK = 200  # files one show quarantines, after the real mail is read: junk never starves it
READ_BUDGET = 16 * 1024 * 1024  # message bytes one show reads (the first message always): bounds its memory


class Reading:
    """What one show read of the inbox: the ids queued, those this launch was not shown yet
    (candidates), the batch to render, how many candidates it examined and how many wait
    behind the backlog, and the limits' judge (None when there was nothing to judge)."""

    __slots__ = ("ids", "candidates", "batch", "examined", "behind", "judge")

    def __init__(self, ids: "List[str]", candidates: "List[str]", batch: "List[Item]", examined: int,
                 behind: int, judge: "Optional[Judge]") -> None:
        self.ids, self.candidates, self.batch = ids, candidates, batch
        self.examined, self.behind, self.judge = examined, behind, judge

    @property
    def remaining(self) -> int:
        """Candidates not examined and not behind the backlog: the next to show."""
        return len(self.candidates) - self.examined - self.behind


def show(ctx: "DrainContext") -> Outcome:
    # render is imported only where something is rendered: an event with no mail never needs it
    early = _before_reading(ctx)
    if early is not None:
        return early
    if ctx.root.is_off():
        return _off(ctx)
    reading = _read(ctx)
    if reading is None:
        return Outcome()  # another wiring of this very event shows them: once per event
    lines, notice_names, extra, told_done = _told(ctx, reading)
    text, blocks, deferred = _render(ctx, reading, lines)
    if text:
        lines.append(text)
    elif ctx.facts.opening:
        lines.append(_nothing_new(ctx, reading))
    ctx.record(extra)
    return Outcome(context="\n\n".join(lines) if lines else None,
                   commit=_after_output(ctx, reading, blocks, notice_names, told_done), report=ctx.report_late,
                   shown=_summary(ctx, reading, blocks, deferred))


def _before_reading(ctx: "DrainContext") -> "Optional[Outcome]":
    """The work that comes before the inbox is read; an Outcome when the show ends there (a
    twin wiring answers this opening show)."""
    facts, box = ctx.facts, ctx.box
    if facts.opening and not box.nothing_to_show() and not ctx.claim_event():
        return Outcome()  # another wiring of this very event answers it (docs/HOOKS.md, "One answer per event")
    if facts.new_context and box.names("shown"):
        # the context that held what this launch was shown is gone: forget those displays, so
        # they are offered again now and a consume takes only what the new context was shown.
        # Before the output: a run killed after this only shows them once more, never loses one.
        ctx.markers().forget_shown()
    if box.may_need_repair():
        from git_korus_mail.store import moves  # only with a claim to look at: moves.py stays unloaded (hot path)
        moves.repair(box)
    if facts.run_start and ctx.prior.get("state") == "working" and ctx.launch.known \
            and ctx.prior.get("launch") == ctx.launch.tag:
        # the run before this one never reached its consume phase (the user interrupted it): the
        # questions it was shown are answered `stopped`, the best that can be known
        from git_korus_mail.core import answer
        answer.close_open(ctx, "stopped", answer.STOPPED_TEXT)
    if facts.opening:
        ctx.root.sweep_tmp(ctx.now)  # staging files of killed processes (older than 36 h)
        from git_korus_mail.store import presence
        try:
            presence.sweep_staged(ctx.box, ctx.now)  # turn records staged by killed stubs (hooks/hook.sh)
        except (OSError, MailError):
            pass  # left for the next opening show: nothing reads them
    return None


def _off(ctx: "DrainContext") -> Outcome:
    """Delivery is off for the clone: nothing is shown; the opening show says so."""
    ctx.record()
    if ctx.facts.opening:
        return Outcome(context=f"korus-mail: delivery is off for this clone (as of {utc_stamp(ctx.now)});"
                               f" queued mail waits until `git korus-mail on`.")
    return Outcome()


def _read(ctx: "DrainContext") -> "Optional[Reading]":
    """List the inbox, read and judge what this launch was not shown yet, and quarantine a slice
    of the junk after it. None when a twin wiring of this event shows the candidates."""
    box = ctx.box
    ids, odd = box.inbox_ids()
    candidates = ctx.markers().unseen(ids) if ids else []  # an empty inbox loads no markers (hot path)
    if candidates and not ctx.claim_event():
        return None
    judge: "Optional[Judge]" = None
    batch: "List[Item]" = []
    examined = behind = 0
    if candidates:
        from git_korus_mail.core.limits import Judge  # only with mail to judge (hot path)
        judge = Judge(box, ctx.root.common_dir, ctx.faults)
        batch, _skipped, examined, behind = _load_batch(ctx, candidates, ctx.markers(), ids, judge)
    for name in odd:  # real mail first; the rest of the junk waits for later events
        if ctx.junk >= MAX_JUNK:
            break
        _quarantine(ctx, name, "not a message file name")
    return Reading(ids, candidates, batch, examined, behind, judge)


def _told(ctx: "DrainContext", reading: Reading
          ) -> "Tuple[List[str], List[str], Optional[Dict[str, Any]], Callable[[], None]]":
    """(lines told before the batch, notice names to clear once they are out, presence fields to
    record, done: run once the output is out): the expiry notices and the withdrawals of mail
    this launch was shown, at any event (core/notices.py, issue 25), the limits' drops and backlog."""
    # read only now: what the batch load just expired is told to this very session
    from git_korus_mail.core import notices
    lines, notice_names, done = notices.tell(ctx)
    extra: Optional[Dict[str, Any]] = None
    if reading.judge is not None or (ctx.facts.opening and ctx.box.names("notices")):  # else nothing to tell (hot path)
        from git_korus_mail.core import limits  # the drops told once, the backlog once per new arrival
        told, told_names, extra = limits.tell(ctx, reading.judge, reading.behind)
        lines.extend(told)
        notice_names.extend(told_names)
    return lines, notice_names, extra, done


def _render(ctx: "DrainContext", reading: Reading,
            lines: "List[str]") -> "Tuple[Optional[str], List[Rendered], int]":
    """(the batch's text, or None; the blocks rendered; how many wait for a later event), in
    the room `lines` leave."""
    if not reading.batch:
        return None, [], reading.remaining
    from git_korus_mail.core import render
    budget = render.EVENT_CAP - sum(render.units(x) + 2 for x in lines)
    # the client's own unit and limit too: a batch under our cap in UTF-16 units can pass a
    # limit of 10,000 UTF-8 bytes (CJK is 3 bytes a unit); fitted here, at whole messages
    measure = render.measure_of(ctx.facts.context_unit)
    limit = ctx.facts.context_limit
    if limit is not None:
        limit -= sum(measure(x) + 2 for x in lines)
    return render.render_batch(reading.batch, ctx.key.path, ctx.now, reading.remaining, budget=budget,
                               now=ctx.now, measure=measure, limit=limit)


def _nothing_new(ctx: "DrainContext", reading: Reading) -> str:
    """The opening show's line when it shows no mail."""
    if reading.ids and not reading.candidates:  # everything queued was shown (or skipped) already
        return (f"korus-mail: no new mail for {path_field(ctx.key.path)} "
                f"(as of {utc_stamp(ctx.now)}; {len(reading.ids)} already shown to this session).")
    return f"korus-mail: the box for {path_field(ctx.key.path)} is empty (as of {utc_stamp(ctx.now)})."


def _after_output(ctx: "DrainContext", reading: Reading, blocks: "List[Rendered]",
                  notice_names: "List[str]", told_done: "Callable[[], None]") -> "Callable[[], List[str]]":
    """The follow-up, run after the output is out: each step's failure is collected, none stops
    the next or the exit code (docs/HOOKS.md). A marker that cannot be written leaves its
    message unconsumed, to be shown again: never consumed unseen, never lost."""
    questions = {m["id"] for m, *_ in reading.batch if m.get("kind") == "question"}
    root, box = ctx.root, ctx.box

    def commit() -> "List[str]":
        faults: List[str] = []
        if blocks:  # the crash points mark the gaps around the markers: none without one
            from git_korus_mail import crash
            crash.point("show:emitted")
        # The marker proves that THIS launch displayed the message; written only now,
        # after the output is out (docs/DESIGN.md R7: a marker minted first lost mail).
        for b in blocks:
            obs = {"session": ctx.session, "launch": ctx.launch.tag, "event": ctx.facts.label,
                   "at": utc_stamp(ctx.now), "chars": len(b.text), "truncated": b.truncated,
                   "body_chars": b.body_chars}
            if b.msg_id in questions:
                obs["question"] = True  # the consume phase answers it (core/answer.py)
            try:
                ctx.markers().mark(b.msg_id, obs)
            except (OSError, MailError) as exc:
                faults.append(f"display marker for {b.msg_id} not written ({why(exc)}); "
                              f"it stays queued and is shown again")
        if blocks:
            crash.point("show:marked")
        for b in blocks:
            root.journal("shown", id=b.msg_id, box=box.name, session=ctx.session, launch=ctx.launch.tag,
                         hook_event=ctx.facts.label)
        told_done()
        try:
            box.clear_notices(notice_names)
        except (OSError, MailError) as exc:
            faults.append(f"notices not cleared ({why(exc)}); they may be told again")
        if ctx.facts.opening:
            ctx.sweep()  # a new launch is when an old one's markers are most likely stale
            faults.extend(_prune(ctx))
        return faults + root.take_journal_faults()
    return commit


def _summary(ctx: "DrainContext", reading: Reading, blocks: "List[Rendered]", deferred: int) -> "Optional[Shown]":
    """The mail the context shows, for the client's line to the person; None when it shows none."""
    if not blocks:
        return None
    from git_korus_mail.core.shown import Shown
    rendered = {b.msg_id for b in blocks}
    return Shown.of([m for m, *_rest in reading.batch if m["id"] in rendered], ctx.key.path, deferred)


def _load_batch(ctx: "DrainContext", candidates: "List[str]", marks: "LaunchMarkers", ids: "List[str]",
                judge: "Judge") -> "Tuple[List[Item], int, int, int]":
    """Read candidates oldest first until a render's worth is found. Returns
    ([(msg, path, seen_path, BodyView)], skipped, number examined, number not examined that wait
    behind the backlog). Bounded by the batch, not the inbox, and in memory: each body is trimmed
    to what can be rendered as soon as it is parsed, and one event reads at most READ_BUDGET
    bytes of messages (the rest wait for the next). The limits judge each message in the order
    of sending, before it is rendered (core/limits.py): a loop or a flood is dropped, mail
    behind a full backlog held back (left queued, unmarked)."""
    from git_korus_mail.core import render
    from git_korus_mail.store.message import Invalid, expires_at  # only with mail to read (hot path)
    box = ctx.box
    batch: List[Item] = []
    skipped, examined, read = 0, 0, 0
    inbox_path = box.path_of("inbox")
    seen_path = box.path_of("seen")
    # enough to fill one event even when every message is small
    want = render.EVENT_CAP // 200
    # ... and no more than can fill it: reading stops once the floors of the blocks read (each
    # at most what its block can take, see _block_floor) cover the most room an event has, so a
    # drain reads what it can show, not a fixed count (issue 26: 40 read to show 11)
    room = render.EVENT_CAP - len(render.PREAMBLE) - 160
    floors = 0
    # The backlog judges what this session can read (docs/DESIGN.md, "Limits"): a message's place
    # counts the queued mail before it, less what is for another session (a `session` filter):
    # that is never shown here, so it never holds back what is. Known from this launch's skip
    # markers for what an earlier event read, and from the reading below for the rest.
    from git_korus_mail.store.markers import SKIP_SUFFIX
    marked = marks.names()
    position: Dict[str, int] = {}
    others = 0
    for n, i in enumerate(ids):
        position[i] = n - others
        others += i + SKIP_SUFFIX in marked
    gone = 0  # of the messages examined so far, those no longer queued (or not this session's): they free their place
    for msg_id in candidates:
        if len(batch) >= want or examined >= MAX_MESSAGES_EXAMINED or read >= READ_BUDGET or floors >= room:
            break
        examined += 1
        try:
            msg, st = box.load(msg_id)
        except FileNotFoundError:
            gone += 1
            continue  # consumed or expired since we listed
        except NotOwned as exc:
            _quarantine(ctx, msg_id + MSG_SUFFIX, f"owned by uid {exc.args[0]}, not by you")
            gone += 1
            continue
        except NotRegular as exc:
            _quarantine(ctx, msg_id + MSG_SUFFIX, f"not a regular file ({exc})")
            gone += 1
            continue
        except TooLarge as exc:
            _quarantine(ctx, msg_id + MSG_SUFFIX, f"too large ({exc.args[0]} bytes)")
            gone += 1
            continue
        except Invalid as exc:
            _quarantine(ctx, msg_id + MSG_SUFFIX, f"invalid message: {exc}")
            gone += 1
            continue
        except OSError as exc:
            ctx.faults.append(f"cannot read {msg_id}: {exc.strerror}")
            continue
        read += st.st_size
        if st.st_nlink > 1:
            from git_korus_mail.store import publish  # loaded where used (hot path)
            why = publish.linked_elsewhere(box, msg_id, st)
            if why == "in-progress":
                continue
            if why is None:
                _quarantine(ctx, msg_id + MSG_SUFFIX, "hard-linked to another file")
                gone += 1
                continue
        if expires_at(msg) <= ctx.now:
            from git_korus_mail.store import moves  # loaded where used (hot path)
            moves.expire(box, msg_id, msg)
            gone += 1
            continue
        theirs = bool(msg.get("session")) and msg["session"] != ctx.session  # filtered for another session
        if judge.judge(msg_id, msg, position[msg_id] - gone, readable=not theirs):
            gone += msg_id in judge.dropped
            continue  # dropped (told once, below) or held back (told once per new arrival)
        if theirs:
            marks.skip(msg_id)
            skipped += 1
            gone += 1  # not this session's to read: it takes no place in its backlog
            continue
        msg, view = render.trim(msg)  # the body is let go here: one event holds a few KB per message
        if batch:  # the first block may be cut to any size: it counts nothing
            floors += _block_floor(view) + 2
        batch.append((msg, os.path.join(inbox_path, msg_id + MSG_SUFFIX),
                      os.path.join(seen_path, msg_id + MSG_SUFFIX), view))
    behind = sum(1 for i in candidates[examined:] if position[i] - gone >= judge.limits.backlog)
    return batch, skipped, examined, behind


HEADER_FLOOR = 150  # units: a block's frame, id, sender and kind lines take more than this


def _block_floor(view: "BodyView") -> int:
    """Fewer units than the block of a message with this body takes when render_batch shows it
    after another (core/render.py). Each line of the view is at least its prefix, its newline
    and its text: whole (escapes only lengthen it), or cut at LINE_CAP to within its cut note of
    that (LINE_CAP - 50). A block cut for want of room is shown after another only at
    MESSAGE_CAP, which it then fills to within a line and the cut note (MESSAGE_CAP - LINE_CAP - 100)."""
    from git_korus_mail.core import render
    line_floor = render.LINE_CAP - 50
    body = sum(len(render.BODY_PREFIX) + min(raw_len, line_floor) + 1 for _start, raw_len, _span in view.lines)
    return min(HEADER_FLOOR + body, render.MESSAGE_CAP - render.LINE_CAP - 100)


def _quarantine(ctx: "DrainContext", name: str, reason: str) -> None:
    """Move a bad file aside under a name we choose. Its own name is data from whoever wrote
    it: said to the user only escaped (render.field), and never put in the model's context."""
    from git_korus_mail.core import render
    if ctx.junk >= MAX_JUNK:
        return  # this event's share of junk work is done; the file waits for the next
    ctx.junk += 1
    from git_korus_mail.store import records  # loaded where used (hot path)
    target = records.quarantine(ctx.box, name, reason)
    if target is not None:
        ctx.faults.append(f"quarantined {render.field(name, 80)} as quarantine/{target}: "
                           f"{render.field(reason, 120)}")


PLAIN_FIELD_MAX = 120  # at most render.FIELD_CAP: see path_field


def path_field(path: str) -> str:
    """render.field(path). Printable ASCII no longer than the field's cap comes back unchanged,
    so the usual path is told without loading render.py (hot path; tests/test_render.py)."""
    if 0 < len(path) <= PLAIN_FIELD_MAX and path.isascii() and path.isprintable():
        return path
    from git_korus_mail.core import render
    return render.field(path)


def _prune(ctx: "DrainContext") -> "List[str]":
    """Retention, at an opening show and at most once a day per box (store/retention.py): after
    the output, so no answer waits for it; its faults are told at the next consume."""
    try:
        if not ctx.box.prune_due(ctx.now):
            return []  # the usual opening show: store/retention.py stays unloaded (hot path)
        from git_korus_mail.store import retention
        from git_korus_mail.core.retention import keep_days
        days, _problem = keep_days(ctx.key.path)  # a bad value: the default; doctor and status say why
        retention.prune(ctx.box, days * 86400, ctx.now)
    except (OSError, MailError) as exc:
        return [f"old mail not pruned ({why(exc)}); the next session's start tries again"]
    return []
