"""What a recipient's model is told at its NEXT EVENT OF ANY KIND, not only at a session's start
(issue 25, "Notices"): mail to this worktree that expired unread (the store's expiry notices),
and mail this launch's model was shown that its sender has since withdrawn (`cancel`: the
message is filed in cancelled/ while this launch's display marker still names it).

One call from the drain's show (core/drain_show.py): `tell(ctx)` gives the lines to add to
the event's output and a `done` to run once that output is out (the drain's commit): only then
are the notices cleared and the withdrawn messages' markers dropped, so a run killed before its
output tells them again at the next event, and never loses one (docs/DESIGN.md R7, R9).
`ctx` is the run's DrainContext (core/drain_context.py).

Hot path: a box with no notices/ and no launch marker directory costs two directory looks and
loads nothing.
"""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Callable, List, Optional, Tuple

    from git_korus_mail.core.drain_context import DrainContext


def pending(ctx: "DrainContext") -> bool:
    """Whether tell() may have something to say where the inbox is empty (the drain then runs
    its show): notices, or this box's launch markers. Two directory reads, nothing loaded."""
    # the directory first: identifying the launch may read /proc (DrainFacts.find_launch)
    return bool(ctx.box.names("notices")) or (bool(ctx.box.names("shown")) and ctx.launch.known)


def tell(ctx: "DrainContext") -> "Tuple[List[str], List[str], Callable[[], None]]":
    """(lines for the model, notice names the drain clears after its output, done: run after
    the output). Drop notices are not here: core/limits.py tells those."""
    box = ctx.box
    lines: "List[str]" = []
    names: "List[str]" = []
    withdrawn: "List[str]" = []
    if box.names("notices"):  # else records.py stays unloaded (hot path)
        from git_korus_mail.store import records
        recs, all_names = records.notices(box)
        pairs = [(r, n) for r, n in zip(recs, all_names) if "dropped_at" not in r]
        if pairs:
            from git_korus_mail.core import render
            lines.append(render.render_expiry_notice([r for r, _ in pairs], box.path_of("expired")))
            names = [n for _, n in pairs]
    if box.names("shown") and ctx.launch.known:
        withdrawn = _withdrawn(ctx)
        if withdrawn:
            lines.append(_withdrawn_text(ctx, withdrawn))

    def done() -> None:
        for msg_id in withdrawn:
            ctx.markers().unmark(msg_id)  # told: a withdrawal is said once to the model that was shown it

    return lines, names, done


def withdrawn_untold(ctx: "DrainContext", msg_id: str) -> bool:
    """At a Stop's consume: `msg_id`, which this launch was shown, was withdrawn (cancelled) and
    the model not told yet (its marker is still here). The consume then keeps the marker, so the
    next event tells it: a Stop cannot put anything before the model."""
    from git_korus_mail.store import records
    from git_korus_mail.store.layout import CANCELLED
    return records.filed_in(ctx.box, msg_id) == CANCELLED


def _withdrawn(ctx: "DrainContext") -> "List[str]":
    """Ids this launch was shown and has not consumed that are now filed as cancelled."""
    from git_korus_mail.store import records
    from git_korus_mail.store.layout import CANCELLED
    return [i for i in ctx.markers().shown_ids() if records.filed_in(ctx.box, i) == CANCELLED]


def _withdrawn_text(ctx: "DrainContext", ids: "List[str]") -> str:
    from git_korus_mail.core import render
    from git_korus_mail.store.layout import CANCELLED
    lines = []
    for msg_id in ids:
        sender: "Optional[object]" = None
        try:
            msg, _st = ctx.box.load(msg_id, CANCELLED)
            frm = msg.get("from")
            sender = frm.get("path") if isinstance(frm, dict) else None
        except Exception:  # noqa: BLE001 - the notice is told by its id alone when the file cannot be read
            pass
        lines.append(f"korus-mail: message {render.field(msg_id, 80)} from {render.field(sender or 'unknown sender', 120)}, "
                     f"shown to you earlier, was withdrawn by its sender (cancelled): do not act on it; "
                     f"if you already did, tell the person")
    return "\n".join(lines)
