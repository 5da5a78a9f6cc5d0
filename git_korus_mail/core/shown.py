"""What a show put before the model, summed up for the person at the keyboard.

The drain hands a client this summary (drain.Outcome.shown) and the client decides where the
person sees it (Claude Code: the hook's systemMessage; docs/HOOKS.md, "The user line"). The
line is built here, because every field in it came from a message file and is hostile: sender
paths are escaped by the drain's own rule (render.field) and the whole line is capped. It only
sums up; the mail itself reaches the model once, in the context the drain renders.
"""

import posixpath

from git_korus_mail.core.render import escape_line, units

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Tuple

    from git_korus_mail.store.message import Message

LINE_CAP = 240      # the whole line, in UTF-16 units
SENDER_CAP = 60     # one sender as shown
SENDERS_NAMED = 3   # senders named one by one; the rest are counted
IDS_NAMED = 3       # abbreviated ids named per sender
ID_TAIL = 8         # an id is shown as its last hex digits (its random part)


def field(value: object, cap: int) -> str:
    """`value` escaped as the drain escapes every field (render.escape_line), cut to `cap`
    UTF-16 units with a bare `…`: the drain's own cut note would take most of a short field."""
    raw = str(value)
    text, cut = escape_line(raw[:cap], 10 * cap + 1)  # an escape is at most 10 units per character
    if not cut and len(raw) <= cap and units(text) <= cap:
        return text
    out, used = [], 0
    for ch in text:
        w = 2 if ch > "\uffff" else 1
        if used + w > cap - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def short_id(msg_id: str) -> str:
    """The end of an id's random part: enough to tell this event's messages apart."""
    return "…" + msg_id[-ID_TAIL:]


def sender_label(sender_path: "Optional[str]", here: str) -> str:
    """A sender's worktree as the recipient would type it: relative to `here` when that is
    shorter (`../api`), else as recorded. Raw text: escaped by the caller."""
    if not sender_path:
        return "an unknown sender"
    if posixpath.isabs(sender_path) and posixpath.isabs(here):
        rel = posixpath.relpath(sender_path, here)
        if len(rel) < len(sender_path):
            return rel
    return sender_path


class Shown:
    """The messages one show rendered, in order: (sender label, kind, id) each, and how
    many more wait for a later event."""

    def __init__(self, items: "Sequence[Tuple[str, str, str]]", deferred: int = 0) -> None:
        self.items = list(items)
        self.deferred = deferred

    @classmethod
    def of(cls, msgs: "Sequence[Message]", here: str, deferred: int = 0) -> "Shown":
        items = []
        for msg in msgs:
            sender = msg.get("from") or {}
            path = sender.get("path") if isinstance(sender, dict) else None
            items.append((sender_label(path, here), str(msg.get("kind") or "note"), str(msg.get("id") or "")))
        return cls(items, deferred)

    def __len__(self) -> int:
        return len(self.items)

    def line(self, cap: int = LINE_CAP) -> str:
        """One line for the person, e.g. `korus-mail: 1 message from ../api (handoff, id …0f3c9a21)
        shown to the model`; at most `cap` UTF-16 units, nothing in it unescaped."""
        by: Dict[str, List[Tuple[str, str]]] = {}
        for sender, kind, msg_id in self.items:
            by.setdefault(sender, []).append((kind, msg_id))
        n = len(self.items)
        count = f"{n} message{'s' if n != 1 else ''}"
        if len(by) == 1:
            sender, msgs = next(iter(by.items()))
            text = f"korus-mail: {count} from {field(sender, SENDER_CAP)} ({_detail(msgs)}) shown to the model"
        else:
            groups = list(by.items())
            parts = [f"{len(msgs)} from {field(sender, SENDER_CAP)} ({_detail(msgs)})"
                     for sender, msgs in groups[:SENDERS_NAMED]]
            rest = groups[SENDERS_NAMED:]
            if rest:
                parts.append(f"{sum(len(m) for _s, m in rest)} from {len(rest)} more "
                             f"sender{'s' if len(rest) != 1 else ''}")
            text = f"korus-mail: {count} shown to the model: " + ", ".join(parts)
        if self.deferred:
            text += f"; {self.deferred} more wait{'s' if self.deferred == 1 else ''} for the next event"
        if units(text) > cap:
            text = field(text, cap)  # every part is escaped already: this only cuts
        return text


def _detail(msgs: "Sequence[Tuple[str, str]]") -> str:
    """`note, id …0f3c9a21` or `2 note, 1 question; ids …a, …b, …c +2`."""
    kinds: Dict[str, int] = {}
    ids: List[str] = []
    for kind, msg_id in msgs:
        kinds[kind] = kinds.get(kind, 0) + 1
        ids.append(short_id(msg_id))
    if len(msgs) == 1:
        return f"{field(msgs[0][0], 20)}, id {field(ids[0], 20)}"
    kind_text = ", ".join(f"{c} {field(k, 20)}" for k, c in kinds.items())
    named = ", ".join(field(i, 20) for i in ids[:IDS_NAMED])
    more = f" +{len(ids) - IDS_NAMED}" if len(ids) > IDS_NAMED else ""
    return f"{kind_text}; ids {named}{more}"
