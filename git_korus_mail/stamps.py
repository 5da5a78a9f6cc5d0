"""Time stamps: the one way every record, receipt and message writes a time, and reads it back.

A leaf utility (it imports nothing of ours), since the store, the core and the commands all
write and read stamps: ISO 8601 UTC with microseconds, `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
Checked with plain string tests, not `re`, which costs the hook hot path milliseconds.
"""

import time

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any


def _digits(s: str) -> bool:
    # str methods run in C (a drain reads many stamps); isdigit() alone admits non-ASCII digits
    return s.isdigit() and s.isascii()


def _valid_stamp(s: "Any") -> bool:
    """YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z"""
    if not isinstance(s, str) or len(s) < 20 or not s.endswith("Z"):
        return False
    main, dot, frac = s[:-1].partition(".")
    if dot and not (_digits(frac) and len(frac) <= 9):
        return False
    return (len(main) == 19 and main[4] == main[7] == "-" and main[10] == "T" and main[13] == main[16] == ":"
            and all(_digits(main[a:b]) for a, b in ((0, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19))))


def epoch(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    """Seconds since 1970 for a UTC civil time (calendar.timegm without importing calendar)."""
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        raise ValueError("time field out of range")
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    return days * 86400 + hour * 3600 + minute * 60 + second


def utc_stamp(t: float) -> str:
    """ISO 8601 UTC with microseconds: sortable, unambiguous, as-of times everywhere."""
    secs = int(t)
    us = int(round((t - secs) * 1_000_000))
    if us >= 1_000_000:
        secs, us = secs + 1, us - 1_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{us:06d}Z"


def parse_stamp(s: "Any") -> float:
    """Seconds since the epoch for a stamp written by utc_stamp (or without microseconds)."""
    if not _valid_stamp(s):
        raise ValueError("not a UTC stamp")  # strict: nothing may ride along behind the digits
    main, _, frac = s[:-1].partition(".")
    t = epoch(int(main[0:4]), int(main[5:7]), int(main[8:10]), int(main[11:13]), int(main[14:16]),
              int(main[17:19]))
    return t + (int(frac.ljust(6, "0")[:6]) / 1e6 if frac else 0.0)


def human_age(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"
