"""The seam between the core and its clients: Claude Code's facts live in clients/claude/ only.

The drain, presence, send, doctor and install know phases (show / consume / end) and ask a
client module for its event names, environment and settings; tests/test_fakeclient.py drives
a second client through the same core.
"""

import re
from pathlib import Path

from git_korus_mail import clients

PACKAGE = Path(__file__).resolve().parent.parent / "git_korus_mail"
CLAUDE_FACT = re.compile(r'SessionStart|UserPromptSubmit|PostToolUse|SessionEnd|"Stop"|CLAUDE_')


def claude_facts_outside_its_package(root):
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or "__pycache__" in rel.parts or rel.parts[:2] == ("clients", "claude"):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if CLAUDE_FACT.search(line):
                found.append(f"git_korus_mail/{rel}:{n}: {line.strip()}")
    return found


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
    assert protocol in clients.hook_protocols()
    assert clients.session_of({"CLAUDE_CODE_SESSION_ID": "s-42"}) == "s-42"
    assert clients.session_of({}) is None
