"""The one rule by which every command that takes a message id (read, cancel, reply, release)
finds it, as git finds an object: the full id, a prefix only one candidate has, or its end of
SUFFIX_MIN or more characters, which is how the person's line and the renderings print an id
(`…970758d4`, core/shown.py). Each command brings its own candidates (what it can act on); the
rule, the refusal of what is no id, and the list of an ambiguous id's candidates live here only.
"""

from git_korus_mail.errors import MailError

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Dict, Iterable, List, Optional

    from git_korus_mail.core.clone import Clone

SUFFIX_MIN = 6      # an id's end names it from this many characters: the person's line shows its last 8
ELLIPSES = ("…", "...")   # the printed form marks an end; `...` is how it survives an ASCII terminal
ID_CHARS = frozenset("0123456789abcdefTZp.-")
LISTED = 10         # an ambiguous id lists at most this many candidates, one line each


class IdText:
    """What a person typed for an id, checked and normalised: `text` to match, and whether it
    was given as an end (`…0f3c9a21`), which matches by the end only."""

    def __init__(self, given: str, hint: str) -> None:
        self.given = given
        self.end_only = False
        text = given
        for mark in ELLIPSES:
            if text.startswith(mark):
                text, self.end_only = text[len(mark):], True
                break
        if not text or not all(c in ID_CHARS for c in text) or (self.end_only and len(text) < SUFFIX_MIN):
            from git_korus_mail.core.render import field
            what = f"an id's end needs {SUFFIX_MIN} or more characters" if self.end_only and text and all(
                c in ID_CHARS for c in text) else "not a message id"
            raise MailError(f"{field(given, 80)}: {what} ({hint})")
        self.text = text

    def names(self, msg_id: str) -> bool:
        """This text names `msg_id`: all of it, its start, or its end (6+ characters)."""
        t = self.text
        if self.end_only:
            return msg_id.endswith(t)
        return msg_id.startswith(t) or (len(t) >= SUFFIX_MIN and msg_id.endswith(t))


def matching(idt: IdText, ids: "Iterable[str]") -> "List[str]":
    """The candidates `idt` names, in their order, without repeats; only the exact one when
    one is exact (a full id is never ambiguous)."""
    out: List[str] = []
    for i in ids:
        if i == idt.text and not idt.end_only:
            return [i]
        if idt.names(i) and i not in out:
            out.append(i)
    return out


def ambiguous(idt: IdText, candidates: "List[str]", labels: "Optional[Dict[str, str]]" = None) -> MailError:
    """The error for an id that names several candidates: one line each (with its label, such
    as the box it is in), at most LISTED."""
    lines = [f"  {c}{(labels or {}).get(c, '')}" for c in candidates[:LISTED]]
    if len(candidates) > LISTED:
        lines.append(f"  and {len(candidates) - LISTED} more")
    from git_korus_mail.core.render import field
    return MailError(f"{field(idt.given, 80)} is ambiguous: it names {len(candidates)} message ids; "
                     f"give more of it. The candidates are:\n" + "\n".join(lines))


def one(idt: IdText, ids: "Iterable[str]") -> "Optional[str]":
    """The one candidate `idt` names; None when none; MailError (listing them) when several."""
    found = matching(idt, ids)
    if len(found) > 1:
        raise ambiguous(idt, found)
    return found[0] if found else None


COMPLETED = ("read", "reply", "cancel", "release")   # the commands whose <id> completion offers
OFFERED = 200   # at most this many ids, newest first: a completion menu, not a listing


def candidates(clone: "Clone", command: str) -> "List[str]":
    """The ids `command` can act on here, newest first, for shell completion: read, this
    worktree's box in every state; reply, what it received (queued or consumed); cancel,
    what it sent; release, every claim of the clone. Reads only: nothing is settled or made."""
    from git_korus_mail.store import claims, sent
    from git_korus_mail.store.layout import FILED
    from git_korus_mail.store.message import valid_id
    root = clone.mail_root()
    if root is None:
        return []
    own = clone.own_box()
    found: "List[str]" = []
    if command in ("read", "reply") and own is not None:
        for sub in (FILED if command == "read" else ("inbox", "seen")):
            from git_korus_mail.store import records  # loaded where used
            found.extend(records.ids_in(own, sub))
    elif command == "cancel":
        found = sent.ids(root, own, clone.own_key.path, shared=not clone.in_worktree())
    elif command == "release":
        for box in root.boxes():
            from git_korus_mail.store import records  # loaded where used
            found.extend(n[:-len(claims.CLAIM_SUFFIX)] for n in records.claim_names(box)
                         if n.endswith(claims.CLAIM_SUFFIX) and valid_id(n[:-len(claims.CLAIM_SUFFIX)]))
    return sorted(set(found), reverse=True)[:OFFERED]  # an id starts with its UTC time: newest first
