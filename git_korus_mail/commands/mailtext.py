"""Text for people about single messages (inbox, read, cancel): fields made safe for a
terminal by the drain's own escaping (core/render.py), cut to a width in columns."""

import os

from git_korus_mail.commands.text import columns, safe
from git_korus_mail.core import render
from git_korus_mail.stamps import human_age, parse_stamp

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, List, Mapping, Optional

WIDTH = 99  # every line of `inbox` stays under 100 columns


def fit(text: str, width: int = WIDTH, keep_end: bool = False) -> str:
    """`text` (already safe) cut to `width` columns with an ellipsis; `keep_end` keeps the end,
    where a path says most (its start is the same for every worktree of a clone)."""
    if columns(text) <= width:
        return text
    chars = list(reversed(text)) if keep_end else list(text)
    out: "List[str]" = []
    used = 0
    for ch in chars:
        w = columns(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "…" + "".join(reversed(out)) if keep_end else "".join(out) + "…"


def stamp(value: "Any") -> str:  # Any: a field from disk, sliced once parse_stamp accepts it
    """A stored time as a person reads it: to the second, UTC; anything else made safe."""
    try:
        parse_stamp(value)
    except (ValueError, TypeError):
        return safe(value) if value is not None else "?"
    return f"{value[:10]} {value[11:19]}Z"


def age(value: object, now: float) -> str:
    try:
        return human_age(now - parse_stamp(value))
    except (ValueError, TypeError):
        return "?"


def relayed(e: "Mapping[str, Any]") -> bool:
    """Whether a listed message came from another clone: its sender names one (the relay sets
    `from.clone`), or it has an arrival record here (store/arrivals.py)."""
    frm = e.get("from") or {}
    return bool(e.get("arrived_at")) or (isinstance(frm.get("clone"), str) and bool(frm["clone"]))


def sent_said(value: object, now: float) -> str:
    """How long ago a relayed message was sent, said as the sender's clock: another machine's
    clock may be ahead of this one, and its time then lies in our future."""
    try:
        ahead = parse_stamp(value) - now
    except (ValueError, TypeError):
        return "?"
    if ahead >= 1:
        return f"{human_age(ahead)} ahead of this machine's"
    return f"{human_age(-ahead)} ago"


def arrival_line(e: "Mapping[str, Any]", now: float, here: bool = True) -> str:
    """`arrived here <stamp> (<age> ago), by this machine's clock` for relayed mail: when it
    reached this clone (what limits and expiry judge it by; docs/STORE.md, "Arrivals").
    `here=False` leaves out the leading word, for `read`'s column of field names."""
    at = e.get("arrived_at")
    if not at:  # retention keeps a record while its message is queued, and a while after
        return ("arrival here" if here else "here") + " not recorded (no longer kept)"
    return ("arrived here " if here else "") + f"{stamp(at)} ({age(at, now)} ago), by this machine's clock"


def rel_path(path: object, here: str) -> str:
    """A sender's path as seen from this worktree (`../api`), when that is shorter."""
    if not isinstance(path, str) or not path:
        return "?"
    try:
        rel = os.path.relpath(path, here)
    except ValueError:
        return safe(path)
    return safe(rel if len(rel) < len(path) else path)


def sender(frm: "Optional[Mapping[str, Any]]", here: str, width: "Optional[int]" = None) -> str:
    """`(unverified) ../api [main] session s-1`, every field escaped (the drain's order: the
    claim's label first, so no cut can take it). With `width`: the branch and the session cut
    first, so that the path, by its end, keeps most of the room; the caller cuts the rest."""
    frm = frm or {}
    tail = ""
    if frm.get("branch"):
        tail += f" [{fit(safe(frm['branch']), 16) if width else safe(frm['branch'])}]"
    if frm.get("session"):
        tail += f" session {fit(safe(frm['session']), 16) if width else safe(frm['session'])}"
    head = "(unverified) "
    clone = frm.get("clone")
    if isinstance(clone, str) and clone:
        # mail from another clone: its label is the subject the server took it on, which per-clone
        # permissions tie to that clone's credentials; path, branch, session are its own claim
        # (docs/RELAY.md, "Trust")
        head = f"(relayed from {fit(safe(clone.split(':', 1)[0]), 32)}; unverified) "
    path = rel_path(frm.get("path"), here)
    if width:
        path = fit(path, max(16, width - len(head) - columns(tail)), keep_end=True)
    return head + path + tail


def body_lines(body: str) -> "List[str]":
    """The whole body for a terminal, line by line, as the drain renders it for the model: each
    line prefixed with render.BODY_PREFIX, a CRLF taken as one line break, and every control,
    bidi and invisible character (a lone CR, ESC, NUL, U+202E, U+200B...) as a visible escape."""
    out: "List[str]" = []
    for line in body.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        text, _cut = render.escape_line(line, 10 * len(line) + 16)  # room for every escape: no cut
        out.append(render.BODY_PREFIX + text)
    if len(out) > 1 and out[-1] == render.BODY_PREFIX:
        out.pop()  # a final newline ends the last line; it starts none
    return out
