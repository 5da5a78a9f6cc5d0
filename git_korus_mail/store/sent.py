"""The sender's index of what it sent: one record per message, so `status` can follow each
message to its fate (see records.fate, forwarding for mail that moved boxes).

A sender inside a worktree keeps `box/<key>/sent/<id>.json`; one outside every worktree (in
/tmp, in .git/mail, in a bare repository) keeps no box, so its records go to the mail root's
`sent/`, each carrying the sender's path in `from`. Records are written once, exclusively.
"""

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.store.layout import MSG_SUFFIX

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Optional

    from git_korus_mail.store.files import Box, MailRoot
    from git_korus_mail.store.fsafe import Dir
    from git_korus_mail.store.message import Message

    # (file name, its directory, its record when already read)
    Entry = tuple[str, Dir, Optional[dict[str, Any]]]

SENT = "sent"


def record(root: "MailRoot", own_box: "Optional[Box]", msg: "Message", target_box: str,
           target_path: "Optional[str]", sender_path: str, remote: "Optional[dict[str, str]]" = None) -> None:
    """Index a message just published (`own_box` None: a sender outside every worktree).
    `remote`: mail for another clone ({"label", "clone", "name"}), whose fate the relay brings back
    (docs/RELAY.md, "Fates back"); `box` and `path` then name the box on that clone."""
    sent = own_box.ensure_sub(SENT) if own_box is not None else root.dir.ensure_sub(SENT)
    rec: "dict[str, Any]" = {"id": msg["id"], "box": target_box, "path": target_path, "sent_at": msg["sent_at"],
           "expires_at": msg["expires_at"], "kind": msg["kind"], "from": sender_path}
    if remote is not None:
        rec["remote"] = remote
    sent.create_exclusive(msg["id"] + MSG_SUFFIX, json.dumps(rec, sort_keys=True).encode(), sync=False)


def entries(root: "MailRoot", box: "Optional[Box]", sender_path: str, shared: bool) -> "list[Entry]":
    """What `sender_path` sent, newest first, as opaque entries for `load`: `box`'s sent/ (read
    later, only as many as are shown), and with `shared` (a sender outside every worktree) the
    mail root's sent/, whose records are read now to pick the sender's own."""
    out: "list[Entry]" = []
    sent = box.open_sub(SENT) if box is not None else None
    if sent is not None:
        out.extend((n, sent, None) for n in sent.names() if n.endswith(MSG_SUFFIX) and not n.startswith("."))
    common = root.dir.open_sub(SENT) if shared else None
    if common is not None:
        for n in common.names():
            rec = load((n, common, None)) if n.endswith(MSG_SUFFIX) and not n.startswith(".") else None
            if rec is not None and rec.get("from") == sender_path:
                out.append((n, common, rec))
    out.sort(key=lambda e: e[0], reverse=True)
    return out


def load(entry: "Entry") -> "Optional[dict[str, Any]]":

    """The record of one entry, or None when it is unreadable or not shaped like ours."""
    name, d, rec = entry
    if rec is not None:
        return rec
    rec = d.read_json(name)
    if not isinstance(rec, dict) or not isinstance(rec.get("id"), str) or not isinstance(rec.get("box"), str):
        return None
    return rec


def ids(root: "MailRoot", box: "Optional[Box]", sender_path: str, shared: bool) -> "list[str]":
    """The ids of what `sender_path` sent (see `entries`), newest first; odd names left out."""
    from git_korus_mail.store.message import valid_id
    return [e[0][:-len(MSG_SUFFIX)] for e in entries(root, box, sender_path, shared)
            if valid_id(e[0][:-len(MSG_SUFFIX)])]


def find(root: "MailRoot", box: "Optional[Box]", sender_path: str, shared: bool,
         msg_id: str) -> "Optional[dict[str, Any]]":
    """The sent record of `msg_id` if `sender_path` sent it (`cancel`), else None."""
    for entry in entries(root, box, sender_path, shared):
        if entry[0] == msg_id + MSG_SUFFIX:
            rec = load(entry)
            return rec if rec is not None and rec.get("id") == msg_id else None
    return None
