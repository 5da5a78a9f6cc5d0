"""`doctor`'s look at what the store keeps: its size per state, and the retention setting."""

from git_korus_mail.commands.text import retention
from git_korus_mail.core.retention import KEY, keep_days
from git_korus_mail.store.usage import store_usage

TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Protocol

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import MailRoot

    class Findings(Protocol):
        """doctor.Findings, named by its shape: doctor imports this module, never the reverse."""
        items: List[Dict[str, Any]]

        def add(self, check: str, ok: bool, where: str, detail: str, fix: Optional[str] = None) -> None: ...

STATES = ("inbox", "claiming", "seen", "receipts", "expired", "cancelled", "dropped", "quarantine")


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def check_size(root: "MailRoot", findings: "Findings") -> None:
    """One finding: the store's files and bytes, then per part (the states first)."""
    sizes = store_usage(root)
    total = sizes.pop("total")
    order = [p for p in STATES if p in sizes] + sorted(p for p in sizes if p not in STATES and sizes[p]["files"])
    parts = ", ".join(f"{p} {sizes[p]['files']} ({human_bytes(sizes[p]['bytes'])})" for p in order)
    findings.add("size", True, root.path, f"{total['files']} files, {human_bytes(total['bytes'])}"
                 f"{': ' + parts if parts else ''}")
    findings.items[-1]["sizes"] = dict(sizes, total=total)


def check_retention(clone: "Clone", findings: "Findings") -> None:
    days, problem = keep_days(clone.own_key.path)
    if problem:
        findings.add("retention", False, KEY, problem, f"git config {KEY} <days>  (a whole number; 30 by default)")
    else:
        findings.add("retention", True, KEY, retention(days))
