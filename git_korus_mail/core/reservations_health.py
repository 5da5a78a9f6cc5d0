"""What `doctor` says of file reservations (issue 29): how many hold, which lapsed ones the next
reserve, drop or edit's hook would sweep, a stale RESERVED signal (no record behind it: every
edit in the clone starts Python until one clears it), files in reservations/ that are no record
of ours (they keep the signal alive), and told records. It only reads: the sweep is
core/reservations.sweep's, run by those commands."""

import time

from git_korus_mail.core.reservations import all_stored
from git_korus_mail.store import reservations as records

TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from git_korus_mail.core.reservations import Reservation
    from git_korus_mail.store.files import MailRoot


class Health:
    """The reservations of a clone as doctor reports them."""

    __slots__ = ("held", "lapsed", "unreadable", "signal", "told", "orphan_told")

    def __init__(self, held: "List[Reservation]", lapsed: "List[Tuple[Reservation, str]]", unreadable: int,
                 signal: bool, told: int, orphan_told: int) -> None:
        self.held, self.lapsed, self.unreadable = held, lapsed, unreadable
        self.signal, self.told, self.orphan_told = signal, told, orphan_told

    @property
    def stale_signal(self) -> bool:
        """The signal with no record file behind it (a crash between two steps of an end)."""
        return self.signal and not self.held and not self.lapsed and not self.unreadable


def health(root: "MailRoot", now: "Optional[float]" = None) -> Health:
    now = time.time() if now is None else now
    stored = all_stored(root)
    signal, files = records.counts(root)
    held, lapsed = [], []
    for r in stored:
        why = r.lapsed(now)
        if why is None:
            held.append(r)
        else:
            lapsed.append((r, why))
    told = records.told_records(root)
    return Health(held, lapsed, max(0, files - len(stored)), signal,
                  sum(1 for _, standing in told if standing), sum(1 for _, standing in told if not standing))
