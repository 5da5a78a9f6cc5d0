"""How much the store holds, per state: files and bytes, for `doctor` (docs/STORE.md, "Retention").

Read-only and stat-only: no file is opened, no directory created. Every box's directories are
summed by name (inbox, seen, receipts, ...; display markers one level deeper, in shown/), then
the mail root's own: the journal, tmp/ and the shared sent/.
"""

import stat

from git_korus_mail.errors import MailError

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Dict

    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.store.fsafe import Dir

    Sizes = Dict[str, Dict[str, int]]  # part -> {"files": n, "bytes": n}


def _add(sizes: "Sizes", part: str, files: int, size: int) -> None:
    entry = sizes.setdefault(part, {"files": 0, "bytes": 0})
    entry["files"] += files
    entry["bytes"] += size


def _sum(d: "Dir", depth: int = 0) -> "tuple[int, int]":
    """(files, bytes) of the regular files in `d` (and, with depth 1, in its subdirectories)."""
    files = size = 0
    for name in d.names():
        try:
            st = d.lstat(name)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            files += 1
            size += st.st_size
        elif depth and stat.S_ISDIR(st.st_mode):
            try:
                sub = d.open_sub(name)
            except (OSError, MailError):
                continue
            if sub is not None:
                f, s = _sum(sub, depth - 1)
                sub.close()
                files, size = files + f, size + s
    return files, size


def store_usage(root: "MailRoot") -> "Sizes":
    """{part: {"files", "bytes"}}: each box directory name (summed over boxes), `box files` (a
    box's own path, worktree and stamp files), `journal`, `tmp`, `sent (shared)`; and `total`."""
    sizes: Sizes = {}
    for box in root.boxes():
        for entry in box.dir.names():
            try:
                st = box.dir.lstat(entry)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                _add(sizes, "box files", 1, st.st_size)
                continue
            try:
                sub = box.open_sub(entry) if stat.S_ISDIR(st.st_mode) else None
            except (OSError, MailError):
                continue
            if sub is not None:
                _add(sizes, entry, *_sum(sub, depth=1 if entry == "shown" else 0))
    for name in root.dir.names():
        try:
            st = root.dir.lstat(name)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode) and name.startswith("journal"):
            _add(sizes, "journal", 1, st.st_size)
        elif stat.S_ISDIR(st.st_mode) and name in ("tmp", "sent"):
            try:
                sub = root.dir.open_sub(name)
            except (OSError, MailError):
                continue
            if sub is not None:
                _add(sizes, "tmp" if name == "tmp" else "sent (shared)", *_sum(sub))
    total = {"files": sum(v["files"] for v in sizes.values()), "bytes": sum(v["bytes"] for v in sizes.values())}
    sizes["total"] = total
    return sizes
