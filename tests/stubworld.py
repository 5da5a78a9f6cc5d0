"""The installed hook stub run for real (tests of its fast path): a clone's stub rendered from
hooks/hook.sh (Claude Code's values) around a helper that logs each start, run by sh or dash as Claude Code
runs it, with the environment Claude Code gives a hook (CLAUDE_PID, CLAUDE_CODE_SESSION_ID)."""

import json
import os
import shutil
import subprocess
import time

import hermetic
from install_fixtures import CONSOLE_SCRIPT

SHELLS = [s for s in ("sh", "dash", "bash") if shutil.which(s)]


class Stub:
    def __init__(self, clone, worktree, session="s-fast"):
        from git_korus_mail.clients.claude import stub as claude_stub
        self.clone, self.cwd, self.session = clone, worktree, session
        hooks = clone.mail_root / "hooks"
        hooks.mkdir(parents=True, exist_ok=True)
        self.log = clone.base / "helper-starts.log"
        helper = clone.base / "logging-helper"
        helper.write_text(f"#!/bin/sh\necho \"$*\" >> '{self.log}'\nexec '{CONSOLE_SCRIPT}' \"$@\"\n")
        helper.chmod(0o700)
        self.path = hooks / "claude-hook"
        self.path.write_text(claude_stub.render_stub(str(helper)))
        self.path.chmod(0o700)

    @property
    def key(self):
        return f"{self.session}@{os.getpid()}"  # conftest names this pytest process as CLAUDE_PID

    @property
    def stamp(self):
        return self.clone.mail_root / "fast" / self.key

    def starts(self):
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

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


def inbox_of(clone, worktree):
    from git_korus_mail.core import keys
    return clone.mail_root / "box" / keys.key_for(str(worktree)).name / "inbox"


def age(path, seconds=10.0):
    """Date the last change of `path` `seconds` back (as if it had changed then)."""
    t = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(t, t))
    return t
