"""Codex's and Gemini's pre-edit protocol (issue 29), and the answer Claude Code shares with Codex: which files a tool call is about to write,
and the exact answer each client reads (clients/codex/preedit.py, clients/gemini/preedit.py).
What the real CLIs do with these answers: tests/e2e/test_reserve_clients_e2e.py."""

import json

from git_korus_mail.clients.codex import hooksfile as codex_hooks
from git_korus_mail.clients.codex import preedit as codex
from git_korus_mail.clients.codex import protocol as codex_protocol
from git_korus_mail.clients.gemini import preedit as gemini
from git_korus_mail.clients.gemini import protocol as gemini_protocol
from git_korus_mail.clients.gemini import settingsfile as gemini_settings

PATCH = ("*** Begin Patch\n*** Add File: docs/new.md\n+hello\n*** Update File: src/db/schema.sql\n"
         "@@\n-a\n+b\n*** Move to: src/db/renamed.sql\n*** Delete File: old.txt\n"
         "*** Update File: docs/new.md\n*** End Patch\n")


def codex_payload(tool, tool_input, event="PreToolUse"):
    data = json.dumps({"session_id": "s1", "cwd": "/w", "hook_event_name": event, "tool_name": tool,
                       "tool_input": tool_input, "transcript_path": "/t"}).encode()
    return codex_protocol.read_payload(data)


def gemini_payload(tool, tool_input, event="BeforeTool"):
    data = json.dumps({"session_id": "s1", "cwd": "/w", "hook_event_name": event, "tool_name": tool,
                       "tool_input": tool_input, "transcript_path": "/t"}).encode()
    return gemini_protocol.read_payload(data)


def test_codex_reads_every_file_an_apply_patch_writes_once_each():
    assert codex.patch_paths(PATCH) == ["docs/new.md", "src/db/schema.sql", "src/db/renamed.sql", "old.txt"]
    assert codex_protocol.pre_edit_paths(codex_payload("apply_patch", {"command": PATCH}))[:2] == [
        "docs/new.md", "src/db/schema.sql"]


def test_codex_other_tools_and_events_are_not_edits():
    assert codex_protocol.pre_edit_paths(codex_payload("Bash", {"command": "sed -i s/a/b/ x"})) == []
    assert codex_protocol.pre_edit_paths(codex_payload("apply_patch", {"command": PATCH}, event="PostToolUse")) is None
    assert codex_protocol.pre_edit_paths(codex_payload("apply_patch", "not a dict")) == []


def test_codex_answers_pinned():
    assert json.loads(codex_protocol.pre_edit_output("line one\nline two", block=False)) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "line one\nline two"},
        "systemMessage": "line one"}
    assert json.loads(codex_protocol.pre_edit_output("line one\nline two", block=True)) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                               "permissionDecisionReason": "line one\nline two"},
        "systemMessage": "refused an edit: line one"}
    # a tell past Codex's context limit is cut at whole lines (protocol.fit)
    long = "\n".join(f"line {i} " + "x" * 90 for i in range(200))
    ctx = json.loads(codex_protocol.pre_edit_output(long, block=False))["hookSpecificOutput"]["additionalContext"]
    assert len(ctx.encode()) <= codex_protocol.CONTEXT_LIMIT and ctx.startswith("line 0 ")


def test_claude_and_codex_pre_edit_answers_are_one_shape_in_pinned_bytes():
    """Both PreToolUse answers come from clients/hookjson.pre_tool_use_output: the same bytes,
    ASCII only (a non-ASCII reason is escaped), the person's line cut to 300 characters."""
    from git_korus_mail.clients.claude import protocol as claude_protocol
    text = "held by s-1 \u2014 caf\u00e9\nline two"
    assert claude_protocol.pre_edit_output(text, block=True) == codex_protocol.pre_edit_output(text, block=True) == (
        '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", '
        '"permissionDecisionReason": "held by s-1 \\u2014 caf\\u00e9\\nline two"}, '
        '"systemMessage": "refused an edit: held by s-1 \\u2014 caf\\u00e9"}')
    assert claude_protocol.pre_edit_output(text, block=False) == codex_protocol.pre_edit_output(text, block=False) == (
        '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": '
        '"held by s-1 \\u2014 caf\\u00e9\\nline two"}, "systemMessage": "held by s-1 \\u2014 caf\\u00e9"}')
    wide = "w" * 400 + "\nrest"
    for client in (claude_protocol, codex_protocol):
        assert json.loads(client.pre_edit_output(wide, block=False))["systemMessage"] == "w" * 300


def test_codex_wiring_hooks_apply_patch_only():
    group = codex_hooks.FILE.wanted_groups("/c/.git/mail/hooks/codex-hook")["PreToolUse"]
    assert group == {"matcher": "apply_patch", "hooks": [
        {"type": "command", "command": "'/c/.git/mail/hooks/codex-hook' PreToolUse", "timeout": 30}]}


