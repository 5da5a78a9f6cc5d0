"""One answer per hook event, however many wirings of the client run it (docs/HOOKS.md, "One
answer per event"): the drain claims its event (store/events.py) where the event has something
to show or do, and marks it answered once its output is out. Loaded only then (hot path)."""

from git_korus_mail.core.drain import Outcome, _why
from git_korus_mail.errors import MailError

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import List

    from git_korus_mail.core.drain import Drain
    from git_korus_mail.store.events import Claim


def claim(drain: "Drain") -> bool:
    """True when this run answers its event; False when a twin does: the same event run by
    another wiring of the client (both install scopes), which answered it since this hook
    process started or is answering it now. A claim that cannot be taken is said, and the run
    answers as if alone (at worst the status before: the mail shown by both)."""
    assert drain.event_key is not None
    key = drain.event_key()
    if not key:
        drain.event_key = None
        return True
    from git_korus_mail.store import events
    from git_korus_mail.store.launch import hook_start
    try:
        held = events.claim(drain.box, drain.session, drain.launch.tag, key, hook_start(drain.launch.pid))
    except (OSError, MailError) as exc:
        drain.faults.append(f"hook event not claimed ({_why(exc)}); a second wiring of this hook "
                            f"may show the same mail again")
        drain.event_key = None
        return True
    if held is None:
        return False
    drain._event = held
    return True


def answered_first(out: Outcome, held: "Claim") -> None:
    """Mark the claim answered first thing after the output (before the display markers): a twin
    that gets the lock later stays silent; one that gets it after a death before this answers."""
    rest = out._commit

    def both() -> "List[str]":
        faults: List[str] = []
        try:
            held.answered()
        except OSError as exc:
            faults.append(f"hook event not marked answered ({_why(exc)}); another wiring may answer it too")
        return faults + (rest() if rest is not None else [])
    out._commit = both
