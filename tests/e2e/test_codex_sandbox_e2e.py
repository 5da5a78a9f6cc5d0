"""The real Codex CLI in its DEFAULT sandbox (no -s, no bypass flag), with the clone and
CODEX_HOME outside /tmp and every other writable root Codex grants (issue 21, items 1 and 2).

Codex's default for `codex exec` is `read-only` in a project nobody trusted and
`workspace-write [workdir, /tmp, $TMPDIR]` in a trusted one; it mounts a worktree's `.git`
read-only (docs/CLIENTS.md, "Codex CLI: the sandbox"). A clone under /tmp would be writable
anyway and prove nothing, so these tests make theirs under /var/tmp.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from codexdriver import Codex
from codexmock import shell, text as codex_text
from helpers import Clone
from test_codex_e2e import HELPER_BIN, IN_SHELL, PATH, cli, codex_env, developer_texts

pytestmark = pytest.mark.e2e


@pytest.fixture
def world(outside, codex_bin, codexmock):
    clone = Clone(outside)
    clone.web = clone.add_worktree("web")
    home = outside / "codex-home"
    return clone, Codex(codex_bin, codexmock, home, path_prefix=HELPER_BIN), home



def flat(text):
    """Output as one line of words: a person's lines wrap at 100 columns (issue 25)."""
    return " ".join(text.split())

def tool_outputs(mock):
    """The output of every shell call Codex ran, as it reached the model."""
    out = []
    for r in mock.agent_requests():
        for item in r.items:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item.get("output")
                out.append(output if isinstance(output, str) else repr(output))
    return out


def sandbox_of(run):
    m = re.search(r"^sandbox: (.*)$", run.stderr, re.M)
    return m.group(1) if m else None


def test_install_trusts_no_project_and_mail_still_flows_in_the_default_sandbox(world, codexmock, codex_bin):
    """Item 1: a committed .codex/config.toml that asks for danger-full-access and starts an MCP
    server stays off after install; our hooks still show mail in the main and a linked worktree;
    the model's send in the read-only default fails with one line that names the fix."""
    clone, codex, home = world
    env = codex_env(home, codex_bin)
    marker = clone.base / "mcp-server-ran"
    (clone.main / ".codex").mkdir()
    (clone.main / ".codex" / "config.toml").write_text(
        'sandbox_mode = "danger-full-access"\n\n[mcp_servers.probe]\ncommand = "sh"\n'
        f'args = ["-c", "touch {marker}; sleep 5"]\n')
    before = (home / "config.toml").read_bytes()
    proc = cli("install", "--client", "codex", cwd=clone.main, env=env)
    config = (home / "config.toml").read_text()
    assert "[projects." not in config and "trust_level" not in config, config
    assert not (clone.web / ".codex").exists()
    # the worktree that holds its own Codex config is named, with what install did about it
    said = flat(proc.stdout)  # lines wrap at 100 columns, a path cut from its start (issue 25)
    assert f"/{clone.main.name} holds its own .codex/config.toml: not trusted by install" in said, said
    assert "codex sandbox in a project you have not trusted in Codex, its default sandbox is read-only" in said

    for name, wt, other in (("main", clone.main, clone.web), ("web", clone.web, clone.main)):
        cli("send", "--to", str(wt), f"for {name}", cwd=other)
        codexmock.set_script([shell(IN_SHELL + f"git korus-mail send --to {other} \"from {name}\"; echo rc=$?"),
                              codex_text("ok")])
        run = codex.run("work", cwd=wt, sandbox=None).check()
        assert sandbox_of(run) == "read-only", run.stderr  # the repo's danger-full-access is not applied
        assert developer_texts(codexmock, f"| for {name}"), codexmock.summary()
        [out] = tool_outputs(codexmock)[-1:]
        errors = [ln for ln in out.splitlines() if ln.startswith("git korus-mail:")]
        assert len(errors) == 1 and "rc=1" in out, out
        assert ("read-only sandbox (CODEX_PERMISSION_PROFILE=:read-only)" in errors[0]
                and "--sandbox workspace-write" in errors[0]), errors
    assert not marker.exists()  # the repository's MCP server never ran

    cli("uninstall", cwd=clone.main, env=env)
    assert (home / "config.toml").read_bytes() == before


