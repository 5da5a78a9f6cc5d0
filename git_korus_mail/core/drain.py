"""The drain: show mail at every showing phase, consume it exactly once at the consume phase.

Client-free: it takes the facts a client module knows of one hook event (core/drain_context.py
DrainFacts: a phase (show / consume / end / fail), the session id, launch identity, account, cwd,
and the client's event name as a label only, for presence, markers and the journal), and returns
what to show and what to do once the showing has been written out. A client module
(clients/claude/) maps its own events onto phases.

`run` opens the session's box, makes the run's one DrainContext (core/drain_context.py) and
runs the phase: the show phase lives in core/drain_show.py and the consume phase in
core/drain_consume.py, each imported only when its phase runs. The phase modules take the
context and never import this module. The four measured ways a first version breaks
(docs/DESIGN.md R5-R7, R12), and where each is answered here:
1. exclusion that does not exclude — consumption goes through store.moves.consume
   (exclusive claim, exclusive receipt);
2. showing is not consuming — `show` never consumes; only `consume` does, and only
   what this very launch was shown (a session discarded after its opening show
   never reaches its consume phase, so its mail stays queued);
3. a marker minted before the emit — markers are written by `Outcome.commit`, which
   the caller runs only after the output is written and flushed; a marker is
   keyed by (session, launch, message), so neither another session's marker nor
   one left by a killed launch of the same session id can consume (store/markers.py);
4. the one-shot wake-up — a watcher (core/wake.py) never re-arms itself: the client arms one at
   each turn's end, and a prompt's show ends it (`_disarm_watcher`).
"""

import time

from git_korus_mail.core.drain_context import (CONSUME, END, FAIL, SHOW, DrainContext, DrainFacts, Outcome,
                                               open_box, why)
from git_korus_mail.errors import MailError

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from git_korus_mail.store.events import Claim

    Look = Tuple[Optional[int], float]  # (the inbox's mtime in ns, None without an inbox; when it was taken)

__all__ = ["DrainFacts", "Outcome", "run"]  # what a command needs: the facts in, the outcome out


def run(facts: DrainFacts, repo_opt: "Optional[str]" = None) -> Outcome:
    """Run one hook event: open the session's box (the queue found from `repo_opt` when given),
    make the run's context and run its phase."""
    try:
        opened = open_box(facts.cwd, repo_opt)
    except MailError as exc:
        return _fault_outcome(facts, f"mail queue unusable: {exc}")
    except OSError as exc:
        # a cwd the payload names but the system cannot use (too long a name, no access)
        return _fault_outcome(facts, f"cannot find the mail queue for this cwd: {exc.strerror or exc}")
    if opened is None:
        if facts.phase == CONSUME:
            where = f"--repo {repo_opt}" if repo_opt else facts.cwd
            return Outcome(notice=f"korus-mail: no mail queue here ({where} is in no git clone); "
                                  f"mail cannot reach this session. Start it inside a worktree, or "
                                  f"install with --scope user from the clone.")
        return Outcome()
    try:
        # inside the try: a refused sessions/ is a box part like inbox/, said, not a traceback
        ctx = DrainContext(facts, *opened)
        if facts.phase is not None:
            out = {CONSUME: _consume, END: _end, FAIL: _fail, SHOW: _show}[facts.phase](ctx)
            if ctx.event is not None:
                _answered_first(out, ctx.event)  # then a twin of this event stays silent
            return out
    except MailError as exc:
        # a box part that is a symlink, another user's, or group-writable: refused, and said
        return _fault_outcome(facts, f"mail box unusable: {exc}")
    ctx.record()  # an event that asks nothing of the mail: its presence only
    return Outcome()


def _fault_outcome(facts: DrainFacts, text: str) -> Outcome:
    # said where a reader decides (the opening show) and at consume; not at every prompt and tool call
    if facts.phase == CONSUME or facts.opening:
        return Outcome(notice=f"korus-mail: {text}", context=f"korus-mail: {text}" if facts.opening else None)
    return Outcome()


def _answered_first(out: Outcome, held: "Claim") -> None:
    """Mark the event's claim answered first thing after the output (before the display markers):
    a twin that gets the lock later stays silent; one that gets it after a death before this
    answers (docs/HOOKS.md, "One answer per event")."""
    def answered() -> "List[str]":
        try:
            held.answered()
        except OSError as exc:
            return [f"hook event not marked answered ({why(exc)}); another wiring may answer it too"]
        return []
    out.first(answered)