def test_gemini_reads_the_file_of_write_file_and_replace_only():
    assert gemini_protocol.pre_edit_paths(gemini_payload("write_file", {"file_path": "a/b.txt", "content": "x"})) == ["a/b.txt"]
    assert gemini_protocol.pre_edit_paths(gemini_payload("replace", {"file_path": "/abs/c.py", "old_string": "a",
                                                            "new_string": "b"})) == ["/abs/c.py"]
    assert gemini_protocol.pre_edit_paths(gemini_payload("run_shell_command", {"command": "echo > x"})) == []
    assert gemini_protocol.pre_edit_paths(gemini_payload("write_file", {"file_path": "x"}, event="AfterTool")) is None


def test_gemini_answers_pinned():
    assert json.loads(gemini_protocol.pre_edit_output("line one\nline two", block=True)) == {
        "decision": "deny", "reason": "line one\nline two", "systemMessage": "refused an edit: line one"}
    assert json.loads(gemini_protocol.pre_edit_output("line one\nline two", block=False)) == {
        "systemMessage": "line one (advisory: the edit goes on; `git korus-mail reserve --list`)"}
    long = "\n".join(f"line {i} " + "x" * 90 for i in range(200))
    reason = json.loads(gemini_protocol.pre_edit_output(long, block=True))["reason"]
    assert len(reason) <= gemini.REASON_LIMIT and reason.endswith("\n(cut)")


def test_gemini_wiring_hooks_the_editing_tools_only():
    group = gemini_settings.FILE.wanted_groups("/c/.git/mail/hooks/gemini-hook")["BeforeTool"]
    assert group == {"matcher": "write_file|replace", "hooks": [
        {"type": "command", "command": "'/c/.git/mail/hooks/gemini-hook' BeforeTool", "timeout": 30000}]}


def test_codex_and_gemini_stubs_answer_a_pre_edit_event_in_sh_while_nothing_is_reserved(tmp_path):
    """The stub's one test (hooks/hook.sh): no <mail>/RESERVED, no helper started. The helper is
    a spy that leaves a mark; the mail root is a bare directory (the stub reads nothing else)."""
    import os
    import subprocess

    from git_korus_mail.clients.codex import stub as codex_stub
    from git_korus_mail.clients.gemini import stub as gemini_stub
    mail = tmp_path / "mail"
    (mail / "hooks").mkdir(parents=True)
    mark = tmp_path / "ran"
    spy = tmp_path / "git-korus-mail"
    spy.write_text(f"#!/bin/sh\ncat >/dev/null\necho $* >> '{mark}'\n")
    spy.chmod(0o755)
    for stub, event, other in ((codex_stub, "PreToolUse", "PostToolUse"), (gemini_stub, "BeforeTool", "AfterTool")):
        path = mail / "hooks" / os.path.basename(stub.STUB.name)
        path.write_text(stub.render_stub(str(spy)))
        path.chmod(0o700)

        def fire(ev, path=path):
            return subprocess.run(["sh", str(path), ev], input=b"{}", cwd=tmp_path, capture_output=True).returncode

        assert fire(event) == 0 and not mark.exists(), event  # nothing reserved: sh only
        assert fire(other) == 0 and mark.read_text().count("drain") == 1  # other events run the drain
        (mail / "RESERVED").write_text("")
        assert fire(event) == 0 and mark.read_text().count("drain") == 2  # something reserved: the match runs
        (mail / "RESERVED").unlink()
        mark.unlink()


def test_gemini_install_puts_our_before_tool_beside_the_persons_doctor_misses_it_uninstall_restores(clone, tmp_path):
    import os

    from helpers import run_cli
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    mine = clone.web / ".gemini" / "settings.json"
    mine.parent.mkdir()
    original = b'{\n  "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "mine"}]}]}\n}\n'
    mine.write_bytes(original)
    assert run_cli("install", "--client", "gemini", cwd=clone.main, env=env).returncode == 0
    stub = str(clone.mail_root / "hooks" / "gemini-hook")
    groups = json.loads(mine.read_text())["hooks"]["BeforeTool"]
    assert groups == [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "mine"}]},
                      {"matcher": "write_file|replace", "hooks": [
                          {"type": "command", "command": f"'{stub}' BeforeTool", "timeout": 30000}]}]
    # an install from before reservations (no BeforeTool of ours): doctor names it, install mends it
    data = json.loads(mine.read_text())
    data["hooks"]["BeforeTool"] = data["hooks"]["BeforeTool"][:1]
    mine.write_text(json.dumps(data, indent=2) + "\n")
    doc = run_cli("doctor", cwd=clone.main, env=env)
    said = " ".join(doc.stdout.split())
    assert doc.returncode != 0 and "web/.gemini/settings.json: BeforeTool: no entry" in said, doc.stdout
    assert run_cli("install", "--client", "gemini", cwd=clone.main, env=env).returncode == 0
    assert len(json.loads(mine.read_text())["hooks"]["BeforeTool"]) == 2
    assert run_cli("uninstall", cwd=clone.main, env=env).returncode == 0
    assert json.loads(mine.read_bytes()) == json.loads(original)
