"""`git-korus-mail guard-commit`: the entry git's pre-commit hook runs (wiring/precommit.py)
once the clone holds a reservation. Not for typing, like `drain`.

It lists the paths the commit changes from git's index (the one git names in GIT_INDEX_FILE:
`git commit -a` and `git commit <paths>` commit a temporary one), asks the core which of
them another worktree reserved (core/commitguard.py), and says so on stderr. Exit 0 lets the
commit through; EXIT_BLOCK (a `--block` reservation) refuses it. Any fault of ours exits 1,
which the hook reads as "not checked" and lets the commit through: a guard that broke a
person's commits would be uninstalled, and then nothing is told at all."""

import os
import subprocess
import sys

from git_korus_mail.wiring.precommit import EXIT_BLOCK

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import List, Sequence, Tuple

MAX_PATHS = 100_000  # a commit's paths read at most: the match stays bounded


def _git(args: "Sequence[str]") -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run(["git", *args], stdin=subprocess.DEVNULL, capture_output=True)


def commit_paths() -> "Tuple[str, str, List[str]]":
    """(the worktree's root, the common dir, the repository-relative paths the commit changes:
    both sides of a rename, so moving a reserved file away is told too). Two git processes."""
    where = _git(["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"])
    lines = where.stdout.decode("utf-8", "surrogateescape").split("\n")
    if where.returncode != 0 or len(lines) < 2:
        raise RuntimeError("not in a worktree: " + where.stderr.decode("utf-8", "replace").strip())
    diff = _git(["diff", "--cached", "--name-only", "--no-renames", "--no-ext-diff", "-z"])
    if diff.returncode != 0:
        raise RuntimeError("git diff --cached failed: " + diff.stderr.decode("utf-8", "replace").strip())
    names = [n.decode("utf-8", "surrogateescape") for n in diff.stdout.split(b"\0") if n]
    return lines[0], lines[1], names[:MAX_PATHS]


def main(argv: "Sequence[str]") -> int:
    if argv:
        sys.stderr.write("usage: git korus-mail guard-commit (git's pre-commit hook runs it; install wires it)\n")
        return 129
    from git_korus_mail.core import commitguard
    from git_korus_mail.store.files import MailRoot
    try:
        worktree, common, paths = commit_paths()
        root = MailRoot.open(common)
        if root is None or not paths:
            return 0
        hits = commitguard.found(root, paths, worktree)
    except Exception as exc:  # noqa: BLE001 - the hook lets the commit through, and says why
        sys.stderr.write(f"git korus-mail: {exc}\n")
        return 1
    if not hits:
        return 0
    text, block = commitguard.told(hits, os.path.realpath(worktree))
    sys.stderr.write(text + "\n")
    return EXIT_BLOCK if block else 0
