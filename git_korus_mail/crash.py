"""Named crash points for tests: KORUS_MAIL_CRASH_AT=<step> kills the process there.

Each name marks a gap between two state writes. Tests kill at every one and then
check the store's invariants, which is how "never lost, never doubled" is shown
rather than argued.
"""

import os

_AT = os.environ.get("KORUS_MAIL_CRASH_AT")

# Every named step, so tests can iterate over them and a typo fails loudly.
STEPS = (
    "send:tmp-written", "send:linked",
    "show:emitted", "show:marked",
    "stamp:staged", "stamp:linked",
    "consume:claimed", "consume:receipt", "consume:linked-seen", "consume:unlinked-inbox",
    "consume:released",
    "expire:claimed", "expire:linked", "expire:unlinked-inbox",
    "cancel:claimed", "cancel:linked", "cancel:unlinked-inbox",
    "break:judged",
    "forward:claimed", "forward:recorded", "forward:copied", "forward:unlinked",
    "prune:marked", "prune:message", "prune:receipt", "prune:journaled",
    "ask:published", "ask:delivered", "answer:decided", "answer:published",
    "event:claimed", "turn:recorded",
    "reserve:signaled", "release:unlinked", "release:looked", "told:answered",
)


_PAUSE = os.environ.get("KORUS_MAIL_PAUSE_AT")  # "<step>:<path>": tests only (see `_pause`)


def point(step: str) -> None:
    if _PAUSE is not None:
        _pause(step)
    if _AT is not None and _AT == step:
        os.kill(os.getpid(), 9)  # SIGKILL; not via `signal`, whose import pulls enum into the hot path


def _pause(step: str) -> None:
    """KORUS_MAIL_PAUSE_AT=<step>:<path>: at <step>, create <path>.reached and wait until <path>
    exists, so a test can run another process inside this gap, deterministically."""
    assert _PAUSE is not None
    if not _PAUSE.startswith(step + ":"):
        return
    path = _PAUSE[len(step) + 1:]
    import time
    with open(path + ".reached", "w"):
        pass
    while not os.path.exists(path):
        time.sleep(0.01)