def test_trust_is_only_an_explicit_choice_that_says_what_it_turns_on(world, codex_bin):
    clone, _codex, home = world
    env = codex_env(home, codex_bin)
    (clone.web / ".codex").mkdir()
    (clone.web / ".codex" / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    proc = cli("install", "--client", "codex", "--trust-codex-config", cwd=clone.main, env=env)
    config = (home / "config.toml").read_text()
    assert f'[projects."{clone.main}"]' in config and f'[projects."{clone.web}"]' in config
    said = flat(proc.stdout)
    assert said.count("also applies that worktree's committed .codex/ files: config.toml") == 2, said
    assert f"/{clone.web.name} holds its own .codex/config.toml: trusted by your --trust-codex-config" in said
    # a new worktree: its trust is said, inside `git worktree add` too
    late = clone.base / "late"
    added = subprocess.run(["git", "worktree", "add", str(late), "-b", "late"], cwd=clone.main, capture_output=True,
                           text=True, env=dict(os.environ, PATH=PATH, **env))
    assert added.returncode == 0, added.stderr
    assert f"/{late.name}" in flat(added.stdout + added.stderr).split("trusted the project ", 1)[1].split()[0]
    cli("uninstall", cwd=clone.main, env=env)
    assert "[projects." not in (home / "config.toml").read_text()
    bad = cli("install", "--scope", "user", "--client", "codex", "--trust-codex-config", cwd=clone.main, env=env,
              check=False)
    assert bad.returncode == 129 and "--trust-codex-config goes with" in bad.stderr


def test_send_ask_and_reply_work_in_the_default_workspace_write_sandbox(world, codexmock, codex_bin):
    """Item 2: the person trusted both worktrees in Codex (their choice, before install), so the
    default sandbox is workspace-write; the mail root is outside its roots until install adds it.
    From the linked worktree the model asks; from the main one it replies and sends."""
    clone, codex, home = world
    env = codex_env(home, codex_bin)
    with open(home / "config.toml", "a") as f:
        for wt in (clone.main, clone.web):
            f.write(f'\n[projects."{wt}"]\ntrust_level = "trusted"\n')
    before = (home / "config.toml").read_bytes()
    cli("install", "--client", "codex", cwd=clone.main, env=env)
    root = os.path.realpath(clone.mail_root)
    assert f'writable_roots = ["{root}"]' in (home / "config.toml").read_text()
    assert "PROBLEM" not in cli("doctor", cwd=clone.main, env=env).stdout

    codexmock.set_script([shell(IN_SHELL + "git korus-mail ask --to ../api --timeout 1 \"which port? $((6*7))\"; "
                                "echo rc=$?"), codex_text("asked")])
    run = codex.run("ask api", cwd=clone.web, sandbox=None).check()
    asker = run.session_id  # the answer is mail for the session that asked (CODEX_SESSION_ID names it)
    assert sandbox_of(run).startswith("workspace-write"), run.stderr
    asked = tool_outputs(codexmock)[-1]
    assert "Read-only file system" not in asked and "git korus-mail: not" not in asked, asked

    def reply(request):
        shown = "\n".join(request.texts("developer"))
        m = re.search(r"git korus-mail reply (\S+) --", shown)
        assert m, shown
        return shell(IN_SHELL + f"git korus-mail reply {m.group(1)} -- \"port $((6*7))\" && "
                     "git korus-mail send --to ../web \"sent from main\"; echo rc=$?")
    codexmock.set_script([reply, codex_text("replied")])
    run = codex.run("answer it", cwd=clone.main, sandbox=None).check()
    assert sandbox_of(run).startswith("workspace-write"), run.stderr
    out = tool_outputs(codexmock)[-1]
    assert "answered" in out and "queued" in out and "rc=0" in out, out

    # the answer and the sent mail reach the asking session when it goes on (codex exec resume)
    codexmock.set_script([codex_text("read")])
    codex.run("anything?", cwd=clone.web, sandbox=None, resume=asker).check()
    assert developer_texts(codexmock, "| port 42") and developer_texts(codexmock, "| sent from main")

    # doctor names a mail root Codex's sandbox cannot write (here: the person took it out again)
    text = (home / "config.toml").read_text()
    (home / "config.toml").write_text(text.replace(f'writable_roots = ["{root}"]', "writable_roots = []"))
    bad = cli("doctor", cwd=clone.main, env=env, check=False)
    assert bad.returncode == 1 and "/.git/mail is not in sandbox_workspace_write.writable_roots" in flat(bad.stdout), \
        bad.stdout
    # and the model's send says, in one line, what makes it work
    codexmock.set_script([shell(IN_SHELL + "git korus-mail send --to ../api \"no root\"; echo rc=$?"),
                          codex_text("ok")])
    codex.run("try", cwd=clone.web, sandbox=None).check()
    out = tool_outputs(codexmock)[-1]
    errors = [ln for ln in out.splitlines() if ln.startswith("git korus-mail:")]
    assert len(errors) == 1 and "rc=1" in out and "git korus-mail: Codex's sandbox (CODEX_" in errors[0] \
        and f"cannot write the mail root {root}" in errors[0] and "run `git korus-mail install --client codex` outside Codex" in errors[0], out
    (home / "config.toml").write_text(text)

    cli("uninstall", cwd=clone.main, env=env)
    assert (home / "config.toml").read_bytes() == before  # byte for byte


def test_a_batch_past_codexs_byte_limit_reaches_the_model_in_whole_frames(world, codexmock, codex_bin):
    """Item 6 with the real Codex: three CJK messages together past its 10,000 UTF-8 bytes
    reach the model over two events, each in a frame that closes, none cut by Codex."""
    clone, codex, home = world
    env = codex_env(home, codex_bin)
    cli("install", "--client", "codex", cwd=clone.main, env=env)
    bodies = ["\n".join([f"{n} " + "漢字かな" * 25] * 10) for n in ("first", "second", "third")]
    for body in bodies:
        cli("send", "--to", "../web", body, cwd=clone.main)
    codexmock.set_script([codex_text("read")])
    codex.run("go", cwd=clone.web, sandbox=None).check()
    texts = [t for t in developer_texts(codexmock) if "korus-mail: mail for this worktree" in t]
    assert len(texts) == 2, codexmock.summary()  # SessionStart: two; UserPromptSubmit: the third
    for t in texts:
        assert "truncated" not in t and len(t.encode()) <= 10_000
        marks = re.findall(r"^\[mail (\S+) [0-9a-f]{12} (begin|end)\]$", t, re.M)
        assert marks and all(marks[i][1] == "begin" and marks[i + 1] == (marks[i][0], "end")
                             for i in range(0, len(marks), 2)), marks
    joined = "\n".join(texts)
    for body in bodies:
        assert "\n".join("| " + ln for ln in body.split("\n")) in joined
    cli("uninstall", cwd=clone.main, env=env)


def test_install_takes_back_the_project_trust_an_earlier_install_gave_without_asking(world, codex_bin):
    """A clone installed by an earlier version (each worktree trusted and wired in .codex/,
    nobody asked): installing again trusts no project and leaves no project wiring behind."""
    import json
    clone, _codex, home = world
    env = codex_env(home, codex_bin)
    before = (home / "config.toml").read_bytes()
    cli("install", "--client", "codex", "--trust-codex-config", cwd=clone.main, env=env)
    record = clone.mail_root / "hooks" / "installed.json"
    data = json.loads(record.read_text())
    del data["scopes"]["local"]["codex_trust_projects"]  # as an earlier version recorded it
    record.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    proc = cli("install", "--client", "codex", cwd=clone.main, env=env)
    config = (home / "config.toml").read_text()
    assert "[projects." not in config and "trust_level" not in config, config
    for wt in (clone.main, clone.web):
        assert f'/{wt.name}" that an earlier install gave' in flat(proc.stdout), proc.stdout
        assert not (wt / ".codex").exists()
    assert "PROBLEM" not in cli("doctor", cwd=clone.main, env=env).stdout
    cli("uninstall", cwd=clone.main, env=env)
    assert (home / "config.toml").read_bytes() == before


def test_both_scopes_share_one_codex_wiring_and_one_uninstall_leaves_the_other(world, codex_bin):
    """Both scopes wire Codex in the user's hooks.json: the second install says the first owns
    it and wires nothing, so no hook fires twice and its uninstall takes nothing away."""
    clone, _codex, home = world
    env = codex_env(home, codex_bin)
    before = (home / "config.toml").read_bytes()
    cli("install", "--client", "codex", cwd=clone.main, env=env)
    wired = snapshot_files(home)
    proc = cli("install", "--client", "codex", "--scope", "user", cwd=clone.main, env=env)
    assert "already wired by the local scope's install (the same entries): not wired twice" in flat(proc.stdout)
    assert snapshot_files(home) == wired
    cli("uninstall", "--scope", "user", cwd=clone.main, env=env)
    assert snapshot_files(home) == wired
    assert "PROBLEM" not in cli("doctor", cwd=clone.main, env=env).stdout
    cli("uninstall", cwd=clone.main, env=env)
    assert (home / "config.toml").read_bytes() == before and not (home / "hooks.json").exists()


def snapshot_files(home):
    return {p.name: p.read_bytes() for p in (home / "config.toml", home / "hooks.json") if p.exists()}
