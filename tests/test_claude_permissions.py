"""Claude Code's allow rule for `git korus-mail` (clients/claude/permissions.py): which rules
cover the model's send, ask and reply; install tells the rule and writes none; doctor notes it,
never as a problem. What Claude Code itself does with each rule: tests/e2e/test_claude_default_mode_e2e.py."""

import json
import os

import pytest

from git_korus_mail.clients.claude import permissions
from helpers import run_cli

ALLOW_LINE = '"permissions": {"allow": ["Bash(git korus-mail:*)"]}'


@pytest.mark.parametrize("rule, covers", [
    ("Bash(git korus-mail:*)", True), ("Bash(git korus-mail *)", True), ("Bash(git:*)", True),
    ("Bash(git *)", True), ("Bash", True), ("Bash(*)", True),
    ("Bash(git korus-mail send:*)", False),  # observed: send runs, ask is refused
    ("Bash(git status:*)", False), ("Bash(ls)", False), ("Read(git korus-mail)", False), (3, False)])
def test_which_rules_cover_send_ask_and_reply(rule, covers):
    assert permissions.covers(rule) is covers


def _flat(s):
    return " ".join(s.split())


def _settings(clone):
    return [clone.main / ".claude" / "settings.local.json", clone.web / ".claude" / "settings.local.json"]


def test_install_tells_the_rule_and_writes_none_and_doctor_notes_it(clone):
    user = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "settings.json")
    out = run_cli("install", "--client", "claude", cwd=clone.main, check=True).stdout
    assert f"add {ALLOW_LINE} to {user}" in _flat(out) and "install does not" in _flat(out), out
    assert not os.path.exists(user)
    assert all("permissions" not in json.loads(p.read_text()) for p in _settings(clone))
    doctor = json.loads(run_cli("doctor", "--json", cwd=clone.main, check=True).stdout)
    notes = [f for f in doctor["findings"] if f["check"] == "allow"]
    assert sorted(f["where"] for f in notes) == sorted([str(clone.main), str(clone.web)])
    assert all(f["ok"] and f["fix"] is None and ALLOW_LINE in f["detail"] for f in notes), notes


def test_with_the_rule_in_user_settings_install_says_nothing_and_doctor_names_the_file(clone):
    user = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "settings.json")
    os.makedirs(os.path.dirname(user), exist_ok=True)
    mine = '{"permissions": {"allow": ["Bash(git:*)"]}}\n'
    with open(user, "w") as f:
        f.write(mine)
    out = run_cli("install", "--client", "claude", cwd=clone.main, check=True).stdout
    assert "claude permissions" not in out and ALLOW_LINE not in _flat(out), out
    with open(user) as f:
        assert f.read() == mine  # the person's file, untouched
    doctor = json.loads(run_cli("doctor", "--json", cwd=clone.main, check=True).stdout)
    notes = [f for f in doctor["findings"] if f["check"] == "allow"]
    assert len(notes) == 2 and all(f["ok"] and f"an allow rule in {user}" in f["detail"] for f in notes), notes
