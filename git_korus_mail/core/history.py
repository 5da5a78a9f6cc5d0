"""The clone's history as a person follows it (`log`): the journal's records, oldest first, each
joined with what the store still holds about it (the worktree a box is for, a sent message's kind
and first line). It only reads: the journal is history, the store's files the truth
(docs/HOOKS.md, "The journal is history, not truth").

A reader keeps a `Reader` and calls `more()` again for what happened since (`log --follow`): the
journal's cursor survives a rotation (store/journal.py, `read_new`)."""

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.store.journal import Cursor

from git_korus_mail.stamps import parse_stamp
from git_korus_mail.store import records



class Reader:
    """The journal of one clone, read from its start or from `since` (epoch seconds) on."""

    def __init__(self, clone: "Clone", root: "MailRoot", since: "Optional[float]" = None) -> None:
        self.clone, self.root, self.since = clone, root, since
        self.cursor: "Optional[Cursor]" = None
        self._paths: "Dict[str, Optional[str]]" = {}
        self._first: "Dict[str, Dict[str, Any]]" = {}

    def more(self) -> "List[Dict[str, Any]]":
        """The records written since the last call (the first call: all, from `since` on), each
        with `to` (the worktree its box is for) and, for a message, its `kind` and `first_line`
        while the store still has it."""
        got, self.cursor = self.root.read_journal_since(self.cursor)
        out = []
        for rec in got:
            if self.since is not None and _when(rec) < self.since:
                continue
            out.append(self._joined(rec))
        return out

    def _joined(self, rec: "Dict[str, Any]") -> "Dict[str, Any]":
        rec = dict(rec)
        box = rec.get("box")
        if isinstance(box, str):
            rec["to"] = self._path_of(box)
        msg_id = rec.get("id")
        if rec.get("event") in ("sent", "asked") and isinstance(box, str) and isinstance(msg_id, str):
            rec.update(self._message(box, msg_id))
        return rec

    def _path_of(self, box_name: str) -> "Optional[str]":
        """The worktree a box is for: the clone's worktrees first, then the path the box
        recorded (a removed worktree's box keeps it)."""
        if not self._paths:
            self._paths = {key.name: wt.path for wt, key in self.clone.worktree_keys()}
        if box_name not in self._paths:
            box = self.root.box(box_name)
            self._paths[box_name] = box.recorded_path() if box is not None else None
        return self._paths[box_name]

    def _message(self, box_name: str, msg_id: str) -> "Dict[str, Any]":
        """kind and first line of a message, from wherever its box files it now; {} once pruned."""
        if msg_id in self._first:
            return self._first[msg_id]
        found: "Dict[str, Any]" = {}
        box = self.root.box(box_name)
        sub = records.filed_in(box, msg_id) if box is not None else None
        if box is not None and sub is not None:
            try:
                msg, _st = box.load(msg_id, sub)
                found = {"kind": msg["kind"], "first_line": _first_line(msg["body"]),
                         "from": (msg.get("from") or {}).get("path")}
            except (OSError, ValueError):
                pass  # moved on while we looked, or unreadable: the id alone names it
        self._first[msg_id] = found
        return found


def _when(rec: "Dict[str, Any]") -> float:
    try:
        return parse_stamp(rec.get("at"))
    except (ValueError, TypeError):
        return 0.0  # a record with no readable time is old news, never a reason to fail


def _first_line(body: str) -> str:
    for line in body.split("\n"):
        if line.strip():
            return line.rstrip("\r")
    return ""


def parse_since(text: str, now: "Optional[float]" = None) -> float:
    """`--since`: a duration back from now (`90s`, `30m`, `2h`, `3d`, `1w`) or a UTC date or
    time (`2026-12-02`, `2026-12-02T10:30`, `2026-12-02 10:30:15Z`). ValueError otherwise."""
    now = time.time() if now is None else now
    t = text.strip()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    if len(t) >= 2 and t[-1] in units and t[:-1].isdigit():
        return now - int(t[:-1]) * units[t[-1]]
    stamp = t.replace(" ", "T").rstrip("Z")
    date, _, clock = stamp.partition("T")
    parts = clock.split(":") if clock else []
    while len(parts) < 3:
        parts.append("00")
    full = f"{date}T{':'.join(parts)}Z"
    try:
        return parse_stamp(full)
    except (ValueError, TypeError):
        raise ValueError(f"--since: '{text}' is neither a time (2026-12-02T10:30) nor a duration "
                         f"(30m, 2h, 3d)") from None
