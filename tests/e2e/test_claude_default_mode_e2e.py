"""Claude Code in its DEFAULT permission mode (no --dangerously-skip-permissions), as a person
runs it: our hooks need no permission, so mail is shown and consumed all the same; the model's
own `git korus-mail` is a Bash call, which `-p` refuses with one short tool result unless the
person's allow rule covers it. Install tells that rule and never writes it; doctor notes whether
it is there (docs/CLIENTS.md, "Claude Code: its permission mode"). The cross-vendor matrix
(test_matrix_e2e.py) runs Claude Code in this mode with the rule.
"""

from __future__ import annotations

import json
import re
import os
import sys

import pytest

from driver import Claude
from mockapi import bash, text

pytestmark = pytest.mark.e2e

HELPER_BIN = os.path.dirname(sys.executable)
HELPER = os.path.join(HELPER_BIN, "git-korus-mail")
PATH = HELPER_BIN + os.pathsep + os.environ.get("PATH", "")
ALLOW_LINE = '"permissions": {"allow": ["Bash(git korus-mail:*)"]}'
REFUSAL = "This command requires approval"  # Claude Code 2.1.332's whole tool result


@pytest.fixture
def setup(claude_bin, mockapi, tmp_path):
    """A clone (api + web) wired by `install --client claude`, and a runner in Claude Code's
    default permission mode whose CLAUDE_CONFIG_DIR is the person's user settings."""
    from helpers import Clone
    c = Clone(tmp_path)
    c.web = c.add_worktree("web")
    runner = Claude(claude_bin, mockapi, tmp_path / "claude-config", env={"PATH": PATH})
    assert not runner.skip_permissions
    env = {"PATH": PATH, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": runner.config_dir}
    installed = cli("install", "--client", "claude", cwd=c.main, env=env)
    yield c, runner, env, installed
    runner.cleanup()


def cli(*args, cwd, env):
    import subprocess
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    full.update(env)
    proc = subprocess.run([HELPER, *args], cwd=str(cwd), env=full, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"git-korus-mail {args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _flat(s):
    return " ".join(s.split())


def tool_results(mockapi):
    """Every tool_result block the model was sent, in order (the last request holds them all)."""
    reqs = mockapi.agent_requests()
    blocks = [b for m in (reqs[-1].messages if reqs else []) if isinstance(m.get("content"), list)
              for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    return [(b.get("content"), bool(b.get("is_error"))) for b in blocks]


def _queued(clone):
    return sorted((clone.mail_root / "box").glob("*/inbox/*.json"))


def _delivered(clone, runner, mockapi, env, body):
    """The person sends `body` from a terminal; web's next default-mode run is shown it and its end
    consumes it: hooks run in every permission mode."""
    cli("send", "--to", "../web", body, cwd=clone.main, env=env)
    before = len(mockapi.agent_requests())
    mockapi.set_script([text("noted")])
    run = runner.run("anything new?", clone.web, check=True)
    assert "--dangerously-skip-permissions" not in run.argv and not run.data["permission_denials"]
    assert any(body in r.decoded_text() for r in mockapi.agent_requests()[before:])
    sent = [s for s in json.loads(cli("status", "--json", cwd=clone.main, env=env).stdout)["sent"]
            if s["fate"]["state"] == "consumed" and s["fate"]["session"] == run.session_id]
    assert sent, cli("status", cwd=clone.main, env=env).stdout


def test_without_the_allow_rule_the_models_send_is_refused_and_hooks_still_deliver(setup, mockapi):
    clone, runner, env, installed = setup
    # install tells the person the one rule, where it goes, and that it wrote none
    assert ALLOW_LINE in _flat(installed.stdout) and "install does not" in _flat(installed.stdout), installed.stdout
    assert not (clone.base / "claude-config" / "settings.json").exists()

    mockapi.set_script([bash('git korus-mail send --to ../web "refused note"'), text("sent")])
    run = runner.run("tell web", clone.main, check=True)
    denials = run.data["permission_denials"]
    assert len(denials) == 1, run.describe()  # a permissive run (the flag) refuses nothing
    [denied] = denials
    assert denied["tool_name"] == "Bash" and denied["tool_input"]["command"].startswith("git korus-mail send")
    assert tool_results(mockapi) == [(REFUSAL, True)]  # all the model is told
    assert _queued(clone) == []  # nothing sent

    _delivered(clone, runner, mockapi, env, "a note the person sent")
    doctor = _flat(cli("doctor", cwd=clone.main, env=env).stdout)
    assert "allow " in doctor and f"add {ALLOW_LINE}" in doctor and "PROBLEM" not in doctor, doctor


# `auto`: the terminal UI's default permission mode in 2.1.332 (its banner says so), where a
# model call of its own judges each tool call; an allow rule is applied before that check (offline,
# without the rule, the check cannot run and the call is refused: "Auto mode is unavailable ...")
@pytest.mark.parametrize("mode", [(), ("--permission-mode", "auto")], ids=["default", "auto"])
def test_with_the_persons_allow_rule_the_models_send_runs(setup, mockapi, mode):
    clone, runner, env, _installed = setup
    settings = runner.allow_mail_commands()  # the person's own choice, in their user settings
    mockapi.set_script([bash('git korus-mail send --to ../web "allowed note"'), text("sent")])
    run = runner.run("tell web", clone.main, check=True, args=mode)
    assert run.data["permission_denials"] == []
    [(result, is_error)] = tool_results(mockapi)
    assert result.startswith("queued ") and "-> ../web (web)" in result and not is_error, result
    assert len(_queued(clone)) == 1
    mockapi.set_script([text("noted")])
    web = runner.run("anything new?", clone.web, check=True)
    assert "allowed note" in mockapi.agent_requests()[-1].decoded_text()
    [sent] = json.loads(cli("status", "--json", cwd=clone.main, env=env).stdout)["sent"]
    assert sent["fate"]["state"] == "consumed" and sent["fate"]["session"] == web.session_id, sent
    doctor = _flat(cli("doctor", cwd=clone.main, env=env).stdout)
    # (a long path is cut from its start to fit 100 columns: its end stays)
    assert re.search(r"an allow rule in \S*" + re.escape(f"{settings.parent.name}/settings.json"), doctor) \
        and "PROBLEM" not in doctor, doctor


def test_a_rule_in_the_worktrees_shared_settings_applies_only_once_the_folder_is_trusted(setup, mockapi):
    """The repository's own .claude/settings.json cannot grant the model a command in a folder
    the person has not trusted in Claude Code (observed in -p; its settings.local.json can):
    refused until `projects[<dir>].hasTrustDialogAccepted`, then it runs. Doctor says which."""
    from driver import accept_dialogs
    clone, runner, env, _installed = setup
    (clone.main / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": [
        "Bash(git korus-mail:*)"]}}))
    mockapi.set_script([bash('git korus-mail send --to ../web "before trust"'), text("sent")])
    assert len(runner.run("tell web", clone.main, check=True).data["permission_denials"]) == 1
    assert tool_results(mockapi) == [(REFUSAL, True)] and _queued(clone) == []
    doctor = _flat(cli("doctor", cwd=clone.main, env=env).stdout)
    assert re.search(r"the rule in \S*\.claude/settings\.json does not apply: this folder is not trusted", doctor), \
        doctor

    accept_dialogs(runner.config_dir, clone.main, "sk-ant-e2e-dummy")  # the person's trust, in Claude Code
    mockapi.set_script([bash('git korus-mail send --to ../web "after trust"'), text("sent")])
    assert runner.run("tell web", clone.main, check=True).data["permission_denials"] == []
    assert len(_queued(clone)) == 1
    doctor = _flat(cli("doctor", cwd=clone.main, env=env).stdout)
    assert re.search(r"an allow rule in \S*\.claude/settings\.json", doctor), doctor
