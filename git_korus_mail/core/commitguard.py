"""The commit guard's judgement (issue 29): which reservations a commit's paths fall under,
and what the committer is told. The pre-commit hook (wiring/precommit.py) runs it through
commands/guard.py, which lists the commit's paths with git.

A commit made in the worktree a reservation was made in is its holder's own work and is never
told; a commit in any other worktree is told who holds the paths (core/reservations.tell).
Advisory by default; a reservation made with `--block` refuses the commit, and the refusal
says how to commit anyway (`git commit --no-verify`, git's own override of a pre-commit hook)
and how the reservation ends."""

import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import List, Optional, Sequence, Tuple

    from git_korus_mail.core.reservations import Reservation
    from git_korus_mail.store.files import MailRoot

    Found = List[Tuple[Reservation, List[str]]]


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def found(root: "MailRoot", paths: "Sequence[str]", worktree: str, now: "Optional[float]" = None) -> "Found":
    """[(reservation, its paths among `paths`)] for every active reservation made in a worktree
    other than `worktree` (the committing one) that names one of the repository-relative
    `paths`."""
    from git_korus_mail.core import reservations
    out: "Found" = []
    for r in reservations.active(root, now):
        if _same_dir(r.worktree, worktree):
            continue
        hit = [p for p in paths if r.matches(p)]
        if hit:
            out.append((r, hit))
    return out


def told(hits: "Found", worktree: str, now: "Optional[float]" = None) -> "Tuple[str, bool]":
    """(the text the committer reads, whether the commit is refused)."""
    from git_korus_mail.core import reservations
    block = any(r.block for r, _paths in hits)
    head = "git korus-mail: this commit touches paths reserved in another worktree:"
    # a refused commit is not also called advisory (core/reservations.tell's last line)
    lines = [head, reservations.tell(hits, worktree, now, advisory=not block)]
    if block:
        ids = " ".join(r.id for r, _paths in hits if r.block)
        lines.append("This commit was refused: a reservation above asks to block edits to its paths.")
        lines.append("  To commit anyway: git commit --no-verify")
        lines.append(f"  Or its holder ends it: git korus-mail reserve --drop {ids}"
                     " (the person may add --force)")
    return "\n".join(lines), block
