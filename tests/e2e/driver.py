"""Run the real ``claude`` CLI against the mock Messages API (stdlib only).

    runner = Claude(claude_bin, mockapi, config_dir)      # or config_dir=None: fresh temp dir
    run = runner.run("say hi", cwd=proj)                  # claude -p ... --output-format json
    run.rc, run.data, run.result, run.session_id, run.stderr
    runner.run("again", cwd=proj, resume=run.session_id)  # --resume <sid> (same config dir!)

    with runner.stream(cwd=proj) as s:                    # live stream-json session
        s.send("one"); s.read_result()
        s.send("two"); s.read_result()
    # leaving the block closes stdin and waits for exit

    proc = runner.start("say hi", cwd=proj)               # background -p run
    proc.wait_for_path(proj / "started", timeout=20)      # e.g. a SessionStart hook touched it
    proc.kill()                                           # SIGKILL its process group (+ descendants)
    # or in one call: runner.start_and_kill_after("say hi", proj, proj / "started")
    # A stream session runs SessionStart before any user message, so
    # `s = runner.stream(cwd=proj); s.wait_for_path(...); s.kill()` works too.

    with runner.terminal(cwd=proj, resume=sid) as t:      # the interactive terminal UI, in a pty
        t.wait_for_text("? for shortcuts"); t.type("hi\r")  # (trust and API-key dialogs pre-accepted)
        t.kill()

Facts (Claude Code 2.1.332): a `-p` run against the mock takes ~0.5-0.8 s;
hook commands run as `/bin/sh -c CMD` (dash on Debian: no bash-isms, also
with `"shell": "bash"` or SHELL=/bin/bash) in a session/process group of
their own, hence the descendant walk in kill().

Every process runs in its own process group (``start_new_session``) so that a
timeout or a kill leaves nothing behind. The environment is the caller's minus
any ``CLAUDE*`` / ``ANTHROPIC*`` variables (the tests may themselves run inside
Claude Code), plus what the CLI needs to work offline against the mock.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import queue
import re
import signal
import struct
import subprocess
import termios
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

DEFAULT_TIMEOUT = 60.0

# Variables of an enclosing Claude Code session (or a user's shell) that must
# not leak into the runs under test.
_SCRUB_PREFIXES = ("CLAUDE", "ANTHROPIC", "AI_AGENT", "OTEL_")


def claude_env(base_url: str, config_dir: str | os.PathLike, extra: Mapping[str, str] | None = None,
               base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for one offline ``claude`` run against ``base_url``."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(_SCRUB_PREFIXES)}
    env.update({
        "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
        "ANTHROPIC_BASE_URL": base_url,
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
        "IS_SANDBOX": "1",  # --dangerously-skip-permissions as root
        "NO_COLOR": "1",
    })
    if extra:
        env.update(extra)
    return env


class ClaudeTimeout(AssertionError):
    """A claude run did not finish in time (its process group was killed)."""


@dataclass
class ClaudeRun:
    argv: list[str]
    cwd: str
    config_dir: str
    rc: int
    stdout: str
    stderr: str
    duration: float
    data: Any = None  # the parsed --output-format json object (None if unparsable)

    @property
    def result(self) -> str | None:
        return self.data.get("result") if isinstance(self.data, dict) else None

    @property
    def session_id(self) -> str | None:
        return self.data.get("session_id") if isinstance(self.data, dict) else None

    @property
    def is_error(self) -> bool:
        return not isinstance(self.data, dict) or bool(self.data.get("is_error"))

    def describe(self) -> str:
        return (f"claude exited rc={self.rc} after {self.duration:.1f}s\n"
                f"argv: {self.argv}\ncwd: {self.cwd}\n"
                f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-4000:]}")

    def check(self) -> "ClaudeRun":
        """Assert rc 0 and a successful JSON result; return self."""
        assert self.rc == 0 and not self.is_error, self.describe()
        return self


def parse_json_output(stdout: str) -> Any:
    try:
        return json.loads(stdout)
    except ValueError:
        pass
    for line in reversed(stdout.splitlines()):  # tolerate noise before the object
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


# --------------------------------------------------------------------------
# process-group helpers


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def descendants(pid: int) -> list[int]:
    """All live descendants of ``pid`` (Linux /proc; [] elsewhere)."""
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def group_members(pgid: int) -> list[int]:
    """Live processes (not zombies) in process group ``pgid`` (Linux /proc)."""
    out = []
    for d in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(d))
    return out


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL, tree: bool = True) -> None:
    """Signal ``proc``'s process group (it leads one) and, with ``tree``, every
    descendant (hooks may run in process groups of their own)."""
    pids = descendants(proc.pid) if tree else []
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for p in pids:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


# --------------------------------------------------------------------------
# background processes


class _Pump(threading.Thread):
    """Read a text stream line by line into a list (and optionally a queue)."""

    def __init__(self, stream, q: "queue.Queue[str | None] | None" = None):
        super().__init__(daemon=True)
        self.stream, self.q = stream, q
        self.lines: list[str] = []
        self.start()

    def run(self) -> None:
        try:
            for line in iter(self.stream.readline, ""):
                self.lines.append(line)
                if self.q is not None:
                    self.q.put(line)
        except (ValueError, OSError):
            pass
        finally:
            if self.q is not None:
                self.q.put(None)

    @property
    def text(self) -> str:
        return "".join(self.lines)


class ClaudeProcess:
    """A ``claude`` process running in the background (its own process group)."""

    def __init__(self, argv: list[str], cwd: str, env: dict, config_dir: str, stdin_pipe: bool = False):
        self.argv, self.cwd, self.config_dir = argv, cwd, config_dir
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, text=True, encoding="utf-8", errors="replace",
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        self._q: "queue.Queue[str | None]" = queue.Queue()
        self._out = _Pump(self.proc.stdout, self._q)
        self._err = _Pump(self.proc.stderr)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def stdout(self) -> str:
        return self._out.text

    @property
    def stderr(self) -> str:
        return self._err.text

    def poll(self) -> int | None:
        return self.proc.poll()

    def describe(self) -> str:
        return (f"claude pid {self.pid} rc={self.proc.poll()} after {time.monotonic() - self.started:.1f}s\n"
                f"argv: {self.argv}\ncwd: {self.cwd}\n"
                f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-4000:]}")

    def wait_until(self, pred: Callable[[], bool], timeout: float = 30.0, what: str = "condition",
                   interval: float = 0.02) -> None:
        """Poll ``pred`` until true; raise ClaudeTimeout on timeout, or if the
        process exits first (one last check is made after the exit)."""
        deadline = time.monotonic() + timeout
        while True:
            if pred():
                return
            if self.proc.poll() is not None:
                if pred():
                    return
                raise ClaudeTimeout(f"claude exited before {what}\n" + self.describe())
            if time.monotonic() > deadline:
                raise ClaudeTimeout(f"timed out after {timeout}s waiting for {what}\n" + self.describe())
            time.sleep(interval)

    def wait_for_path(self, path: str | os.PathLike, timeout: float = 30.0) -> None:
        p = Path(path)
        self.wait_until(p.exists, timeout, what=f"{p} to exist")

    def kill(self, tree: bool = True) -> int:
        """SIGKILL the process group (and, with ``tree``, all descendants); reap."""
        kill_group(self.proc, signal.SIGKILL, tree=tree)
        rc = self.proc.wait(10)
        self._out.join(5)
        self._err.join(5)
        return rc

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ClaudeTimeout(f"claude did not exit within {timeout}s\n" + self.describe()) from None
        self._out.join(5)
        self._err.join(5)
        return rc

    def finish(self, timeout: float = DEFAULT_TIMEOUT) -> ClaudeRun:
        """Wait for a ``-p --output-format json`` process and parse its result."""
        rc = self.wait(timeout)
        return ClaudeRun(self.argv, self.cwd, self.config_dir, rc, self.stdout, self.stderr,
                         time.monotonic() - self.started, parse_json_output(self.stdout))

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        else:  # the leader is gone; its group may not be
            kill_group(self.proc, signal.SIGKILL, tree=False)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if f:
                    f.close()
            except OSError:
                pass

    def __enter__(self) -> "ClaudeProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cleanup()


class StreamSession(ClaudeProcess):
    """A live ``--input-format stream-json --output-format stream-json`` session.

    stdin stays open until ``close()``; ``send()`` queues a user message and
    ``read_result()`` returns the next ``{"type":"result"}`` line. All parsed
    stdout lines are kept in ``messages``.
    """

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, stdin_pipe=True, **kw)
        self.messages: list[dict] = []
        self.session_id: str | None = None

    def send(self, text: str | list) -> None:
        msg = {"type": "user", "message": {"role": "user", "content": text}}
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as e:
            raise ClaudeTimeout(f"cannot send to claude ({e})\n" + self.describe()) from None

    def read_line(self, timeout: float = DEFAULT_TIMEOUT) -> dict | None:
        """Next parsed stdout line; None at EOF. Non-JSON lines are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ClaudeTimeout(f"no stdout line within {timeout}s\n" + self.describe())
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self._q.put(None)  # stay at EOF
                return None
            try:
                d = json.loads(line)
            except ValueError:
                continue
            self.messages.append(d)
            if isinstance(d, dict) and d.get("session_id"):
                self.session_id = d["session_id"]
            return d

    def read_until(self, pred: Callable[[dict], bool], timeout: float = DEFAULT_TIMEOUT,
                   what: str = "a matching line") -> dict:
        deadline = time.monotonic() + timeout
        while True:
            d = self.read_line(max(0.0, deadline - time.monotonic()) or 0.001)
            if d is None:
                raise ClaudeTimeout(f"claude's stdout ended before {what}\n" + self.describe())
            if pred(d):
                return d

    def read_result(self, timeout: float = DEFAULT_TIMEOUT) -> dict:
        return self.read_until(lambda d: d.get("type") == "result", timeout, "a result line")

    def results(self) -> list[dict]:
        return [d for d in self.messages if d.get("type") == "result"]

    def close(self, timeout: float = 30.0) -> int:
        """Close stdin and wait for exit (killing the group on timeout)."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        rc = self.wait(timeout)
        while True:  # parse what is left
            try:
                if self.read_line(0.5) is None:
                    break
            except ClaudeTimeout:
                break
        return rc

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.proc.poll() is None and exc[0] is None:
                self.close()
        finally:
            self.cleanup()


class TerminalSession(ClaudeProcess):
    """The interactive terminal UI, run in a pseudo-terminal as a person's terminal would.

    Everything it draws is kept in ``output`` (raw) and ``screen_text()`` (escape sequences
    removed); ``type()`` writes keystrokes. Dialogs the first start of a project shows (folder
    trust, the custom API key) are accepted beforehand in the config dir (``accept_dialogs``),
    since no hook runs before they are answered."""

    _ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")

    def __init__(self, argv: list[str], cwd: str, env: dict, config_dir: str, rows: int = 40, cols: int = 120):
        self.argv, self.cwd, self.config_dir = argv, cwd, config_dir
        self.started = time.monotonic()
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                                         start_new_session=True, close_fds=True)
        finally:
            os.close(slave)
        self._master = master
        self._chunks: list[bytes] = []
        self._q: "queue.Queue[str | None]" = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self._master, 65536)
            except OSError:  # EIO once the terminal's last holder is gone
                break
            if not data:
                break
            self._chunks.append(data)

    @property
    def output(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")

    _MOVES = re.compile(r"\x1b\[(\d*)([CGB])")

    def screen_text(self) -> str:
        """The output without escape sequences. The UI draws blanks by moving the cursor:
        a move right or to a column becomes spaces and a move down a newline, so words stay apart."""
        def blank(m: "re.Match[str]") -> str:
            n = int(m.group(1) or 1)
            return {"C": " " * n, "G": " ", "B": "\n" * n}[m.group(2)]
        return self._ANSI.sub("", self._MOVES.sub(blank, self.output))

    @property
    def stdout(self) -> str:
        return self.screen_text()

    @property
    def stderr(self) -> str:
        return "(a terminal: stderr is in the screen text)"

    def type(self, text: str) -> None:
        os.write(self._master, text.encode())

    def wait_for_text(self, needle: str, timeout: float = 30.0) -> None:
        self.wait_until(lambda: needle in self.screen_text(), timeout, what=f"{needle!r} on the screen")

    def kill(self, tree: bool = True) -> int:
        kill_group(self.proc, signal.SIGKILL, tree=tree)
        rc = self.proc.wait(10)
        self._reader.join(5)
        return rc

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ClaudeTimeout(f"claude did not exit within {timeout}s\n" + self.describe()) from None
        self._reader.join(5)
        return rc

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        else:
            kill_group(self.proc, signal.SIGKILL, tree=False)
        if self._master >= 0:
            try:
                os.close(self._master)
            except OSError:
                pass
            self._master = -1


def accept_dialogs(config_dir: str | os.PathLike, project: str | os.PathLike, api_key: str) -> None:
    """Pre-answer what the terminal UI asks before it runs any hook (Claude Code 2.1.332):
    onboarding, trust for ``project`` (``projects[<dir>].hasTrustDialogAccepted``, see the
    hooks reference, section 7) and the custom API key (its last 20 characters approved)."""
    path = Path(config_dir) / ".claude.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data["hasCompletedOnboarding"] = True
    data.setdefault("theme", "dark")
    responses = data.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
    if api_key[-20:] not in responses.setdefault("approved", []):
        responses["approved"].append(api_key[-20:])
    for key in {str(project), os.path.realpath(project)}:
        proj = data.setdefault("projects", {}).setdefault(key, {})
        proj["hasTrustDialogAccepted"] = True
        proj["hasCompletedProjectOnboarding"] = True
    path.write_text(json.dumps(data, indent=2))


# --------------------------------------------------------------------------
# the runner


class Claude:
    """Runs ``claude_bin`` against a mock API (a ``MockAPI`` or a base URL).

    ``config_dir`` is the CLAUDE_CONFIG_DIR shared by all runs of this runner
    (so ``--resume`` finds the transcript); None makes a fresh temp dir.
    """

    def __init__(self, claude_bin: str | os.PathLike, api: Any, config_dir: str | os.PathLike | None = None,
                 env: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT,
                 skip_permissions: bool = False):
        self.claude_bin = str(claude_bin)
        # False: Claude Code's own default permission mode (no flag), as a person runs it: a Bash
        # call no allow rule covers is refused in -p. True: --dangerously-skip-permissions, the
        # permissive second test, only where a test asks for it (docs/CLIENTS.md, "The modes each
        # client is tested in").
        self.skip_permissions = skip_permissions
        self.api = api
        if config_dir is None:
            config_dir = tempfile.mkdtemp(prefix="korus-e2e-claude-config-")
        Path(config_dir).mkdir(parents=True, exist_ok=True)
        self.config_dir = str(config_dir)
        self.extra_env = dict(env or {})
        self.timeout = timeout
        self._procs: list[ClaudeProcess] = []

    @property
    def base_url(self) -> str:
        return self.api if isinstance(self.api, str) else self.api.base_url

    def allow_mail_commands(self, rule: str = "Bash(git korus-mail:*)") -> Path:
        """The person's own choice, which install tells and never makes: the allow rule that lets
        the model run `git korus-mail` in Claude Code's default permission mode, in the user's
        settings ($CLAUDE_CONFIG_DIR/settings.json), merged with what is there."""
        path = Path(self.config_dir) / "settings.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data.setdefault("permissions", {}).setdefault("allow", []).append(rule)
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return claude_env(self.base_url, self.config_dir, {**self.extra_env, **(extra or {})})

    def argv(self, prompt: str | None, *, resume: str | None = None, stream: bool = False,
             args: Iterable[str] = ()) -> list[str]:
        argv = [self.claude_bin, "-p"]
        if prompt is not None:
            argv.append(prompt)
        if self.skip_permissions:
            argv.append("--dangerously-skip-permissions")
        if stream:
            argv += ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
        else:
            argv += ["--output-format", "json"]
        if resume:
            argv += ["--resume", resume]
        return argv + list(args)

    def run(self, prompt: str, cwd: str | os.PathLike, *, resume: str | None = None, args: Iterable[str] = (),
            env: Mapping[str, str] | None = None, timeout: float | None = None, check: bool = False) -> ClaudeRun:
        """``claude -p PROMPT [--dangerously-skip-permissions] --output-format json``."""
        proc = self.start(prompt, cwd, resume=resume, args=args, env=env)
        try:
            run = proc.finish(timeout or self.timeout)
        finally:
            proc.cleanup()
        return run.check() if check else run

    def resume(self, session_id: str, prompt: str, cwd: str | os.PathLike, **kw: Any) -> ClaudeRun:
        return self.run(prompt, cwd, resume=session_id, **kw)

    def start(self, prompt: str, cwd: str | os.PathLike, *, resume: str | None = None, args: Iterable[str] = (),
              env: Mapping[str, str] | None = None) -> ClaudeProcess:
        """Start a ``-p`` run in the background; see ClaudeProcess."""
        p = ClaudeProcess(self.argv(prompt, resume=resume, args=args), str(cwd), self.env(env), self.config_dir)
        self._procs.append(p)
        return p

    def stream(self, cwd: str | os.PathLike, *, resume: str | None = None, args: Iterable[str] = (),
               env: Mapping[str, str] | None = None) -> StreamSession:
        """Start a live stream-json session (stdin open); use as a context manager."""
        s = StreamSession(self.argv(None, resume=resume, stream=True, args=args), str(cwd), self.env(env),
                          self.config_dir)
        self._procs.append(s)
        return s

    def terminal(self, cwd: str | os.PathLike, *, resume: str | None = None, args: Iterable[str] = (),
                 env: Mapping[str, str] | None = None) -> TerminalSession:
        """Start the interactive terminal UI in a pty (``claude [--resume SID]``), its dialogs
        pre-accepted for ``cwd``; use as a context manager."""
        run_env = self.env({"TERM": "xterm-256color", **(env or {})})
        accept_dialogs(self.config_dir, cwd, run_env["ANTHROPIC_API_KEY"])
        argv = [self.claude_bin] + (["--resume", resume] if resume else []) + list(args)
        t = TerminalSession(argv, str(cwd), run_env, self.config_dir)
        self._procs.append(t)
        return t

    def start_and_kill_after(self, prompt: str, cwd: str | os.PathLike, path: str | os.PathLike,
                             timeout: float = 30.0, tree: bool = True, **kw: Any) -> ClaudeProcess:
        """Start ``claude -p PROMPT``, wait until ``path`` exists (e.g. written by
        a SessionStart hook), then SIGKILL its process group at once: a
        "discarded" session. Returns the reaped process (rc is -9)."""
        p = self.start(prompt, cwd, **kw)
        try:
            p.wait_for_path(path, timeout)
        except BaseException:
            p.cleanup()
            raise
        p.kill(tree=tree)
        return p

    def cleanup(self) -> None:
        """Kill whatever this runner started and is still running."""
        for p in self._procs:
            p.cleanup()
        self._procs.clear()


def run_claude(claude_bin: str | os.PathLike, prompt: str, cwd: str | os.PathLike, api: Any,
               config_dir: str | os.PathLike | None = None, **kw: Any) -> ClaudeRun:
    """One-shot convenience: ``Claude(claude_bin, api, config_dir).run(prompt, cwd, **kw)``."""
    return Claude(claude_bin, api, config_dir, skip_permissions=True).run(prompt, cwd, **kw)


def write_hooks(project_dir: str | os.PathLike, hooks: Mapping[str, Any], *,
                file: str = "settings.local.json") -> Path:
    """Write ``{"hooks": hooks}`` into ``<project_dir>/.claude/<file>``.

    ``hooks`` maps an event to a command string, a list of command strings, or
    a ready list of matcher groups, e.g. ``{"Stop": "cat > stop.json"}``.
    """
    out: dict[str, Any] = {}
    for event, spec in hooks.items():
        if isinstance(spec, str):
            spec = [spec]
        if spec and all(isinstance(s, str) for s in spec):
            spec = [{"hooks": [{"type": "command", "command": c} for c in spec]}]
        out[event] = spec
    d = Path(project_dir) / ".claude"
    d.mkdir(parents=True, exist_ok=True)
    path = d / file
    path.write_text(json.dumps({"hooks": out}, indent=2) + "\n")
    return path
