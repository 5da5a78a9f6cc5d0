"""Colour for people, never for pipes, decided as git decides its own: git's `color.korus-mail`,
else `color.ui` (`never`/false: off; `always`: on, even into a pipe; `auto`/true or unset: on a
terminal only), and a non-empty NO_COLOR turns `auto` off (no-color.org: an empty one does not;
a setting the user wrote in a config file wins over it)."""

import os
import subprocess
import sys

_enabled: "bool | None" = None

_ALWAYS = ("always",)
_NEVER = ("never", "false", "no", "off", "0")


def _git_setting() -> "str | None":
    """`color.korus-mail`, else `color.ui`, as git reads it here (lowercased); None when unset
    or git cannot say (not a repository is fine: the user's config is still read)."""
    try:
        proc = subprocess.run(["git", "config", "--get-regexp", r"^color\.(korus-mail|ui)$"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    found = {}
    for line in proc.stdout.splitlines():
        name, _, value = line.partition(" ")
        found[name.lower()] = value.strip().lower()  # the last one git lists wins, as in git
    return found.get("color.korus-mail", found.get("color.ui"))


def _decide() -> bool:
    setting = _git_setting()
    if setting in _NEVER:
        return False
    if setting in _ALWAYS:
        return True
    return bool(sys.stdout is not None and hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
                and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb")


def enabled() -> bool:
    global _enabled
    if _enabled is None:
        _enabled = _decide()
        if _enabled:
            import colorama
            colorama.just_fix_windows_console()
    return _enabled


def bold(text: str) -> str:
    if not enabled():
        return text
    import colorama
    return f"{colorama.Style.BRIGHT}{text}{colorama.Style.RESET_ALL}"


def red(text: str) -> str:
    if not enabled():
        return text
    import colorama
    return f"{colorama.Fore.RED}{text}{colorama.Style.RESET_ALL}"
