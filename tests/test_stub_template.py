"""The one hook template (hooks/hook.sh): every client's stub is it with a block of values, and a
stub says by its ID which template it came from (wiring/stub.py, docs/HOOKS.md "The stub")."""

import json
import os
import subprocess

import pytest

from helpers import REPO_ROOT

from git_korus_mail.wiring import stub

TEMPLATE = (REPO_ROOT / "hooks" / "hook.sh").read_text()
HELPER = "/opt/it's here/bin/git-korus-mail"


def clients():
    from git_korus_mail.clients.claude import stub as claude
    from git_korus_mail.clients.codex import stub as codex
    from git_korus_mail.clients.gemini import stub as gemini
    return {"claude": claude.STUB, "codex": codex.STUB, "gemini": gemini.STUB}


def outside_block(text):
    before, _block, after = stub._split(text)
    return before, after


def test_the_clients_stubs_differ_only_in_their_block_of_values():
    texts = {name: s.render(HELPER) for name, s in clients().items()}
    outside = {name: outside_block(t) for name, t in texts.items()}
    assert outside["claude"] == outside["codex"] == outside["gemini"]
    before, after = outside["claude"]
    assert before.startswith("#!/bin/sh\n" + stub.ID_LINE + stub.template_id(TEMPLATE) + "\n")
    blocks = {name: stub._split(t)[1] for name, t in texts.items()}
    assert ("fast_session=${CLAUDE_CODE_SESSION_ID-}\nfast_launch=${CLAUDE_PID-}\n"
            "fast_events='PostToolUse UserPromptSubmit Stop'\n") in blocks["claude"]
    # Codex: the key from the payload's head (its session) and the stub's parent (docs/HOOKS.md,
    # "Codex's key: the payload's head"), at the same three events as Claude Code's
    assert "client='codex'\n" in blocks["codex"] and ("fast_session=''\nfast_launch=''\n"
                                                     "fast_events='PostToolUse UserPromptSubmit Stop'\n") in blocks["codex"]
    # Gemini: no fast path (no variable names its process), the fault report at its run's end
    assert "client='gemini'\n" in blocks["gemini"] \
        and "fast_session=''\nfast_launch=''\nfast_events=''\n" in blocks["gemini"]
    assert blocks["gemini"].endswith("opening_event='SessionStart'\nend_event='AfterAgent'\nprompt_event=''\n"
                                     "pre_edit_events='BeforeTool'\nfast_head=''\n"), blocks["gemini"]
    assert blocks["codex"].endswith("opening_event='SessionStart'\nend_event='Stop'\nprompt_event='UserPromptSubmit'\n"
                                    "pre_edit_events='PreToolUse'\nfast_head='{\"session_id\":\"'\n"), blocks["codex"]
    assert blocks["claude"].endswith("opening_event='SessionStart'\nend_event='Stop'\n"
                                     "prompt_event='UserPromptSubmit'\npre_edit_events='PreToolUse'\nfast_head=''\n"), \
        blocks["claude"]
    # before an edit: Claude Code's and Codex's PreToolUse, Gemini's BeforeTool, answered in sh when
    # nothing is reserved (issue 29)


def test_the_block_holds_values_only():
    # `name=value` lines, each value one shell word that runs nothing: a quoted string or the
    # expansion of one environment variable; no command, no substitution
    for s in clients().values():
        block = stub._split(s.render(HELPER))[1]
        for line in block.splitlines():
            name, _eq, value = line.partition("=")
            assert name.isidentifier() and _eq, line
            assert (value.startswith("'") and value.endswith("'") and "$(" not in value.replace("'\\''", "")) \
                or (value.startswith("${") and value.endswith("-}") and value[2:-2].isidentifier()), line


@pytest.mark.parametrize("shell", ["sh", "dash", "bash"])
def test_a_rendered_stub_is_valid_shell(shell, tmp_path):
    import shutil
    if not shutil.which(shell):
        pytest.skip(f"no {shell}")
    for name, s in clients().items():
        path = tmp_path / name
        path.write_text(s.render(HELPER))
        assert subprocess.run([shell, "-n", str(path)]).returncode == 0


def test_a_stub_is_recognised_by_its_id():
    good = clients()["claude"].render(HELPER).encode()
    assert stub.identify(good) == ("current", stub.template_id(TEMPLATE))
    # its values may differ (another helper): still this template
    assert stub.identify(clients()["codex"].render("/x").encode())[0] == "current"
    # a change outside the block: the text no longer matches its ID
    assert stub.identify(good.replace(b"exit 0\n", b"exit 1\n", 1))[0] == "edited"
    assert stub.identify(good + b"# edited\n")[0] == "edited"
    # an older shared template: its ID matches its own text, not this template's
    older = good.replace(b"exit 0\n", b"exit 0  \n", 1)
    older_id = stub.template_id(older.decode())
    older = older.replace(stub.template_id(TEMPLATE).encode(), older_id.encode(), 1)
    assert stub.identify(older) == ("older", f"template {older_id}")
    assert stub.identify(b"#!/bin/sh\nexit 0\n") == ("foreign", "")
    assert stub.identify(b"") == ("foreign", "")