# -- the phases: show and consume each in its own module, imported only when its phase runs ----
def _show(ctx: DrainContext) -> Outcome:
    facts = ctx.facts
    if not facts.opening and not facts.frequent:
        _disarm_watcher(ctx)  # a prompt: the session works again, so its watcher ends
    if facts.opening:
        _fast_clear(ctx)  # a new launch: no stamp of an old one with its name stands
    looked = _fast_look(ctx)  # before anything lists the inbox
    if not facts.opening and ctx.box.nothing_to_show() and not _notices_pending(ctx):
        # what drain_show concludes for an empty box (OFF or not) with nothing to tell, without
        # loading it: the answer of most tool calls and prompts (hot path; the opening show
        # still announces). Notices are told at any event (core/notices.py, issue 25).
        ctx.record()
        out = Outcome()
    else:
        from git_korus_mail.core.drain_show import show
        out = show(ctx)
    if looked is not None:
        seen = looked
        out.then(lambda: _fast_stamp(ctx, seen))
    return out


def _consume(ctx: DrainContext) -> Outcome:
    _fast_clear(ctx)
    from git_korus_mail.core.drain_consume import consume
    return consume(ctx)


def _fail(ctx: DrainContext) -> Outcome:
    """The run ended in an error: questions it was shown are answered `failed`; its other
    mail stays marked, and the next consume phase consumes it."""
    if ctx.box.names("shown") and not ctx.claim_event():
        return Outcome()
    if ctx.box.names("shown"):
        from git_korus_mail.core import answer
        answer.close_open(ctx, "failed", answer.FAILED_RUN_TEXT)
    ctx.record()
    return Outcome(notice=("korus-mail: " + "; ".join(ctx.faults)) if ctx.faults else None)


def _end(ctx: DrainContext) -> Outcome:
    """The launch ends: its markers of mail never consumed are dropped; that mail stays queued."""
    from git_korus_mail.store import markers
    if markers.any_shown(ctx.box) and not ctx.claim_event():
        return Outcome()
    _fast_clear(ctx)
    _disarm_watcher(ctx, end=True)
    if markers.any_shown(ctx.box):
        from git_korus_mail.core import answer  # questions shown and open: their askers learn it now
        answer.close_open(ctx, "failed", answer.ENDED_TEXT)
        ctx.markers().clear()
    ctx.record()
    return Outcome()


def _disarm_watcher(ctx: DrainContext, end: bool = False) -> None:
    """End this launch's wake-up watcher (core/wake.py), if it has one: at a prompt, and at the
    launch's end (which also drops its wakes record). A watcher that cannot be told to end
    still ends by itself: it checks its claim, its launch and its reach."""
    if not ctx.box.has_watchers():
        return  # none was ever armed here: store/watch.py stays unloaded (hot path)
    if not ctx.launch.known:
        return
    from git_korus_mail.store import watch
    try:
        if end:
            watch.clear(ctx.box, ctx.session, ctx.launch)
        else:
            watch.disarm(ctx.box, ctx.session, ctx.launch)
    except (OSError, MailError) as exc:
        ctx.faults.append(f"wake-up watcher not disarmed: {why(exc)}")


# -- the stub's fast path (core/drain_fast.py): loaded only where a stamp is or may be -----
def _fast_look(ctx: DrainContext) -> "Optional[Look]":
    """(the inbox's mtime in ns, or None for a box with no inbox yet; when it was taken)."""
    if ctx.facts.fast_key is None or ctx.facts.opening:
        return None
    return ctx.box.inbox_mtime_ns(), time.time()


def _fast_stamp(ctx: DrainContext, seen: "Look") -> "List[str]":
    from git_korus_mail.core import drain_fast
    return drain_fast.stamp(ctx, seen)


def _fast_clear(ctx: DrainContext) -> None:
    """At consume, end and an opening show: the launch's tool calls run Python again."""
    key = ctx.facts.fast_key
    if key is not None and (ctx.root.has_stamp(key) or ctx.facts.opening):
        from git_korus_mail.core import drain_fast
        drain_fast.clear(ctx)


def _notices_pending(ctx: DrainContext) -> bool:
    """Something to tell though the inbox is empty: an expiry notice, or a marker of mail this
    launch was shown that may have been withdrawn (core/notices.py). Two directory reads."""
    from git_korus_mail.core.notices import pending
    return pending(ctx)
