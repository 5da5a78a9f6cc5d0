"""Facts Codex's fast path rests on (docs/HOOKS.md, "Codex's key: the payload's head"), under the real
Codex CLI in its default sandbox: a hook that exits without reading its payload, even a
PostToolUse payload carrying a 400 KB tool output, completes and the run goes on; and in `codex
exec` the hook's parent is the `codex` process itself (no shell between)."""

from __future__ import annotations

import pytest

from codexmock import shell, text as codex_text
from test_codex_e2e import cli, codex_env
from test_codex_sandbox_e2e import world  # noqa: F401 (a fixture; `outside` is conftest.py's)

pytestmark = pytest.mark.e2e


def test_a_hook_that_leaves_its_payload_unread_completes_and_its_parent_is_codex(world, codexmock, codex_bin):  # noqa: F811
    clone, codex, home = world
    env = codex_env(home, codex_bin)
    cli("install", "--client", "codex", cwd=clone.main, env=env)
    stub = clone.mail_root / "hooks" / "codex-hook"
    log = clone.base / "hook.log"
    # the wired stub replaced by one that never reads stdin and logs its parent's name
    stub.write_text(f"#!/bin/sh\necho \"$1 $(cat /proc/$PPID/comm)\" >> '{log}'\nexit 0\n")
    codexmock.set_script([shell("head -c 400000 /dev/zero | tr '\\\\0' x; echo"), shell("echo second"),
                          codex_text("done")])
    run = codex.run("work", cwd=clone.main, sandbox=None).check()
    assert len(codexmock.agent_requests()) == 3
    assert "hook: PostToolUse Completed" in run.stderr
    lines = log.read_text().splitlines()
    assert lines == ["SessionStart codex", "UserPromptSubmit codex", "PostToolUse codex", "PostToolUse codex",
                     "Stop codex", "SessionEnd codex"], lines
    cli("uninstall", cwd=clone.main, env=env)
