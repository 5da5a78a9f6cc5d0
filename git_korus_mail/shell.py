"""Quoting for /bin/sh: the shell hook commands, stubs and printed advice are run with; and
how a command sets its Ctrl-C handler without loading the signal module."""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Callable, Union


def sh_quote(text: str) -> str:
    """Single-quote `text` for /bin/sh, whatever it holds."""
    return "'" + text.replace("'", "'\\''") + "'"


def on_sigint(handler: "Union[Callable[[int, Any], None], str]") -> None:
    """Set SIGINT's handler: a function, or "ignore". Through `_signal`, the C module the signal
    module wraps and the interpreter loads at its start: `import signal` loads enum, functools
    and collections, 4 ms of CPU at the start of every send, ask and reply (issue 26: under load
    each ms of a start is tens of ms of wall time)."""
    import _signal  # type: ignore[import-not-found,unused-ignore]
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN if handler == "ignore" else handler)
