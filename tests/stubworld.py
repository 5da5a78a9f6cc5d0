"""The installed hook stub run for real (tests of its fast path): a clone's stub rendered from
hooks/hook.sh (Claude Code's values) around a helper that logs each start, run by sh or dash as Claude Code
runs it, with the environment Claude Code gives a hook (CLAUDE_PID, CLAUDE_CODE_SESSION_ID)."""

import json
import os
import shutil
import subprocess
import time

import hermetic
from helpers import context_of, run_cli
from install_fixtures import CONSOLE_SCRIPT

SHELLS = [s for s in ("sh", "dash", "bash") if shutil.which(s)]


class _LoggedStub:
    """A client's stub installed as `hooks/<name>` in the clone, rendered around a helper that
    appends a line to `self.log` at each start and then runs the real console script. The
    subclass sets `self.clone` and `self.session` and names the launch's `key`."""

    def _install(self, name, render_stub):
        hooks = self.clone.mail_root / "hooks"
        hooks.mkdir(parents=True, exist_ok=True)
        self.log = self.clone.base / "helper-starts.log"
        helper = self.clone.base / "logging-helper"
        helper.write_text(f"#!/bin/sh\necho \"$*\" >> '{self.log}'\nexec '{CONSOLE_SCRIPT}' \"$@\"\n")
        helper.chmod(0o700)
        self.path = hooks / name
        self.path.write_text(render_stub(str(helper)))
        self.path.chmod(0o700)

    @property
    def stamp(self):
        return self.clone.mail_root / "fast" / self.key

    def starts(self):
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


class Stub(_LoggedStub):
    def __init__(self, clone, worktree, session="s-fast"):
        from git_korus_mail.clients.claude import stub as claude_stub
        self.clone, self.cwd, self.session = clone, worktree, session
        self._install("claude-hook", claude_stub.render_stub)

    @property
    def key(self):
        return f"{self.session}@{os.getpid()}"  # conftest names this pytest process as CLAUDE_PID

    def run(self, event, shell="sh", env=None, session=None):
        """(parsed answer or None, whether the helper started) for one event through the stub."""
        payload = json.dumps(hermetic.payload(event, session or self.session, self.cwd))
        full = dict(os.environ, CLAUDE_CODE_SESSION_ID=session or self.session)
        full.update(env or {})
        before = self.starts()
        proc = subprocess.run([shell, str(self.path), event], input=payload, capture_output=True, text=True,
                              cwd=self.cwd, env=full)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.strip()
        return (json.loads(out) if out else None), self.starts() > before


def send(clone, text, to="web"):
    run_cli("send", "--to", to, "--", text, cwd=clone.main, check=True)


def shown_at_next_tool_call(stub, text, shell=None):
    """The next tool call through `stub` (Claude Code's Stub or a CodexLaunch; `shell`, else the
    stub's own) starts the drain, and its answer shows `text`."""
    answer, started = stub.run("PostToolUse", shell) if shell else stub.run("PostToolUse")
    assert started and text in context_of(answer)


def new_mail_is_shown_at_the_next_tool_call(stub, clone, shell):
    """A stamped launch answers a tool call with nothing new in sh; mail sent after that is shown
    at the very next one (tests/test_fastpath.py and test_fastpath_codex.py, one rule)."""
    stub.run("PostToolUse", shell)
    assert stub.run("PostToolUse", shell) == (None, False)
    send(clone, "second")
    shown_at_next_tool_call(stub, "second", shell)


def same_instant_mail_is_shown_at_the_next_event(stub, clone):
    """An inbox changed within MARGIN seconds of the look is never stamped, so a message that
    lands in the same second (or nanosecond) as that change cannot hide behind equal mtimes."""
    inbox = inbox_of(clone, clone.web)
    for ns in (0, 900_000_000):
        # a last change that is not MARGIN seconds before any look this test can make, however
        # slow the machine: its second is a few seconds ahead (a whole second, or within one)
        t = (int(time.time()) + 5) * 1_000_000_000 + ns
        os.utime(inbox, ns=(t, t))
        assert stub.run("PostToolUse")[1]
        assert not os.path.lexists(stub.stamp)
        send(clone, f"same instant {ns}")
        os.utime(inbox, ns=(t, t))  # the new link carries the very same mtime
        shown_at_next_tool_call(stub, f"same instant {ns}")


