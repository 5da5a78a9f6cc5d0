"""The hooks-document editing Claude Code's and Codex's install share (wiring/hookdoc.py): the
same entries found as ours in both clients' files, and a merge then a removal that gives back
the document as it was, foreign hooks in their place."""

import pytest

from git_korus_mail.clients import hookfile
from git_korus_mail.clients.claude import settings as claude
from git_korus_mail.clients.codex import hooksfile as codex
from git_korus_mail.wiring import hookdoc

CLAUDE_STUB = "/r/.git/mail/hooks/claude-hook"
CODEX_STUB = "/r/.git/mail/hooks/codex-hook"


def cmd(text):
    return {"type": "command", "command": text}


@pytest.mark.parametrize("command, found", [
    ("'/r/.git/mail/hooks/codex-hook' Stop", CODEX_STUB),
    ("'/r/.git/mail/hooks/codex-hook'", CODEX_STUB),
    ("'/it'\\''s/mail/hooks/codex-hook' Stop --repo '/r'", "/it's/mail/hooks/codex-hook"),
    ("'/r/.git/mail/hooks/codex-hook'x Stop", None),    # the word goes on: another file
    ("'/r/.git/mail/hooks/codex-hook Stop", None),      # no closing quote
    ("/r/.git/mail/hooks/codex-hook Stop", None),       # not as sh_quote writes it
    ("'/r/.git/mail/hooks/claude-hook' Stop", None),    # the other client's stub
])
def test_codex_entries_are_found_by_the_quoted_stub_path(command, found):
    assert codex.FILE.stub_of(cmd(command)) == found
    if "codex-hook" in command:  # the same rule for Claude Code's entries
        assert claude.stub_of(cmd(command.replace("codex-hook", "claude-hook"))) == (
            found.replace("codex-hook", "claude-hook") if found else None)


@pytest.mark.parametrize("hook", [None, "x", {"type": "prompt", "command": "'/m/mail/hooks/codex-hook'"},
                                  {"type": "command"}, {"type": "command", "command": 7}])
def test_a_handler_not_a_command_is_not_ours(hook):
    assert codex.FILE.stub_of(hook) is None and claude.stub_of(hook) is None


def test_merge_then_remove_gives_the_document_back_in_both_clients():
    foreign = {"type": "command", "command": "echo hi"}
    doc = {"model": "x", "hooks": {"Stop": [{"hooks": [foreign]}], "Other": []}}
    for merged, removed, stub in (
            (codex.FILE.merge(doc, CODEX_STUB), lambda d: codex.FILE.remove(d, CODEX_STUB), CODEX_STUB),
            (claude.merge_settings(doc, CLAUDE_STUB), lambda d: claude.remove_settings(d, CLAUDE_STUB), CLAUDE_STUB)):
        assert merged["hooks"]["Stop"][0] == {"hooks": [foreign]}        # foreign group kept first
        assert merged["hooks"]["Stop"][1] == {"hooks": [{"type": "command", "command": f"'{stub}' Stop",
                                                          "timeout": 30}]}
        assert merged["hooks"]["PostToolUse"][0]["matcher"] == "*"
        back, n = removed(merged)
        assert back == doc and n == len(set(merged["hooks"]) - {"Other"})  # one hook an event


def test_both_clients_refuse_the_same_bad_shapes_with_one_error():
    assert claude.BadSettings is hookfile.BadHooks is hookdoc.BadHooks
    with pytest.raises(hookdoc.BadHooks, match=r'"hooks.Stop\[0\]" is not a matcher group'):
        codex.FILE.merge({"hooks": {"Stop": [{"command": "x"}]}}, CODEX_STUB)
    assert claude.check_settings({"hooks": []}, CLAUDE_STUB) == ['"hooks" is not an object']
