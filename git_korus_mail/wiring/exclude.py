"""A line in `<common>/info/exclude` (never a tracked .gitignore), added and taken out again."""

import os

from git_korus_mail.wiring import files as wfiles

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import AbstractSet, Any, Dict, Optional, Tuple

    from git_korus_mail.core.clone import Clone


def add_exclude(clone: "Clone", scope_rec: "Dict[str, Any]", line: str, covering: "AbstractSet[str]",
                key: str = "exclude") -> "Tuple[str, str]":
    """Add `line` unless a line in `covering` is there already; the change goes in `scope_rec[key]`
    (one key per client: each takes out only its own line)."""
    path = os.path.join(clone.common_dir, "info", "exclude")
    raw = wfiles.read_bytes(path) or b""
    lines = {ln.strip() for ln in raw.decode("utf-8", "replace").splitlines()}
    if lines & covering:
        return path, "present"
    added = ("\n" if raw and not raw.endswith(b"\n") else "") + line + "\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    created = not os.path.exists(path)
    wfiles.write_atomic(path, raw + added.encode(), wfiles.mode_of(path, wfiles.default_file_mode()))
    scope_rec[key] = {"path": path, "appended": added, "created": created}
    return path, "added"


def remove_exclude(clone: "Clone", rec: "Optional[Dict[str, Any]]", line: str) -> "Optional[str]":
    """Take out what add_exclude added (recorded in `rec`); returns the path, or None."""
    path: str = (rec or {}).get("path") or os.path.join(clone.common_dir, "info", "exclude")
    raw = wfiles.read_bytes(path)
    if raw is None or rec is None:
        return None
    appended = rec.get("appended", "").encode()
    if appended and raw.endswith(appended):
        new = raw[:-len(appended)]
    else:
        lines = raw.decode("utf-8", "replace").splitlines(keepends=True)
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].strip() == line:
                del lines[i]
                break
        new = "".join(lines).encode()
    if not new and rec.get("created"):
        os.unlink(path)
    elif new != raw:
        wfiles.write_atomic(path, new, wfiles.mode_of(path, 0o644))
    return path
