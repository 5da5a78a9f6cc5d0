"""Colour for people, never for pipes: only on a tty and never with NO_COLOR."""

import os
import sys

_enabled: "bool | None" = None


def enabled() -> bool:
    global _enabled
    if _enabled is None:
        _enabled = bool(sys.stdout is not None and hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
                    and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb")
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
