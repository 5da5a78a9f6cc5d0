"""Which worktree a box belongs to, in a form that survives `git worktree move`.

A box is named by its worktree's path (see keys), so a moved worktree drains a new,
empty box. Each box therefore records its worktree's identity, and the first box
made for an identity adopts the queue of any older box with the same one (see
forwarding). The identity:

- "main" for the clone's main worktree (its git dir is the common dir itself);
- "worktrees/<id> <token>" for a linked one: git's admin dir under the common dir,
  plus a random token we keep in that admin dir. `git worktree move` keeps the admin
  dir and so the token; `git worktree remove` and `prune` delete it, so a later
  worktree that reuses the id gets a new token and never inherits a removed
  worktree's mail (that takes a person: `git korus-mail forward`);
- "none" for anything else (a folder outside every worktree, or a worktree of
  another clone than the queue's).

Relative to the common dir, so moving the whole clone keeps every identity.
Computed only when a box is first made: the hook hot path never comes here otherwise.
"""

import os

from git_korus_mail.store.fsafe import write_new  # the one writer of new files (O_EXCL, exact mode)

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Optional, Protocol

    class Located(Protocol):
        """What of_location reads of a core discover.Location (the store cannot import core)."""
        worktree: Optional[str]
        git_dir: str
        common_dir: str

TOKEN_FILE = "korus-mail-id"
NONE = "none"
MAIN = "main"
_HEX = frozenset("0123456789abcdef")


def of_git_dir(git_dir: str, common_dir: str) -> str:
    """Identity of the worktree whose git dir is `git_dir` (its admin dir, or the common dir)."""
    git_dir = os.path.realpath(git_dir)
    common_dir = os.path.realpath(common_dir)
    if git_dir == common_dir:
        return MAIN
    parent, wt_id = os.path.split(git_dir)
    if parent != os.path.join(common_dir, "worktrees") or not wt_id:
        return NONE
    token = _token(git_dir)
    return f"worktrees/{wt_id} {token}" if token else NONE


def of_location(location: "Optional[Located]", queue_common_dir: str) -> str:
    """Identity for a discover.Location, NONE outside a worktree of the queue's own clone."""
    if location is None or not location.worktree or location.common_dir != os.path.realpath(queue_common_dir):
        return NONE
    return of_git_dir(location.git_dir, location.common_dir)


def _read_token(path: str) -> "Optional[str]":
    try:
        with open(path, "rb") as f:
            text = f.read(64).decode("ascii", "replace").strip()
    except OSError:
        return None
    return text if len(text) == 24 and all(c in _HEX for c in text) else None


def _token(admin_dir: str) -> "Optional[str]":
    """The admin dir's token, made on first need: staged, then linked (only one maker wins)."""
    path = os.path.join(admin_dir, TOKEN_FILE)
    token = _read_token(path)
    if token is not None:
        return token
    staged = f"{path}.{os.getpid()}.{os.urandom(4).hex()}"
    try:
        write_new(staged, (os.urandom(12).hex() + "\n").encode("ascii"), 0o600)
        try:
            os.link(staged, path)
        except FileExistsError:
            pass  # another process made it first: theirs stands
        finally:
            os.unlink(staged)
    except OSError:
        return None  # an admin dir we cannot write: no identity, so nothing is ever adopted into it
    return _read_token(path)
