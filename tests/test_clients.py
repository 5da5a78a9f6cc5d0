"""The seam between the core and its clients: Claude Code's facts live in clients/claude/ only,
Codex CLI's in clients/codex/ only (its event names are Claude Code's: those two packages may say them).

The drain, presence, send, doctor and install know phases (show / consume / end) and ask a
client module for its event names, environment and settings; tests/test_fakeclient.py drives
a second client through the same core.
"""

import re
from pathlib import Path

from git_korus_mail import clients

PACKAGE = Path(__file__).resolve().parent.parent / "git_korus_mail"
CLAUDE_FACT = re.compile(r'SessionStart|UserPromptSubmit|PostToolUse|SessionEnd|"Stop"|StopFailure|last_assistant_message|stop_hook_active|CLAUDE_')
CLAUDE_ONLY = re.compile(r'CLAUDE_')
CODEX_FACT = re.compile(r'codex', re.I)
CORE_PARTS = ("core", "store")  # the core, which no client may reach into


def claude_facts_outside_its_package(root):
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or "__pycache__" in rel.parts or rel.parts[:2] == ("clients", "claude"):
            continue
        # Codex and Gemini share event names (or the stop_hook_active field) with Claude Code
        fact = CLAUDE_ONLY if rel.parts[:2] in (("clients", "codex"), ("clients", "gemini")) else CLAUDE_FACT
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if fact.search(line):
                found.append(f"git_korus_mail/{rel}:{n}: {line.strip()}")
    return found


def codex_facts_in_the_core(root):
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] not in CORE_PARTS and len(rel.parts) > 1:
            continue  # commands, clients and wiring may name the clients; the core and leaf modules not
        if rel.parts[0] == "cli.py":
            continue  # the usage text names both clients
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if CODEX_FACT.search(line):
                found.append(f"git_korus_mail/{rel}:{n}: {line.strip()}")
    return found


def test_no_codex_line_in_the_core():
    found = codex_facts_in_the_core(PACKAGE)
    assert not found, "Codex CLI facts in the core (ask clients/codex/):\n" + "\n".join(found)


def test_the_codex_check_sees_a_codex_line_in_the_core(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "drain.py").write_text('if client == "codex":\n    pass\n')
    (tmp_path / "clients" / "codex").mkdir(parents=True)
    (tmp_path / "clients" / "codex" / "protocol.py").write_text('NAME = "codex"\n')
    assert codex_facts_in_the_core(tmp_path) == ['git_korus_mail/core/drain.py:1: if client == "codex":']


def test_codex_may_say_the_shared_event_names_but_not_claude_variables(tmp_path):
    (tmp_path / "clients" / "codex").mkdir(parents=True)
    (tmp_path / "clients" / "codex" / "protocol.py").write_text('CONSUME_EVENT = "Stop"\nx = "CLAUDE_PID"\n')
    assert claude_facts_outside_its_package(tmp_path) == ['git_korus_mail/clients/codex/protocol.py:2: x = "CLAUDE_PID"']


def test_no_claude_event_or_variable_outside_clients_claude():
    found = claude_facts_outside_its_package(PACKAGE)
    assert not found, "Claude Code facts outside clients/claude/ (ask the client module):\n" + "\n".join(found)


def test_the_check_sees_an_event_name_in_the_core(tmp_path):
    (tmp_path / "clients" / "claude").mkdir(parents=True)
    (tmp_path / "clients" / "claude" / "protocol.py").write_text('CONSUME_EVENT = "Stop"\n')
    (tmp_path / "drain.py").write_text('if event == "Stop":\n    pass\n')
    assert claude_facts_outside_its_package(tmp_path) == ['git_korus_mail/drain.py:1: if event == "Stop":']


def test_the_registry_names_claude_and_asks_it_for_the_session(monkeypatch):
    from git_korus_mail.clients.claude import protocol
    from git_korus_mail.clients.codex import protocol as codex
    assert protocol in clients.hook_protocols() and codex in clients.hook_protocols()
    assert clients.hook_protocol("codex") is codex and clients.installers(("codex",))[0].NAME == "codex"
    assert clients.session_of({"CLAUDE_CODE_SESSION_ID": "s-42"}) == "s-42"
    assert clients.session_of({}) is None
