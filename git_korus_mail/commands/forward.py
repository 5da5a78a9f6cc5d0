"""`forward`: a person moves the queued mail of a box nobody drains into a worktree's box.

The box of a removed or pruned worktree keeps its queue (queued mail is never deleted
without a person saying so); `list` and `doctor` flag it, and this command moves it.
The move itself is forwarding.move_queue: crash-safe, once per message, journaled,
and each message keeps its id, so its sender's `status` still finds its fate.
"""

import json
import os
from dataclasses import dataclass

from git_korus_mail.core import keys, send
from git_korus_mail.store import forwarding, moves
from git_korus_mail.errors import MailError, UsageError


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, List

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import MailRoot


@dataclass(frozen=True)
class ForwardArgs:
    box: str              # a box key, a unique key prefix (4+ chars), or the path it was for
    to: str               # a worktree path, `.`, or a worktree name, as for send
    json: bool = False    # machine-readable result


def find_box(root: "MailRoot", spec: str) -> str:
    """The box named by `spec`: a box key, a unique prefix of 4+ characters, or its path."""
    names = root.box_names()
    if spec in names:
        return spec
    hits: "List[str]" = []
    if len(spec) >= 4:
        hits = [n for n in names if n.startswith(spec) or n.rsplit("-", 1)[-1].startswith(spec)]
    if not hits:
        wanted = {keys.key_for(spec).name} if os.path.exists(spec) else set()
        norm = keys.normalize(os.path.abspath(os.path.expanduser(spec)))
        for n in names:
            box = root.box(n)
            if n in wanted or (box is not None and box.recorded_path() == norm):
                hits.append(n)
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise MailError(f"<box> {spec!r} is ambiguous: " + ", ".join(sorted(hits)))
    # an unknown name, as send's unknown destination: exit 1; the usage was followed (not 129)
    raise MailError(f"<box> {spec!r}: no such box (`git korus-mail list` shows them)")


def run(clone: "Clone", args: ForwardArgs, out: "IO[str]") -> int:
    root = clone.mail_root()
    if root is None:
        raise MailError("this clone has no mail queue yet: nothing to forward")
    src_name = find_box(root, args.box)
    if args.to == "all":
        raise UsageError("--to all: forward to one worktree")
    [target] = send.resolve(clone, [args.to])
    if target.error:
        raise MailError(f"--to {target.error}")
    assert target.key is not None  # resolved without an error: it names a box
    if target.key.name == src_name:
        raise MailError(f"{src_name} is the box of {target.path} itself: nothing to forward")
    src = root.box(src_name)
    assert src is not None  # find_box named a box that is there
    moves.repair(src)       # a forward or consume a killed process left half done is completed first
    moves.expire_due(src)   # mail already past its expiry stays where it expired, with its notice
    dst = root.box(target.key.name, create=True, path=target.key.path, adopt=send.owner_of(clone, target))
    assert dst is not None  # create=True: made when absent
    result = forwarding.move_queue(src, dst, "forwarded")
    root.journal("box-forwarded", source=src_name, box=dst.name, moved=len(result["moved"]),
                 held=len(result["held"]), skipped=len(result["skipped"]))
    if args.json:
        out.write(json.dumps({"source": src_name, "destination": {"box": dst.name, "path": target.path},
                              **result}, indent=2) + "\n")
    else:
        n = len(result["moved"])
        out.write(f"forwarded {n} message{'s' if n != 1 else ''} from {src_name} to {target.path}\n")
        if result["held"]:
            out.write(f"{len(result['held'])} held by a live process (a session consuming it): they stay in "
                      f"{src_name}; run the same forward again later\n")
        if result["skipped"]:
            out.write(f"{len(result['skipped'])} file(s) there are no message files; left in place\n")
    return 1 if result["held"] else 0
