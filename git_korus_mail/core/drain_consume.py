"""The consume phase: consume exactly what this launch was shown, each message once (claim,
receipt, move in the store), and say what could not be. `ctx` is the run's DrainContext
(core/drain_context.py)."""

from git_korus_mail.core.drain_context import Outcome, render_field, why
from git_korus_mail.errors import MailError
from git_korus_mail.store.files import NotRegular, TooLarge

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.core.drain_context import DrainContext


def consume(ctx: "DrainContext") -> Outcome:
    box, root = ctx.box, ctx.root
    box.ensure_inbox()  # a refused inbox (symlink, owner, mode) is a fault to report here, even with nothing shown
    if box.may_need_repair():  # a dead consumer's claim must not outlive it until the next show
        from git_korus_mail.store import moves  # only with a claim to look at: moves.py stays unloaded (hot path)
        moves.repair(box)
    faults = list(ctx.prior.get("pending_faults") or [])
    extra: Dict[str, Any] = {"pending_faults": []}
    if root.is_off():
        if not ctx.prior.get("off_told"):
            faults.append("delivery is off for this clone (git korus-mail on); nothing was consumed")
            extra["off_told"] = True
        ctx.faults = []
        ctx.prior["pending_faults"] = []
        ctx.record(extra)
        return Outcome(notice=_notice(faults))
    extra["off_told"] = False
    if not ctx.launch.known:
        # nothing ties these markers to a process whose model saw the mail: consume none
        left = len(ctx.shown_ids())
        if left and not ctx.prior.get("nolaunch_told"):
            faults.append(f"{left} message(s) shown but left queued: this hook run cannot tell which "
                          f"client process it serves ({ctx.launch.why}), so no display is proven; "
                          f"they are shown again in the next session")
            extra["nolaunch_told"] = True
        ids: List[str] = []
    else:
        ids = ctx.shown_ids()
    if (ids or faults) and not ctx.claim_event():
        return Outcome()  # another wiring of this very Stop consumes and tells: once (docs/HOOKS.md)
    record = ctx.launch.record() if ids else None
    for name in ids:
        marks = ctx.markers()
        try:
            observation = marks.read(name)
        except (OSError, ValueError, NotRegular, TooLarge) as exc:
            from git_korus_mail.core import render
            faults.append(f"display marker {render.field(name, 80)} unreadable ({exc}); "
                          f"message left queued")
            continue
        if not isinstance(observation, dict) or observation.get("launch") != ctx.launch.tag \
                or observation.get("session") != ctx.session:
            from git_korus_mail.core import render
            faults.append(f"display marker {render.field(name, 80)} was not written by this launch; "
                          f"message left queued")
            marks.unmark(name)
            continue
        if observation.get("question"):
            from git_korus_mail.core import answer  # only with a question shown: its automatic answer
            answer.at_run_end(ctx, name)
        try:
            from git_korus_mail.store import moves  # loaded where used (hot path)
            result = moves.consume(box, name, ctx.session, observation, launch=record)
        except (OSError, MailError) as exc:
            faults.append(f"consuming {render_field(name)} met an error ({why(exc)}); {_fate(ctx, name)[1]}")
            continue  # the marker stays: the next consume finishes or retries the consume
        if result == "held":
            from git_korus_mail.store import claims
            from git_korus_mail.store import records  # loaded where used (hot path)
            owner = records.claim_owner(box, name) or {}
            verdict, known = claims.judge(owner, box.root)
            state, now = _fate(ctx, name)  # looked at after the wait: the holder may have finished
            if state != "queued":  # consumed, expired, gone, or unreadable: the claim is no longer the story
                faults.append(f"message {render_field(name)} was claimed by another process; {now}")
            elif verdict == "alive":
                faults.append(f"message {render_field(name)} is claimed by live process "
                              f"{render_field(owner.get('pid'))}; {now}, and is retried at the next Stop")
            else:  # say what is known, and the way out a person has
                faults.append(f"message {render_field(name)} is claimed by a process that cannot be proven "
                              f"dead ({render_field(known)}); {now}. If you know that process is "
                              f"gone: git korus-mail release {render_field(name)}")
            continue
        if result == "gone" and keep_to_tell(ctx, name):
            continue  # withdrawn after it was shown: its marker stays, to be told at the next event
        marks.unmark(name)
    ctx.sweep()
    faults.extend(root.take_journal_faults())
    ctx.faults = []
    ctx.prior["pending_faults"] = []
    ctx.record(extra)
    faults.extend(ctx.faults)  # what this very consume could not record is told now, not lost
    return Outcome(notice=_notice(faults))


def _fate(ctx: "DrainContext", msg_id: str) -> "Tuple[Optional[str], str]":  # str: a store.shapes.Fate
    """What became of a message whose consume failed, looked at afterwards: its state (None when
    it cannot be read), for the caller to branch on, and the words for the notice, which say
    what is on disk, never what the failed step was meant to do."""
    try:
        from git_korus_mail.store import records  # loaded where used (hot path)
        state, session = records.fate(ctx.box, msg_id)
    except (OSError, MailError) as exc:
        return None, f"its state cannot be read ({why(exc)})"
    if state in ("consumed", "consumed-unmoved"):
        who = "this session" if session == ctx.session else f"session {render_field(session)}"
        later = "; its move out of the inbox completes at a later Stop" if state == "consumed-unmoved" else ""
        return state, f"its receipt is written, so it is consumed (by {who}){later}"
    if state == "queued":
        return state, "it is not consumed and stays queued"
    if state == "expired":
        return state, "it had expired unread"
    return state, "it is no longer queued"


def _notice(faults: "List[str]") -> "Optional[str]":
    if not faults:
        return None  # the normal path prints nothing: no per-turn "empty" line
    text = "korus-mail: " + "; ".join(faults)
    return text[:2000]


def keep_to_tell(ctx: "DrainContext", msg_id: str) -> bool:
    """core/notices.py: a withdrawal the model has not been told of keeps its marker."""
    from git_korus_mail.core.notices import withdrawn_untold
    return withdrawn_untold(ctx, msg_id)
