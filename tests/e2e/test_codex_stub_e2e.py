"""Codex's stub, the one template (hooks/hook.sh) with Codex's values, under the real Codex CLI in
its DEFAULT sandbox (no -s: read-only in a project nobody trusted), the clone outside /tmp.

Codex's hooks name no session, so its stub has no fast-path key (docs/HOOKS.md, "Codex has no
fast path"): every event runs the drain. What its PostToolUse needs is then what it always got:
a message that lands while a tool call runs is shown at that call's PostToolUse, in the very
next model request, and a tool call with nothing new says nothing."""

from __future__ import annotations

import os
import subprocess

import pytest

from codexmock import shell, text as codex_text
from test_codex_e2e import HELPER, PATH, cli, codex_env
from test_codex_sandbox_e2e import sandbox_of, world  # noqa: F401 (fixtures; `outside` is conftest.py's)

pytestmark = pytest.mark.e2e


def test_codexs_stub_shows_mail_at_the_post_tool_use_of_the_call_it_landed_in(world, codexmock, codex_bin):  # noqa: F811
    from git_korus_mail.wiring import stub as wstub
    clone, codex, home = world
    env = codex_env(home, codex_bin)
    cli("install", "--client", "codex", cwd=clone.main, env=env)
    data = (clone.mail_root / "hooks" / "codex-hook").read_bytes()
    assert wstub.identify(data)[0] == "current"
    block = wstub._split(data.decode())[1]
    assert "client='codex'\n" in block and "fast_session=''\nfast_launch=''\n" in block, block

    # the model's first tool call waits for a gate; a process outside Codex sees that call run
    # (by its command line), queues a message for this worktree, then opens the gate: the message
    # lands during the call, deterministically
    gate = clone.base / "gate"
    mark = f"korus-gate-{os.getpid()}"
    pattern = mark.replace("gate", "gat[e]")  # matches the tool's command line, not this sender's own
    sender = subprocess.Popen(
        ["sh", "-c", f"until pgrep -f '{pattern}' >/dev/null; do sleep 0.05; done; "
                     f"'{HELPER}' send --to '{clone.main}' -- 'landed during the call' && touch '{gate}'"],
        cwd=str(clone.web), env=dict(os.environ, PATH=PATH), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        codexmock.set_script([shell(f": {mark}; until [ -e '{gate}' ]; do sleep 0.05; done; echo opened"),
                              shell("echo second"), codex_text("done")])
        run = codex.run("work", cwd=clone.main, sandbox=None).check()
    finally:
        out, err = sender.communicate(timeout=60)
    assert sender.returncode == 0, err
    assert sandbox_of(run) == "read-only", run.stderr
    requests = codexmock.agent_requests()
    texts = [[t for t in r.texts("developer") if "landed during the call" in t] for r in requests]
    # each request carries the conversation so far: absent before the call, there once after it,
    # and still once in the last request (the next tool call's PostToolUse added no copy)
    assert [len(t) for t in texts] == [0] + [1] * (len(requests) - 1), [len(t) for t in texts]
    assert len(requests) == 3
    fates = cli("status", "--json", cwd=clone.web).stdout
    assert '"consumed"' in fates, fates  # and consumed at Codex's Stop
    cli("uninstall", cwd=clone.main, env=env)
