"""Quoting for /bin/sh: the shell hook commands, stubs and printed advice are run with; how a
command sets its Ctrl-C handler without loading the signal module; and how the script ends the
process of a command its caller waits on (`leave`)."""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn, Union


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


def leave(status: int) -> "NoReturn":
    """End the process with `status`, skipping the interpreter's teardown (freeing every module
    and object: about 3 ms of CPU of a 25-28 ms drain or send, bench/RESULTS.md "h26wake"), for
    the commands whose end someone waits on: the drain (the client waits for the hook before it
    goes on: the woken turn's request, the next tool call) and send, ask and reply (the model's
    tool call returns at their exit). Safe for them because every file they write is written with plain syscalls (the store's
    file writers and journal): nothing waits in a buffer but stdout and stderr, flushed here, and the
    atexit handlers (store/life.py's release, weakref finalizers) still run. Only the script calls
    it (scripts/git-korus-mail): a command run inside another Python process returns instead."""
    import atexit
    import os
    import sys
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: the output is lost either way, and the drain decided with that known
    atexit._run_exitfuncs()
    os._exit(status)
