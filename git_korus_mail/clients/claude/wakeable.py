"""Whether a Claude Code process can be woken by an async-rewake hook (docs/HOOKS.md, "The
wake-up tier"), as observed on 2.1.332:

- the terminal UI can (CLAUDE_CODE_ENTRYPOINT=cli; its command line has no -p/--print);
- `-p --input-format stream-json` can, while its input stays open;
- `-p "prompt"` (text input) cannot, and waits for the hook before it exits: a watcher there
  must end at once, or `-p` would hang for the watcher's whole reach.

The hook environment is the same for `-p` and stream-json (entrypoint sdk-cli, attended 0), so
the process's own command line (/proc/<pid>/cmdline) tells them apart. Anything unreadable or
unexpected reads as "cannot be woken": a missed wake leaves the mail for the next prompt, a
wrong guess would hang `-p`.
"""

import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Callable, List, Mapping, Optional, Tuple


def _cmdline(pid: int) -> "Optional[List[str]]":
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(256 * 1024)
    except OSError:
        return None
    return [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0")]


def mode_of(argv: "List[str]") -> str:
    """"terminal", "stream" (-p with stream-json input) or "print" (-p with text input)."""
    args = argv[1:]
    printing = any(a in ("-p", "--print") for a in args)
    stream = "--input-format=stream-json" in args or any(
        a == "--input-format" and nxt == "stream-json" for a, nxt in zip(args, args[1:]))
    if stream:
        return "stream"
    return "print" if printing else "terminal"


def wake_facts(environ: "Mapping[str, str]", pid: int) -> "Tuple[Optional[str], Callable[[], bool]]":
    """(why this process cannot be woken, or None when it can; a check that it still can)."""
    argv = _cmdline(pid)
    if not argv or not argv[0]:
        return f"the command line of Claude Code's process {pid} cannot be read", lambda: False
    mode = mode_of(argv)
    if mode == "print":
        return "claude -p with a text prompt cannot be woken (it would wait for the watcher to exit)", lambda: False
    if mode == "stream":
        return None, lambda: not input_closed(pid)
    return None, lambda: True


def input_closed(pid: int) -> bool:
    """True when `pid`'s stdin is a pipe whose writers have all gone (a stream-json session whose
    input was closed: it ends once its hooks do, and can no longer be woken). Only polled, never
    read. Anything else (a socket, a terminal, no access) is not known to be closed."""
    import select
    try:
        fd = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        import stat
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        p = select.poll()
        p.register(fd, 0)  # POLLHUP and POLLERR are reported whatever is asked for
        return any(ev & (select.POLLHUP | select.POLLERR) for _fd, ev in p.poll(0))
    finally:
        os.close(fd)
