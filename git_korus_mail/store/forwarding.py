"""Moving a box's queued mail into another box: adoption after `git worktree move`, and
`git korus-mail forward` for a box that no worktree drains any more.

One message moves by `moves.forward`, in four writes; a process killed between two of them
leaves a state the next reader completes (each gap is a named crash point). It is a move like
a consume, in moves.py, because a move's repair finishes it (moves._repair_one):

    claim <id> in the source box          as a consume does; a live holder keeps it (try later)
    source forwarded/<id>.json            the decision, naming the destination box
    copy into the destination inbox       staged in tmp/, fsynced, renamed in: one link, complete
    unlink the source inbox entry         only the process whose unlink succeeds journals it

The id stays the same, so the sender's `status` follows forwarded/<id>.json from the
box its sent record names to the box that holds the message now. A decision once
recorded stands for the move it records: a repair, or a later forward, completes it to
the box it names; once the message comes back into that box, the record goes (it is
removed before the copy lands), so the next move decides afresh (docs/STORE.md).
Nothing here deletes a message that was not first placed in the destination.
"""

from git_korus_mail.store import moves, wtident
from git_korus_mail.store.fsafe import NotRegular, TooLarge

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Optional

    from git_korus_mail.store.files import Box, MailRoot

MSG_SUFFIX = ".json"
WORKTREE_FILE = "worktree"
MAX_HOPS = 16         # forwarded/ records a reader follows before it gives up (a cycle, or junk)


def recorded_worktree(box: "Box") -> "Optional[str]":
    """The worktree identity a box records (wtident), None when it records none yet."""
    try:
        data, _ = box.dir.read_regular(WORKTREE_FILE, 4096)
    except (FileNotFoundError, NotRegular, TooLarge):
        return None
    return data.decode("utf-8", "replace").strip() or None


def first_use(box: "Box", ident: str) -> None:
    """A box just made for the worktree `ident` (or whose first use a killed process cut short)
    adopts the queue of that worktree's older boxes, then records the identity, once nothing is
    left behind. Called by files.MailRoot.box through its caller's `adopt`."""
    if adopt(box.root, box, ident):
        write_worktree(box, ident)


def write_worktree(box: "Box", ident: str) -> None:
    box.dir.write_replace(WORKTREE_FILE, (ident + "\n").encode("utf-8"), box.root.tmp)


# -- a whole box -----------------------------------------------------------------------
def move_queue(src: "Box", dst: "Box", why: str) -> "dict[str, list[str]]":
    """Move every queued message of `src` into `dst`. Returns {"moved", "held", "skipped"} lists."""
    out: "dict[str, list[str]]" = {"moved": [], "held": [], "skipped": []}
    ids, _odd = src.inbox_ids()
    for msg_id in ids:
        result = moves.forward(src, dst, msg_id, why)
        if result in out:
            out[result].append(msg_id)
    return out


def _move_sent(src: "Box", dst: "Box") -> None:
    """The moved worktree's own sent records go with it, so its `status` still lists them."""
    sent = src.open_sub("sent")
    if sent is None:
        return
    target = None
    for name in sent.names():
        if name.startswith(".") or not name.endswith(MSG_SUFFIX):
            continue
        if target is None:
            target = dst.ensure_sub("sent")
        try:
            sent.rename_to(name, target, name)  # atomic: the record is in one box or the other
        except FileNotFoundError:
            continue


def sources(root: "MailRoot", ident: str, exclude: str) -> "list[str]":
    """Names of the other boxes that record the worktree identity `ident`."""
    if ident == wtident.NONE:
        return []
    out: "list[str]" = []
    for box in root.boxes():
        if box.name != exclude and recorded_worktree(box) == ident:
            out.append(box.name)
    return out


def adopt(root: "MailRoot", box: "Box", ident: str, names: "Optional[list[str]]" = None) -> bool:

    """Take over the queue of every older box of the same worktree. True when nothing is left
    behind (then the caller records the identity in `box`, and this is not tried again)."""
    complete = True
    for name in (names if names is not None else sources(root, ident, box.name)):
        src = root.box(name)
        if src is None:
            continue
        result = move_queue(src, box, "adopted")
        _move_sent(src, box)
        if result["held"]:
            complete = False  # a live claim holder: its message waits for a later event
            continue
        # the identity moves with the queue: if the old path is ever used again, its box adopts anew
        src.dir.unlink_quiet(WORKTREE_FILE)
        root.journal("box-adopted", box=box.name, source=name, moved=len(result["moved"]), worktree=ident)
    return complete
