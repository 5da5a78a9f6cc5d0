"""Codex's sh fast path under the real Codex CLI 0.171.0 in its default sandbox (docs/HOOKS.md,
"Codex's key: the payload's head"): tool calls with nothing new start no Python, mail queued
before the run is shown and consumed as before, and a worktree that never got mail starts Python
only where the launch opens and ends. The stub is Codex's own, rendered around a helper that
logs each start (Codex trusts a hook by its command, which does not change)."""

from __future__ import annotations

import os
import time

import pytest

from codexmock import shell, text as codex_text
from test_codex_e2e import HELPER, cli, codex_env
from test_codex_sandbox_e2e import world  # noqa: F401 (a fixture; `outside` is conftest.py's)

pytestmark = pytest.mark.e2e


def logged_stub(clone):
    from git_korus_mail.clients.codex import stub as codex_stub
    log = clone.base / "helper-starts.log"
    helper = clone.base / "logging-helper"
    helper.write_text(f"#!/bin/sh\necho \"$*\" >> '{log}'\nexec '{HELPER}' \"$@\"\n")
    helper.chmod(0o700)
    stub = clone.mail_root / "hooks" / "codex-hook"
    stub.write_text(codex_stub.render_stub(str(helper)))
    return log


def starts(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.parametrize("mail", [True, False], ids=["mail-waiting", "never-got-mail"])
def test_codexs_tool_calls_with_nothing_new_start_no_python(world, codexmock, codex_bin, mail):  # noqa: F811
    clone, codex, home = world
    env = codex_env(home, codex_bin)
    cli("install", "--client", "codex", cwd=clone.main, env=env)
    log = logged_stub(clone)
    if mail:
        cli("send", "--to", str(clone.main), "--", "read me, codex", cwd=clone.web, env=env)
        from git_korus_mail.core import keys
        inbox = clone.mail_root / "box" / keys.key_for(str(clone.main)).name / "inbox"
        t = time.time_ns() - 10 * 10**9  # as if it had come in a while ago: the next show may stamp
        os.utime(inbox, ns=(t, t))
    codexmock.set_script([shell("echo one"), shell("echo two"), shell("echo three"), shell("echo four"),
                          codex_text("done")])
    run = codex.run("work", cwd=clone.main, sandbox=None).check()
    assert run.stderr.count("hook: PostToolUse Completed") == 4, run.stderr
    # SessionStart, UserPromptSubmit, Stop (a shown message is consumed there), SessionEnd; with
    # no mail the Stop is the stub's too (a turn with nothing new): never a PostToolUse
    assert starts(log) == (4 if mail else 3), log.read_text()
    if mail:
        requests = codexmock.agent_requests()
        assert any("read me, codex" in repr(r.items) for r in requests)
        status = cli("status", "--json", cwd=clone.web, env=env).stdout
        assert '"consumed"' in status
    cli("uninstall", cwd=clone.main, env=env)
