"""The drain's side of the hook stub's fast path (store/fastpath.py, docs/HOOKS.md "The fast
path"): a show that found nothing new for its launch stamps that, after its output, and every
consume, end and opening show removes the launch's stamp. `ctx` is the run's DrainContext
(core/drain_context.py).

Conservative by construction: a stamp is written only when this very run found the inbox
holding nothing the launch was not shown, no claim to repair, no junk, no fault, delivery on,
and the inbox unchanged from before the listing to after it, with its last change MARGIN
seconds old. Anything else leaves the stamp unwritten, which only costs the next tool call a
Python run."""

from git_korus_mail.errors import MailError
from git_korus_mail.store import fastpath
from git_korus_mail.store.layout import MSG_SUFFIX

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from git_korus_mail.core.drain_context import DrainContext

    Look = Tuple[Optional[int], float]  # (the inbox's mtime in ns, None without an inbox; when it was taken)


def stamp(ctx: "DrainContext", seen: "Look") -> "List[str]":
    """After the show's output and follow-up: stamp the launch when nothing was new. Never a
    fault: a stamp not written only means the next tool call runs Python."""
    key = ctx.facts.fast_key
    mtime, looked_at = seen
    box, root = ctx.box, ctx.root
    if not fastpath.valid_key(key) or ctx.faults:
        return []
    # no MARGIN for a box without an inbox: the stub trusts that stamp only while the inbox does
    # not exist, which no clock tick can fake (docs/HOOKS.md, "A box without an inbox")
    if mtime is not None and not fastpath.may_stamp(mtime, looked_at):
        return []
    try:
        if root.is_off() or box.names("claiming") or not ctx.launch.known:
            return []
        assert key is not None  # for mypy: valid_key said so
        if key.rpartition("@")[2] != str(ctx.launch.pid):
            # the stub's launch is not the one this run proved (a client whose stub names its
            # own parent, with a process between them): its stamp would speak for another
            # launch's markers (docs/HOOKS.md, "The fast path")
            return []
        if mtime is None:
            if box.inbox_mtime_ns() is None:
                turn = _turn_free(ctx, key)
                if not fastpath.current(root, box, key, None, ctx.facts.cwd, [], turn):
                    fastpath.write(root, box, key, None, ctx.facts.cwd, [], turn)
            return []
        ids, odd = box.inbox_ids()
        if odd or (ids and ctx.markers().unseen(ids)) or box.inbox_mtime_ns() != mtime:
            return []
        names = [i + MSG_SUFFIX for i in ids]  # every one shown to or skipped by this launch (above)
        turn = _turn_free(ctx, key)  # after the look: a twin's marker made before it is seen here
        if not fastpath.current(root, box, key, mtime, ctx.facts.cwd, names, turn):
            fastpath.write(root, box, key, mtime, ctx.facts.cwd, names, turn)
    except (OSError, MailError):
        pass
    return []


def _turn_free(ctx: "DrainContext", key: str) -> bool:
    """Whether a prompt or a Stop of this launch would find nothing to do but record the turn
    (docs/HOOKS.md, "A turn with nothing new"): no message shown to it and not consumed (so no
    question to answer, no withdrawal to tell), no pending fault, and the stub's key names this
    very session directory (its turn record is `<session>.state`). What comes later is caught
    by the stub: a show puts a new name into the inbox, a fault makes `<session>.faults`."""
    return (key.rpartition("@")[0] == ctx.session and not ctx.prior.get("pending_faults")
            and not ctx.shown_ids())


def clear(ctx: "DrainContext") -> None:
    """Remove this launch's stamp: its session goes idle or ends, or a new launch opens."""
    key = ctx.facts.fast_key
    if not fastpath.valid_key(key):
        return
    assert key is not None  # for mypy: valid_key said so
    try:
        fastpath.clear(ctx.root, key)
        if ctx.facts.opening:
            fastpath.sweep(ctx.root)  # killed launches' stamps: one opening show judges a few
    except (OSError, MailError):
        pass  # a stamp left behind is still checked against the inbox by the stub
