"""When mail from another clone arrived here, by this machine's clock (docs/STORE.md, "Arrivals").

A relayed message keeps its sender's id, and an id's time is the sender's clock: days ahead or
behind on another machine, or hours old when it waited in an outbox through an outage. The
receiver's limits (core/limits.py) judge such mail by when it arrived here instead, so the
relay records that before it publishes the message into the inbox:

    <box>/arrived/<YYYYMMDDTHHMMSS.ffffffZ>+<id>     an empty file

The name alone is the record: it sorts by arrival, so a judge finds what arrived within a
window with one listing and a bisect, and loads nothing. Empty and created exclusively, it
cannot be torn. A relay killed between this record and the inbox link delivers again on the
redelivery and records a second, later arrival of the same id: readers take the earliest.
Functions over a files.Box, imported where they are used (no hook event with an empty box, and
no box without relayed mail, loads this module's work: the directory is absent).
"""

import time

from git_korus_mail.stamps import epoch
from git_korus_mail.store.layout import ARRIVED

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

    from git_korus_mail.store.files import Box

STAMP_LEN = 23  # YYYYMMDDTHHMMSS.ffffffZ
SEP = "+"


def name_of(t: float, msg_id: str) -> str:
    """The record's name for `msg_id` arriving at `t` (seconds since the epoch)."""
    secs = int(t)
    us = int((t - secs) * 1_000_000)
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(secs)) + f".{us:06d}Z{SEP}{msg_id}"


def parse_name(name: str) -> "Optional[Tuple[float, str]]":
    """(arrival time, id) of a record's name; None for any other name (junk, a dot-file)."""
    from git_korus_mail.store.message import valid_id
    s, sep, msg_id = name[:STAMP_LEN], name[STAMP_LEN:STAMP_LEN + 1], name[STAMP_LEN + 1:]
    if sep != SEP or not valid_id(msg_id) or s[8] != "T" or s[15] != "." or s[22] != "Z":
        return None
    digits = s[:8] + s[9:15] + s[16:22]
    if not (digits.isdigit() and digits.isascii()):
        return None
    try:
        t = epoch(int(s[0:4]), int(s[4:6]), int(s[6:8]), int(s[9:11]), int(s[11:13]), int(s[13:15]))
    except ValueError:
        return None
    return t + int(s[16:22]) / 1e6, msg_id


def record(box: "Box", msg_id: str, t: float) -> None:
    """Record that `msg_id` arrived at `t`; durable before it returns (the relay publishes the
    message only after this, so a queued relayed message always has its arrival here)."""
    d = box.ensure_sub(ARRIVED)
    try:
        d.create_exclusive(name_of(t, msg_id), b"", sync=False)  # empty: its name is all, made durable by the fsync below
    except FileExistsError:
        pass  # the same id at the same microsecond: recorded already
    d.fsync()


def carry(src: "Box", dst: "Box", msg_id: str) -> None:
    """A relayed message forwarded from box `src` to `dst` (store/moves.py): its arrival records
    go with it, made in `dst` before the message is placed there. Those in `src` stay until
    retention removes them (the message is no longer queued there)."""
    names = [n for n in src.names(ARRIVED) if n.endswith(SEP + msg_id) and parse_name(n) is not None]
    if not names:
        return
    d = dst.ensure_sub(ARRIVED)
    for name in names:
        try:
            d.create_exclusive(name, b"", sync=False)
        except FileExistsError:
            pass  # carried by a forward killed after this, or forwarded here before and back
    d.fsync()


class Arrivals:
    """A box's arrival records, listed once and parsed only where a judge looks: the names sort
    by arrival, so the earliest record of an id is its first name, and a window is a bisect on
    the names' stamps (10,000 records: a sort and a dict, no parse of each; issue 26's budget)."""

    def __init__(self, box: "Box") -> None:
        names = sorted(n for n in box.names(ARRIVED) if n[STAMP_LEN:STAMP_LEN + 1] == SEP)
        first: "Dict[str, str]" = {}
        for n in names:
            first.setdefault(n[STAMP_LEN + 1:], n)  # sorted by arrival: an id's first is its earliest
        self._names = names
        self._first = first
        self._parsed: "Dict[str, Optional[Tuple[float, str]]]" = {}  # each name parsed once

    def _parse(self, name: str) -> "Optional[Tuple[float, str]]":
        if name not in self._parsed:
            self._parsed[name] = parse_name(name)
        return self._parsed[name]

    def time_of(self, msg_id: str) -> "Optional[float]":
        """When `msg_id` first arrived here; None when it has no record (local mail)."""
        name = self._first.get(msg_id)
        parsed = self._parse(name) if name is not None else None
        return parsed[0] if parsed is not None else None

    @property
    def when(self) -> "Dict[str, float]":
        """Every id with a record -> its earliest arrival (for reports and tests: parses them all)."""
        out: "Dict[str, float]" = {}
        for msg_id in self._first:
            t = self.time_of(msg_id)
            if t is not None:
                out[msg_id] = t
        return out

    def before(self, msg_id: str, t: float, window: float) -> "List[Tuple[str, float]]":
        """[(id, seconds before t)] of what arrived in the `window` seconds before `t` (not
        `msg_id` itself, each id by its earliest record), nearest first."""
        import bisect
        names = self._names
        out: "List[Tuple[str, float]]" = []
        for at in range(bisect.bisect_left(names, name_of(t, "")) - 1, -1, -1):
            parsed = self._parse(names[at])
            if parsed is None:
                continue  # junk that sorts among the records: not one
            when, i = parsed
            if t - when > window:
                break
            if i != msg_id and self._first.get(i) == names[at] and when < t:
                out.append((i, t - when))
        return out


def prune(box: "Box", keep_seconds: float, now: float, limit: int) -> int:
    """Remove arrival records older than `keep_seconds`, oldest first, at most `limit`; never
    that of a message still queued (its limits may yet be judged). Returns how many went."""
    from git_korus_mail.store.layout import MSG_SUFFIX
    d = box.open_sub(ARRIVED)
    if d is None:
        return 0
    removed = 0
    for name in sorted(d.names()):
        if removed >= limit:
            break
        parsed = parse_name(name)
        if parsed is None:
            continue  # not ours: a person's to judge (invariants.py names it)
        if now - parsed[0] < keep_seconds:
            break  # every later name arrived later still
        if box.has("inbox", parsed[1] + MSG_SUFFIX):
            continue
        removed += d.unlink_quiet(name)
    return removed
