"""`off` / `on`: suppress / resume delivery everywhere; queued mail is kept."""

from dataclasses import dataclass

from git_korus_mail.core import report


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO

    from git_korus_mail.core.clone import Clone


@dataclass(frozen=True)
class SwitchArgs:
    off: bool   # True for `off`, False for `on`


def run(clone: "Clone", args: SwitchArgs, out: "IO[str]") -> int:
    changed, queued = report.switch(clone, args.off)
    state = "off" if args.off else "on"
    out.write(f"delivery {state}{'' if changed else ' (it already was)'}; "
              f"{queued} queued message{'s' if queued != 1 else ''} kept\n")
    return 0
