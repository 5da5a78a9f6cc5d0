"""The show phase: what a launch has not been shown yet, rendered, and marked shown only after
the output is out (drain.Outcome.commit). The opening show also announces the box, tells
expiry notices and sweeps stale files. `drain` is the drain.Drain being run."""

import os

from git_korus_mail.core.drain import MAX_EXAMINED, MAX_JUNK, READ_BUDGET, Outcome, _why
from git_korus_mail.errors import MailError
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store.files import NotOwned, NotRegular, TooLarge
from git_korus_mail.store.layout import MSG_SUFFIX

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.core.drain import Drain
    from git_korus_mail.core.limits import Judge
    from git_korus_mail.core.render import BodyView, Rendered
    from git_korus_mail.store.markers import LaunchMarkers
    from git_korus_mail.store.message import Message

    Item = Tuple[Message, str, str, BodyView]  # (message, its inbox path, its seen path, its body's view)


def show(drain: "Drain") -> Outcome:
    # render is imported only where something is rendered: an event with no mail never needs it
    box, root = drain.box, drain.root
    if drain.opening and not box.nothing_to_show() and not drain._claim_event():
        return Outcome()  # another wiring of this very event answers it (docs/HOOKS.md, "One answer per event")
    if drain.new_context and drain.box.names("shown"):
        # the context that held what this launch was shown is gone: forget those displays, so
        # they are offered again now and a consume takes only what the new context was shown.
        # Before the output: a run killed after this only shows them once more, never loses one.
        drain._markers().forget_shown()
    box.repair()
    if drain.run_start and drain.prior.get("state") == "working" and drain.launch.known \
            and drain.prior.get("launch") == drain.launch.tag:
        # the run before this one never reached its consume phase (the user interrupted it): the
        # questions it was shown are answered `stopped`, the best that can be known
        from git_korus_mail.core import answer
        answer.close_open(drain, "stopped", answer.STOPPED_TEXT)
    if drain.opening:
        root.sweep_tmp(drain.now)  # staging files of killed processes (older than 36 h)
    lines: List[str] = []
    if root.is_off():
        drain._record()
        if drain.opening:
            return Outcome(context=f"korus-mail: delivery is off for this clone (as of {utc_stamp(drain.now)});"
                                   f" queued mail waits until `git korus-mail on`.")
        return Outcome()
    ids, odd = box.inbox_ids()
    candidates = drain._markers().unseen(ids) if ids else []  # an empty inbox loads no markers (hot path)
    if candidates and not drain._claim_event():
        return Outcome()  # another wiring of this very event shows them: once per event
    judge: "Optional[Judge]" = None
    if candidates:
        from git_korus_mail.core.limits import Judge  # only with mail to judge (hot path)
        judge = Judge(box, root.common_dir, drain.faults)
    batch, skips, examined, behind = (_load_batch(drain, candidates, drain._markers(), ids, judge) if judge
                                      else ([], 0, 0, 0))
    for name in odd:  # real mail first; the rest of the junk waits for later events
        if drain.junk >= MAX_JUNK:
            break
        _quarantine(drain, name, "not a message file name")
    remaining = len(candidates) - examined - behind  # those behind the backlog are not next
    # read only now: what the batch load just expired is told to this very session, at any
    # event, as is a withdrawal of mail this launch was shown (core/notices.py, issue 25)
    from git_korus_mail.core import notices
    told_lines, notice_names, told_done = notices.tell(drain)
    lines.extend(told_lines)
    extra: Optional[Dict[str, Any]] = None
    if judge is not None or (drain.opening and box.names("notices")):  # else nothing to tell (hot path)
        from git_korus_mail.core import limits  # the drops told once, the backlog once per new arrival
        told, told_names, extra = limits.tell(drain, judge, behind)
        lines.extend(told)
        notice_names.extend(told_names)
    text: Optional[str] = None
    blocks: List[Rendered] = []
    deferred = remaining
    if batch:
        from git_korus_mail.core import render
        budget = render.EVENT_CAP - sum(render.units(x) + 2 for x in lines)
        # the client's own unit and limit too: a batch under our cap in UTF-16 units can pass a
        # limit of 10,000 UTF-8 bytes (CJK is 3 bytes a unit); fitted here, at whole messages
        measure = render.measure_of(drain.context_unit)
        limit = None if drain.context_limit is None else drain.context_limit - sum(measure(x) + 2 for x in lines)
        text, blocks, deferred = render.render_batch(batch, drain.key.path, drain.now, remaining, budget=budget,
                                                     now=drain.now, measure=measure, limit=limit)
    if text:
        lines.append(text)
    elif drain.opening:
        if ids and not candidates:  # everything queued was shown (or skipped) already
            lines.append(f"korus-mail: no new mail for {path_field(drain.key.path)} "
                         f"(as of {utc_stamp(drain.now)}; {len(ids)} already shown to this session).")
        else:
            lines.append(f"korus-mail: the box for {path_field(drain.key.path)} is empty "
                         f"(as of {utc_stamp(drain.now)}).")
    context = "\n\n".join(lines) if lines else None
    questions = {m["id"] for m, *_ in batch if m.get("kind") == "question"}
    drain._record(extra)

    def commit() -> "List[str]":
        # Runs after the output is out: each step's failure is collected, none stops the next
        # or the exit code (docs/HOOKS.md). A marker that cannot be written leaves its message
        # unconsumed, to be shown again: never consumed unseen, never lost.
        faults: List[str] = []
        if blocks:  # the crash points mark the gaps around the markers: none without one
            from git_korus_mail import crash
            crash.point("show:emitted")
        # The marker proves that THIS launch displayed the message; written only now,
        # after the output is out (docs/DESIGN.md R7: a marker minted first lost mail).
        for b in blocks:
            obs = {"session": drain.session, "launch": drain.launch.tag, "event": drain.event,
                   "at": utc_stamp(drain.now), "chars": len(b.text), "truncated": b.truncated,
                   "body_chars": b.body_chars}
            if b.msg_id in questions:
                obs["question"] = True  # the consume phase answers it (core/answer.py)
            try:
                drain._markers().mark(b.msg_id, obs)
            except (OSError, MailError) as exc:
                faults.append(f"display marker for {b.msg_id} not written ({_why(exc)}); "
                              f"it stays queued and is shown again")
        if blocks:
            crash.point("show:marked")
        for b in blocks:
            root.journal("shown", id=b.msg_id, box=box.name, session=drain.session, launch=drain.launch.tag,
                         hook_event=drain.event)
        told_done()
        try:
            box.clear_notices(notice_names)
        except (OSError, MailError) as exc:
            faults.append(f"notices not cleared ({_why(exc)}); they may be told again")
        if drain.opening:
            drain._sweep()  # a new launch is when an old one's markers are most likely stale
            faults.extend(_prune(drain))
        return faults + root.take_journal_faults()
    summary = None
    if blocks:
        from git_korus_mail.core.shown import Shown
        rendered = {b.msg_id for b in blocks}
        summary = Shown.of([m for m, *_rest in batch if m["id"] in rendered], drain.key.path, deferred)
    return Outcome(context=context, commit=commit, report=drain._report_late, shown=summary)


