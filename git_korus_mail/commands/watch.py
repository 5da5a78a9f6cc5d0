"""`git-korus-mail drain --watch`: the wake-up tier's watcher, run by the stub from the client's
end-of-turn hook entry that install --urgent adds (docs/HOOKS.md, "The wake-up tier").

It says nothing on stdout unless it wakes the session; then one line, `<WAKE_MARK> <text>`,
which the stub turns into the client's wake signal (for Claude Code: the text on stderr and
exit code 2). Any other ending (no launch, a process that cannot be woken, the claim held by
another watcher or taken away, the reach passed, an error) prints nothing and exits 0, so a
watcher that fails can never wake the model.
"""

import os
import sys

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Optional

    # mypy's own (it depends on typing_extensions); never imported at run time, where TypeGuard
    # would need Python 3.10
    from typing_extensions import TypeGuard

    from git_korus_mail.clients.interface import HookProtocol, Wakeable

WAKE_MARK = "korus-mail-wake"  # the stub's word for "exit 2 with the rest of this line"
REACH_ENV = "KORUS_MAIL_WATCH_REACH"  # seconds; tests shorten the reach with it
STUB_ENV = "KORUS_MAIL_STUB"  # the stub that runs this watcher (set by the stub itself)


def serve_watch(client: "HookProtocol", repo: "Optional[str]" = None) -> int:
    import signal
    # a prompt ends the watcher with SIGTERM (store/watch.disarm), after taking its claim away:
    # a normal end, exit 0, and at once, since that prompt waits for this process to be gone
    signal.signal(signal.SIGTERM, lambda _sig, _frame: os._exit(0))
    try:
        text = _watch(client, repo)
    except Exception:  # noqa: BLE001 - a failed watcher stays silent: it must never wake the model
        import traceback
        traceback.print_exc()  # the stub sends stderr nowhere on this path; kept for a hand run
        return 0
    if text:
        sys.stdout.write(f"{WAKE_MARK} {' '.join(text.split())}\n")
        sys.stdout.flush()
        # every file is written (the store writes with plain syscalls): leave now, without the
        # interpreter's teardown, since the session's wake waits for this process to end
        os._exit(0)
    return 0


def _reach() -> float:
    from git_korus_mail.core.wake import REACH
    raw = os.environ.get(REACH_ENV)
    try:
        return min(REACH, max(0.0, float(raw))) if raw else REACH
    except ValueError:
        return REACH


def _watch(client: "HookProtocol", repo: "Optional[str]") -> "Optional[str]":
    if not _wakeable(client):
        return None  # a client without the wake-up tier (docs/CLIENTS.md)
    data = sys.stdin.buffer.read(4 * 1024 * 1024) if sys.stdin is not None else b""
    try:
        payload = client.read_payload(data)
    except client.BadPayload:
        return None
    launch = client.launch_of(os.environ)
    if not launch.known:
        return None
    why, can_wake = client.wake_facts(os.environ, launch.pid)
    if why is not None:
        return None  # e.g. `claude -p "prompt"`: it waits for this hook, so end now
    from git_korus_mail.core import drain_context, wake
    opened = drain_context.open_box(payload.cwd, repo)
    if opened is None:
        return None
    _root, box, _key = opened
    stub = os.environ.get(STUB_ENV)

    def still() -> bool:  # uninstall removes the stub: a watcher armed before must not wake anyone after
        return can_wake() and (not stub or os.path.exists(stub))
    return wake.watch_launch(box, drain_context.session_dir_name(payload.session), launch, reach=_reach(),
                             can_wake=still)


def _wakeable(client: "HookProtocol") -> "TypeGuard[Wakeable]":
    """Whether `client` has the wake-up tier: a client module that offers `wake_facts`."""
    return hasattr(client, "wake_facts")
