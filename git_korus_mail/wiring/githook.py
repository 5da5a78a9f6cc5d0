"""One of git's own hooks (post-checkout, pre-commit) placed and removed beside the person's own:
a hook of theirs is kept as `<hook>.legacy` and run first by ours, and put back byte for byte
at uninstall (docs/DESIGN.md, "Install"). wiring/postcheckout.py and wiring/precommit.py give
the hook's text and words; the placing is here once.
"""

import os

from git_korus_mail.wiring import files as wfiles

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

LEGACY_SUFFIX = ".legacy"


def place(hook: str, data: bytes, is_ours: "Callable[[str], bool]", force: bool, lost: str,
          advice: str = "", written: str = "written") -> "Tuple[List[str], Optional[str], bool, bool]":
    """Write our hook at `hook`, keeping a foreign one as its legacy; returns (lines to print, a
    problem or None, whether a hook of theirs was moved aside, whether its directory was made).
    `lost` says what the person loses when it cannot be placed, `advice` what to do then."""
    name = os.path.basename(hook)
    legacy = hook + LEGACY_SUFFIX
    lines: "List[str]" = []
    created_dir = moved = False
    try:
        if not os.path.isdir(os.path.dirname(hook)):
            os.makedirs(os.path.dirname(hook))
            created_dir = True
        if os.path.lexists(hook) and not is_ours(hook):
            if os.path.lexists(legacy):
                return lines, (f"{hook} is not ours and {legacy} exists too; left both alone, so {lost}: "
                               f"merge them by hand, then run install again"), False, created_dir
            os.rename(hook, legacy)
            moved = True
            lines.append(f"kept your {name} hook as {os.path.basename(legacy)}; it still runs first")
        if force or wfiles.read_bytes(hook) != data:
            try:
                wfiles.write_atomic(hook, data, 0o755)
            except OSError:
                if moved:
                    os.rename(legacy, hook)  # never leave the person's hook disabled
                raise
            lines.append(f"{name} hook  {hook}  {written}")
        else:
            lines.append(f"{name} hook  {hook}  current")
    except OSError as exc:
        return lines, f"cannot write {hook} ({exc.strerror}); {lost}{advice}", moved, created_dir
    return lines, None, moved, created_dir


def unplace(hook: str, rec: "Optional[Dict[str, Any]]", is_ours: "Callable[[str], bool]") -> "Optional[str]":
    """Remove our hook and move the person's legacy one back. Returns a line to print, or None."""
    name = os.path.basename(hook)
    legacy = hook + LEGACY_SUFFIX
    if not os.path.lexists(hook):
        return None
    if not is_ours(hook):
        return f"{name} hook  {hook}  not ours any more: left alone"
    os.unlink(hook)
    if os.path.lexists(legacy):
        os.rename(legacy, hook)
        return f"{name} hook  {hook}  restored your previous hook"
    if rec and rec.get("created_dir"):
        try:
            os.rmdir(os.path.dirname(hook))
        except OSError:
            pass
    return f"{name} hook  {hook}  removed"