@pytest.mark.parametrize("client, version", [("claude", "7"), ("codex", "2"), ("claude", "1")])
def test_the_stubs_of_the_per_client_templates_are_recognised_as_older(client, version):
    # the head of the stubs the per-client templates (hooks/claude-hook.sh, hooks/codex-hook.sh)
    # wrote, as they sit on users' machines; install rewrites them, doctor says why
    old = (f"#!/bin/sh\n# git-korus-mail {client}-hook template-version={version}\n"
           "# Written by `git korus-mail install` into <git-common-dir>/mail/hooks/ and removed by\n").encode()
    kind, what = stub.identify(old)
    assert kind == "older" and what.endswith(f"version {version}"), (kind, what)
    assert "older template" in stub.why_stale(old)


def test_a_template_without_its_block_is_refused(monkeypatch, tmp_path):
    from git_korus_mail.errors import MailError
    bare = tmp_path / "hook.sh"
    bare.write_text(TEMPLATE.replace(stub.BLOCK_START, ""))
    monkeypatch.setattr(stub, "template_path", lambda name: str(bare))
    with pytest.raises(MailError, match="no block of values"):
        stub.render("claude", HELPER, opening_event="SessionStart", end_event="Stop")


def test_an_environment_name_and_an_event_name_are_checked():
    with pytest.raises(ValueError):
        stub.values("x", HELPER, session_env="A; rm -rf /", launch_env="B", opening_event="Begin", end_event="End")
    for bad in ("", 'Stop", "x', "Stop Start"):
        with pytest.raises(ValueError):
            stub.values("x", HELPER, opening_event="Begin", end_event=bad)
    # a payload's head (Codex's key): printable, and never beside an environment key
    with pytest.raises(ValueError):
        stub.values("x", HELPER, session_head='{"s":"\n', opening_event="Begin", end_event="End")
    with pytest.raises(ValueError):
        stub.values("x", HELPER, session_env="S", launch_env="P", session_head='{"s":"', opening_event="Begin",
                    end_event="End")


@pytest.mark.parametrize("event, said", [("AfterAgent", "user"), ("BeforeAgent", None), ("Begin", "both")])
def test_a_client_with_other_event_names_gets_the_fault_report_at_its_own_events(tmp_path, event, said):
    # a third client adds values only: its opening and end events are two of them
    third = stub.Stub("third-hook", "third", opening_event="Begin", end_event="AfterAgent")
    path = tmp_path / "third-hook"
    path.write_text(third.render(str(tmp_path / "gone" / "git-korus-mail")))
    path.chmod(0o700)
    env = dict(os.environ, PATH="/usr/bin:/bin")  # no git-korus-mail on PATH either: the fault report
    proc = subprocess.run(["sh", str(path), event], input="{}", capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    if said is None:
        assert proc.stdout == ""
        return
    answer = json.loads(proc.stdout)
    assert answer["systemMessage"].startswith("git korus-mail: helper not found"), answer
    if said == "both":
        assert answer["hookSpecificOutput"] == {"hookEventName": "Begin", "additionalContext": answer["systemMessage"]}
    else:
        assert set(answer) == {"systemMessage"}


def test_install_upgrades_an_installed_stub_of_the_per_client_template_and_doctor_says_so(clone):
    # the stub as the last per-client template (hooks/claude-hook.sh, version 7) wrote it, read
    # from git's history where there is one; its header alone where there is none
    from install_fixtures import stub_of
    from helpers import run_cli
    from test_doctor import doctor, failing
    run_cli("install", cwd=clone.main, check=True)
    path = stub_of(clone)
    current = open(path, "rb").read()
    proc = subprocess.run(["git", "-C", str(REPO_ROOT), "show", "0f6be73:hooks/claude-hook.sh"], capture_output=True)
    old = proc.stdout if proc.returncode == 0 else b"#!/bin/sh\n# git-korus-mail claude-hook template-version=7\n"
    assert old.split(b"\n")[1] == b"# git-korus-mail claude-hook template-version=7"
    with open(path, "wb") as f:
        f.write(old)
    rc, data = doctor(clone.main)
    [finding] = [f for f in failing(data, "wiring") if f["where"] == path]
    assert finding["detail"] == ("differs from what install writes now: written from an older template (Claude Code's "
                                 "template before the shared one, version 7); install upgrades it"), finding
    assert finding["fix"] == "git korus-mail install"
    run_cli("install", cwd=clone.main, check=True)
    assert open(path, "rb").read() == current
    assert doctor(clone.main)[0] == 0