def _load_batch(drain: "Drain", candidates: "List[str]", shown_dir: "LaunchMarkers", ids: "List[str]",
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
    box = drain.box
    batch: List[Item] = []
    skipped, examined, read = 0, 0, 0
    inbox_path = box.path_of("inbox")
    seen_path = box.path_of("seen")
    # enough to fill one event even when every message is small
    want = render.EVENT_CAP // 200
    # The backlog judges what this session can read (docs/DESIGN.md, "Limits"): a message's place
    # counts the queued mail before it, less what is for another session (a `session` filter):
    # that is never shown here, so it never holds back what is. Known from this launch's skip
    # markers for what an earlier event read, and from the reading below for the rest.
    from git_korus_mail.store.markers import SKIP_SUFFIX
    marked = shown_dir.names()
    position: Dict[str, int] = {}
    others = 0
    for n, i in enumerate(ids):
        position[i] = n - others
        others += i + SKIP_SUFFIX in marked
    gone = 0  # of the messages examined so far, those no longer queued (or not this session's): they free their place
    for msg_id in candidates:
        if len(batch) >= want or examined >= MAX_EXAMINED or read >= READ_BUDGET:
            break
        examined += 1
        try:
            msg, st = box.load(msg_id)
        except FileNotFoundError:
            gone += 1
            continue  # consumed or expired since we listed
        except NotOwned as exc:
            _quarantine(drain, msg_id + MSG_SUFFIX, f"owned by uid {exc.args[0]}, not by you")
            gone += 1
            continue
        except NotRegular as exc:
            _quarantine(drain, msg_id + MSG_SUFFIX, f"not a regular file ({exc})")
            gone += 1
            continue
        except TooLarge as exc:
            _quarantine(drain, msg_id + MSG_SUFFIX, f"too large ({exc.args[0]} bytes)")
            gone += 1
            continue
        except Invalid as exc:
            _quarantine(drain, msg_id + MSG_SUFFIX, f"invalid message: {exc}")
            gone += 1
            continue
        except OSError as exc:
            drain.faults.append(f"cannot read {msg_id}: {exc.strerror}")
            continue
        read += st.st_size
        if st.st_nlink > 1:
            why = box.linked_elsewhere(msg_id, st)
            if why == "in-progress":
                continue
            if why is None:
                _quarantine(drain, msg_id + MSG_SUFFIX, "hard-linked to another file")
                gone += 1
                continue
        if expires_at(msg) <= drain.now:
            box.expire(msg_id, msg)
            gone += 1
            continue
        theirs = bool(msg.get("session")) and msg["session"] != drain.session  # filtered for another session
        if judge.judge(msg_id, msg, position[msg_id] - gone, readable=not theirs):
            gone += msg_id in judge.dropped
            continue  # dropped (told once, below) or held back (told once per new arrival)
        if theirs:
            shown_dir.skip(msg_id)
            skipped += 1
            gone += 1  # not this session's to read: it takes no place in its backlog
            continue
        msg, view = render.trim(msg)  # the body is let go here: one event holds a few KB per message
        batch.append((msg, os.path.join(inbox_path, msg_id + MSG_SUFFIX),
                      os.path.join(seen_path, msg_id + MSG_SUFFIX), view))
    behind = sum(1 for i in candidates[examined:] if position[i] - gone >= judge.limits.backlog)
    return batch, skipped, examined, behind


def _quarantine(drain: "Drain", name: str, reason: str) -> None:
    """Move a bad file aside under a name we choose. Its own name is data from whoever wrote
    it: said to the user only escaped (render.field), and never put in the model's context."""
    from git_korus_mail.core import render
    if drain.junk >= MAX_JUNK:
        return  # this event's share of junk work is done; the file waits for the next
    drain.junk += 1
    target = drain.box.quarantine(name, reason)
    if target is not None:
        drain.faults.append(f"quarantined {render.field(name, 80)} as quarantine/{target}: "
                           f"{render.field(reason, 120)}")


PLAIN_FIELD_MAX = 120  # at most render.FIELD_CAP: see path_field


def path_field(path: str) -> str:
    """render.field(path). Printable ASCII no longer than the field's cap comes back unchanged,
    so the usual path is told without loading render.py (hot path; tests/test_render.py)."""
    if 0 < len(path) <= PLAIN_FIELD_MAX and path.isascii() and path.isprintable():
        return path
    from git_korus_mail.core import render
    return render.field(path)


def _prune(drain: "Drain") -> "List[str]":
    """Retention, at an opening show and at most once a day per box (store/retention.py): after
    the output, so no answer waits for it; its faults are told at the next consume."""
    try:
        if not drain.box.prune_due(drain.now):
            return []  # the usual opening show: store/retention.py stays unloaded (hot path)
        from git_korus_mail.store import retention
        from git_korus_mail.core.retention import keep_days
        days, _problem = keep_days(drain.key.path)  # a bad value: the default; doctor and status say why
        retention.prune(drain.box, days * 86400, drain.now)
    except (OSError, MailError) as exc:
        return [f"old mail not pruned ({_why(exc)}); the next session's start tries again"]
    return []


def _notices(drain: "Drain") -> "Tuple[List[Dict[str, Any]], List[str]]":
    """The expiry notices (a drop's are told by core/limits.py)."""
    if not drain.box.names("notices"):
        return [], []  # the usual opening show: no notice, and records.py stays unloaded (hot path)
    recs, names = drain.box.notices()
    pairs = [(r, n) for r, n in zip(recs, names) if "dropped_at" not in r]
    return [r for r, _ in pairs], [n for _, n in pairs]
