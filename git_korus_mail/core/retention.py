"""How long mail in a final state is kept: `git config korus-mail.retention-days` (default 30).

Read with git itself, so every config file git reads counts (system, global, the clone's, a
worktree's). A bad value is said by `doctor` and `status` in one line; the drain keeps the
default meanwhile (docs/STORE.md, "Retention"). The drain asks at most once a day per box.
"""

import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Optional, Tuple

KEY = "korus-mail.retention-days"
DEFAULT_DAYS = 30
MAX_DAYS = 36500  # a hundred years: anything longer is a typo


def check(value: str) -> "Tuple[int, Optional[str]]":
    """(days, None) for a good value; (DEFAULT_DAYS, the one-line problem) for a bad one."""
    text = value.strip()
    if text.isascii() and text.isdigit() and int(text) <= MAX_DAYS:
        return int(text), None
    shown = text if len(text) <= 40 and text.isprintable() else repr(text[:40])
    return DEFAULT_DAYS, (f"{KEY} {shown!r} is not a whole number of days from 0 to {MAX_DAYS}; "
                          f"the default, {DEFAULT_DAYS}, is used")


def keep_days(worktree: str) -> "Tuple[int, Optional[str]]":
    """The configured retention for the clone `worktree` belongs to: (days, problem or None)."""
    import subprocess  # only once a day per box, and in the commands that report it
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    try:
        proc = subprocess.run(["git", "-C", worktree, "config", "--get", KEY], capture_output=True,
                              env=env, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return DEFAULT_DAYS, f"{KEY} could not be read ({exc}); mail is kept the default {DEFAULT_DAYS} days"
    if proc.returncode == 1 and not proc.stdout:
        return DEFAULT_DAYS, None  # not set
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return DEFAULT_DAYS, (f"{KEY} could not be read ({why[0][:120] if why else 'git exited ' + str(proc.returncode)});"
                              f" mail is kept the default {DEFAULT_DAYS} days")
    return check(proc.stdout.decode("utf-8", "replace"))