def inbox_of(clone, worktree):
    from git_korus_mail.core import keys
    return clone.mail_root / "box" / keys.key_for(str(worktree)).name / "inbox"


def age(path, seconds=10.0):
    """Date the last change of `path` `seconds` back (as if it had changed then)."""
    t = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(t, t))
    return t


class CodexLaunch(_LoggedStub):
    """One launch of Codex as its stub's fast path meets it (docs/HOOKS.md, "Codex's key: the
    payload's head"): a copy of bash named `codex` (what clients/codex/launch.py proves) that
    holds the session's transcript open and runs each hook event's stub as its own child, the
    payload written into a pipe as compact JSON with session_id first, as Codex 0.171.0 writes it.
    The stub is Codex's, rendered from hooks/hook.sh around a helper that logs each start."""

    def __init__(self, clone, worktree, session="019a2f00-0000-7000-8000-00000000c0de", shell="sh", tmp=None):
        from git_korus_mail.clients.codex import stub as codex_stub
        self.clone, self.cwd, self.session, self.shell = clone, worktree, session, shell
        self.tmp = tmp or clone.base
        self._install("codex-hook", codex_stub.render_stub)
        codex = self.tmp / "bin" / "codex"
        if not codex.exists():
            codex.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(shutil.which("bash"), codex)
        self.transcript = self.tmp / f"rollout-{session}.jsonl"
        self.transcript.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX"))}
        env["T"] = str(self.transcript)
        # each line read is one command; its status is said back as one line
        script = 'exec 9<"$T"\nwhile IFS= read -r line; do eval "$line"; echo "rc=$?"; done\n'
        self.proc = subprocess.Popen([str(codex), "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=worktree, env=env)
        self.n = 0

    @property
    def pid(self):
        return self.proc.pid

    @property
    def key(self):
        return f"{self.session}@{self.proc.pid}"

    def payload(self, event, session=None, **extra):
        p = {"session_id": session or self.session, "transcript_path": str(self.transcript),
             "cwd": str(self.cwd), "hook_event_name": event, "model": "m", "permission_mode": "default"}
        if event == "SessionStart":
            p["source"] = "startup"
        if event == "Stop":
            p.update(stop_hook_active=False, last_assistant_message="done")
        p.update(extra)
        return json.dumps(p, separators=(",", ":"))

    def run(self, event, shell=None, session=None, raw=None, **extra):
        """(parsed answer or None, whether the helper started) for one event through the stub,
        run by this launch's process with the payload on a pipe."""
        self.n += 1
        src, out, err = (self.tmp / f"codex-{self.n}.{x}" for x in ("in", "out", "err"))
        src.write_text(raw if raw is not None else self.payload(event, session, **extra))
        before = self.starts()
        self.proc.stdin.write(f"cat '{src}' | {shell or self.shell} '{self.path}' {event} >'{out}' 2>'{err}'\n")
        self.proc.stdin.flush()
        said = self.proc.stdout.readline()
        assert said == "rc=0\n", (said, err.read_text())
        text = out.read_text().strip()
        return (json.loads(text) if text else None), self.starts() > before

    def sh(self, line):
        """Run one line of shell in this launch's process (an export, a cd); its status."""
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def start(self, event, env="", **extra):
        """Start one event through the stub in the background (still this process's child, as
        Codex runs it), with `env` (`NAME=value ...`) for it; `finish()` waits for it."""
        self.n += 1
        src, out, err = (self.tmp / f"codex-{self.n}.{x}" for x in ("in", "out", "err"))
        src.write_text(self.payload(event, **extra))
        assert self.sh(f"cat '{src}' | {env} {self.shell} '{self.path}' {event} >'{out}' 2>'{err}' & bg=$!") == "rc=0\n"
        before = self.starts()

        def finish():
            said = self.sh("wait $bg")
            text = out.read_text().strip()
            return said, (json.loads(text) if text else None), self.starts() > before
        return finish

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
