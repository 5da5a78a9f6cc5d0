"""The core's vocabulary for the type checker: the drain's phases, the verdicts `send` and
`status` give, and one destination's send result.

Read by mypy only: every import of this module sits under `if TYPE_CHECKING:`, so at run time
it is never loaded, nor `typing` with it (the hook hot path; tests/test_vocab.py checks it and
that each Literal holds exactly the values the code uses at run time). The wire shapes of the
store's files are in store/shapes.py.
"""

from typing import Dict, List, Literal, Optional, Tuple, TypedDict

from git_korus_mail.store.shapes import Sender, ShownTo

# A drain phase (core/drain.py PHASES): show mail, consume what was shown, end the session,
# or a run that failed (no consume follows).
Phase = Literal["show", "consume", "end", "fail"]
# How a client's event drives the drain: (phase, opening, frequent); see drain_context.DrainFacts.
# An event with no phase only records presence.
PhaseOf = Dict[str, Tuple[Optional[Phase], bool, bool]]
# What became of a sent message, as send, ask and status say it (core/verdict.py judge/settle).
Verdict = Literal["delivered", "queued", "dropped", "expired", "cancelled", "gone", "refused"]


class Judged(TypedDict, total=False):
    """What core/verdict.py `judge` says of one queued message now: verdict, as_of and why
    always, shown_to once delivered. Not total only so that it can be merged into a SendResult
    (TypedDict.update takes a partial one)."""
    verdict: Verdict
    as_of: str
    why: Optional[str]
    shown_to: ShownTo


class _SendResultBase(TypedDict):
    to: str  # the destination as the person named it
    ok: bool


class SendResult(_SendResultBase, total=False):
    """One destination's outcome of core/send.py `deliver`: queued (ok, with the message's id,
    box, path, filter and expiry) or refused (`error`), then judged by core/verdict.py, which
    adds verdict, as_of, why and, once delivered, shown_to."""
    error: str
    id: str
    path: Optional[str]
    box: str
    session: Optional[str]
    expires_at: str
    warnings: List[str]
    sender: Sender
    verdict: Verdict
    as_of: str
    why: Optional[str]
    shown_to: ShownTo
