"""A real terminal for a CLI's terminal UI: one tmux server per test (its own socket) and one
pane that stays when its program ends (remain-on-exit), so a test never types into a pane that
is already gone, and a failure shows the program's last screen and exit status rather than
tmux's "can't find pane" (CI run 14: the Gemini test's `send-keys` met a pane that had closed).

    pane = Pane.start(sock, "gemini -m x", cwd=worktree)          # or prefix=("unshare", "-n")
    pane.wait_for("Type your message")       # AssertionError with the last screen when it never comes
    pane.keys("hello"); pane.keys("Enter")   # refuses (with the last screen) once the program ended
    status = pane.wait_dead(30)               # the program's exit status
    pane.kill()
"""

from __future__ import annotations

import subprocess
import time


UNKNOWN = -1000  # Pane.dead(): ended, with no status known (yet)


class Pane:
    def __init__(self, sock: str, target: str):
        self.sock = sock
        self.target = target

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True, check=check)

    @classmethod
    def start(cls, sock: str, command: str, cwd, width: int = 150, height: int = 40, target: str = "t",
              prefix: tuple = ()) -> "Pane":
        # remain-on-exit is set before the session exists (one tmux command line, run in order),
        # so even a program that ends at once leaves its pane and its status behind
        subprocess.run([*prefix, "tmux", "-L", sock, "-f", "/dev/null", "start-server", ";",
                        "set-option", "-g", "remain-on-exit", "on", ";",
                        "new-session", "-d", "-s", target, "-x", str(width), "-y", str(height), "-c", str(cwd),
                        command], check=True, capture_output=True, text=True)
        return cls(sock, target)

    def screen(self) -> str:
        """The visible screen (empty once the server is gone)."""
        return self.tmux("capture-pane", "-p", "-t", self.target, check=False).stdout

    def dead(self) -> "int | None":
        """None while the program runs; once it has ended, its exit status, minus the signal that
        ended it, or UNKNOWN: tmux marks a pane dead when its terminal closes, a moment before it
        has reaped the program (or the tmux server itself is gone)."""
        out = self.tmux("display-message", "-p", "-t", self.target,
                        "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}", check=False)
        if out.returncode != 0:
            return UNKNOWN
        flag, status, signal = (out.stdout.strip().split(":") + ["", ""])[:3]
        if flag != "1":
            return None
        return int(status) if status else -int(signal) if signal else UNKNOWN

    def last_screen(self) -> str:
        """What a failure should show: the screen with the lines scrolled above it (a dead pane's
        "Pane is dead" line pushes the last frame up into the history)."""
        out = self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", self.target, check=False).stdout
        return "\n".join(out.rstrip().splitlines()[-60:])

    def why(self, what: str) -> str:
        """`what` went wrong, with the program's state and its last screen (for an AssertionError)."""
        status = self.dead()
        state = ("running" if status is None else "ended, its status unknown" if status == UNKNOWN
                 else f"ended by signal {-status}" if status < 0 else f"ended with status {status}")
        return f"{what} (the program {state}); its last screen:\n{self.last_screen()}"

    def wait_for(self, needle: str, timeout: float = 30.0) -> str:
        """The screen, once `needle` is on it; fails early when the program ends without it."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if needle in screen:
                return screen
            if self.dead() is not None:
                raise AssertionError(self.why(f"{needle!r} never came"))
            if time.monotonic() > deadline:
                raise AssertionError(self.why(f"{needle!r} not on the screen within {timeout} s"))
            time.sleep(0.1)

    def keys(self, *keys: str, running: bool = True) -> None:
        """send-keys into the live program; a program that already ended is a failure, said with
        its last screen (never tmux's bare "can't find pane"). running=False: keys that may meet
        a program on its way out (a second C-c); the dead pane stays, so they land nowhere."""
        if running and self.dead() is not None:
            raise AssertionError(self.why(f"cannot type {keys!r}"))
        self.tmux("send-keys", "-t", self.target, *keys, check=running)

    def wait_dead(self, timeout: float = 30.0, reaped: float = 2.0) -> int:
        """Once the program has ended: its exit status (or minus its signal), or UNKNOWN when
        tmux has not said it within `reaped` seconds of marking the pane dead (seen under load
        with tmux 3.3a: "pane_dead" with neither status nor signal for 15 s and more)."""
        deadline = time.monotonic() + timeout
        ended = None
        while True:
            status = self.dead()
            if status is not None:
                ended = time.monotonic() if ended is None else ended
                if status != UNKNOWN or time.monotonic() - ended > reaped:
                    return status
            elif time.monotonic() > deadline:
                raise AssertionError(self.why(f"still running after {timeout} s"))
            time.sleep(0.1)

    def kill(self) -> None:
        self.tmux("kill-server", check=False)
