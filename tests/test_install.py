"""install / uninstall on real repositories, through the real command in a subprocess."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from helpers import git, run_cli
from install_fixtures import (EVENTS, FOREIGN_SETTINGS, age_files, install, load, make_fake_helper,
                              make_helper_copy, our_commands, run_stub, settings_path, snapshot, stub_of,
                              uninstall)

from git_korus_mail.clients.claude import protocol as claude_protocol
from git_korus_mail.clients.claude import settings as claude


def write_foreign(worktree, text=FOREIGN_SETTINGS):
    p = settings_path(worktree)
    p.parent.mkdir(exist_ok=True)
    p.write_bytes(text.encode("utf-8"))
    return p


def installed_files(clone, *worktrees):
    common = clone.common_dir
    return ([settings_path(w) for w in worktrees]
            + [common / "info" / "exclude", common / "hooks" / "post-checkout",
               clone.mail_root / "hooks" / "claude-hook", clone.mail_root / "hooks" / "installed.json"])


def test_install_keeps_foreign_keys_and_hooks_and_wires_every_worktree(clone):
    write_foreign(clone.main)
    proc = install(clone.main)
    stub = stub_of(clone)

    main = load(settings_path(clone.main))
    foreign = json.loads(FOREIGN_SETTINGS)
    assert main["permissions"] == foreign["permissions"] and main["model"] == "opus"
    # the foreign PreToolUse groups keep their places; ours (the editing tools) comes after them
    n = len(foreign["hooks"]["PreToolUse"])
    assert main["hooks"]["PreToolUse"][:n] == foreign["hooks"]["PreToolUse"]
    assert main["hooks"]["PreToolUse"][n]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    assert main["hooks"]["Stop"][0] == foreign["hooks"]["Stop"][0]  # the foreign hook keeps its place
    for wt in (clone.main, clone.web):
        data = load(settings_path(wt))
        assert claude.check_settings(data, stub) == []
        assert our_commands(data, stub) == {ev: [f"'{stub}' {ev}"] for ev in EVENTS}
    # kept the file's own indent; a file we create gets indent 2
    assert settings_path(clone.main).read_text().splitlines()[1].startswith('    "permissions"')
    assert settings_path(clone.web).read_text().splitlines()[1].startswith('  "hooks"')
    post_tool = load(settings_path(clone.web))["hooks"]["PostToolUse"][0]
    assert post_tool["matcher"] == "*" and post_tool["hooks"][0]["timeout"] > 0
    stub_mode = stat.S_IMODE(os.stat(stub).st_mode)
    assert stub_mode == 0o700
    exclude = (clone.common_dir / "info" / "exclude").read_text().splitlines()
    assert exclude.count(".claude/settings.local.json") == 1
    assert "problem" not in proc.stdout
    assert proc.stdout.count("  ok  ") >= 3, proc.stdout


def test_second_install_changes_nothing(clone):
    write_foreign(clone.main)
    install(clone.main)
    files = installed_files(clone, clone.main, clone.web)
    age_files(files)
    before = snapshot(files)
    assert len(before) == len(files)
    install(clone.main)
    install(clone.web)
    assert snapshot(files) == before
    exclude = (clone.common_dir / "info" / "exclude").read_text().splitlines()
    assert exclude.count(".claude/settings.local.json") == 1


def test_uninstall_restores_the_original_bytes(clone):
    original = write_foreign(clone.main).read_bytes()
    exclude = clone.common_dir / "info" / "exclude"
    exclude_before = exclude.read_bytes()
    install(clone.main)
    assert settings_path(clone.main).read_bytes() != original
    run_cli("send", "--to", str(clone.web), "kept across uninstall", cwd=clone.main, check=True)

    proc = uninstall(clone.main)

    assert settings_path(clone.main).read_bytes() == original
    assert not (clone.web / ".claude").exists()  # created by install, so removed
    assert exclude.read_bytes() == exclude_before
    assert not (clone.common_dir / "hooks" / "post-checkout").exists()
    assert not Path(stub_of(clone)).exists()
    assert "1 unread" in proc.stdout
    assert list((clone.mail_root / "box").glob("*/inbox/*.json"))  # the queue is kept


def test_uninstall_keeps_changes_made_after_install(clone):
    install(clone.main)
    p = settings_path(clone.web)
    data = load(p)
    data["model"] = "sonnet"
    p.write_text(json.dumps(data, indent=2) + "\n")
    uninstall(clone.main)
    assert load(p) == {"model": "sonnet"}


def test_stale_entry_is_replaced_not_duplicated(clone):
    install(clone.main)
    p = settings_path(clone.main)
    data = load(p)
    data["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] = 5
    p.write_text(json.dumps(data, indent=2) + "\n")
    proc = run_cli("doctor", cwd=clone.main)
    assert proc.returncode == 1 and "stale" in proc.stdout
    install(clone.main)
    data = load(p)
    assert len(data["hooks"]["SessionStart"]) == 1
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] == claude.HOOK_TIMEOUT


def test_force_rewrites_current_files(clone):
    install(clone.main)
    files = [settings_path(clone.main), Path(stub_of(clone))]
    age_files(files)
    before = snapshot(files)
    install(clone.main, "--force")
    after = snapshot(files)
    for f in files:
        assert after[str(f)][0] == before[str(f)][0]
        assert after[str(f)][1] != before[str(f)][1]


def test_stub_is_refreshed_when_it_differs(clone):
    install(clone.main)
    stub = Path(stub_of(clone))
    good = stub.read_bytes()
    # a stub of the template before the shared one (hooks/claude-hook.sh, version 7), and an edited one
    older = good.replace(b"# git-korus-mail hook stub, ID: ", b"# git-korus-mail claude-hook template-version=7\n# ")
    edited = good.replace(b"\nfast_events='", b"\nfast_events='Bogus ")
    for stale in (older, edited):
        assert stale != good
        stub.write_bytes(stale)
        install(clone.main)
        assert stub.read_bytes() == good


def test_git_worktree_add_wires_the_new_worktree(clone):
    install(clone.main)
    new = clone.add_worktree("docs")
    data = load(settings_path(new))
    assert claude.check_settings(data, stub_of(clone)) == []
    uninstall(clone.main)
    assert not settings_path(new).exists()


def test_existing_post_checkout_hook_still_runs_and_is_restored(clone, tmp_path):
    hook = clone.common_dir / "hooks" / "post-checkout"
    log = tmp_path / "legacy.log"
    hook.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexit 3\n')
    hook.chmod(0o755)
    original = hook.read_bytes()
    proc = install(clone.main)
    assert "post-checkout.legacy" in proc.stdout
    assert (clone.common_dir / "hooks" / "post-checkout.legacy").read_bytes() == original

    res = git("worktree", "add", "-q", str(tmp_path / "docs"), "-b", "docs", cwd=clone.main, check=False)
    assert res.returncode == 3  # the legacy hook's status is the hook's status
    assert log.read_text().startswith("0" * 40 + " ")  # it ran, with git's arguments
    assert claude.check_settings(load(settings_path(tmp_path / "docs")), stub_of(clone)) == []
    git("checkout", "-q", "-b", "other", cwd=clone.main, check=False)
    assert len(log.read_text().splitlines()) == 2

    uninstall(clone.main)
    assert hook.read_bytes() == original
    assert not (clone.common_dir / "hooks" / "post-checkout.legacy").exists()


def test_core_hooks_path_absolute(clone, tmp_path):
    hooks = tmp_path / "shared-hooks"
    git("config", "core.hooksPath", str(hooks), cwd=clone.main)
    proc = install(clone.main)
    assert "core.hooksPath" in proc.stdout
    assert (hooks / "post-checkout").exists()
    assert not (clone.common_dir / "hooks" / "post-checkout").exists()
    new = clone.add_worktree("docs")
    assert claude.check_settings(load(settings_path(new)), stub_of(clone)) == []
    uninstall(clone.main)
    assert not hooks.exists()  # install created the directory, so uninstall removes it


def test_core_hooks_path_relative(clone):
    git("config", "core.hooksPath", ".githooks", cwd=clone.main)
    proc = install(clone.main)
    assert (clone.main / ".githooks" / "post-checkout").exists()
    assert "relative" in proc.stdout


def test_unwritable_hooks_dir_is_explained(clone, tmp_path):
    if os.geteuid() == 0:
        # root writes anywhere; a file where the directory should be is unwritable for all
        blocker = tmp_path / "blocked"
        blocker.write_text("")
        git("config", "core.hooksPath", str(blocker / "hooks"), cwd=clone.main)
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        git("config", "core.hooksPath", str(ro), cwd=clone.main)
    proc = install(clone.main)
    assert "after each `git worktree add`" in " ".join(proc.stdout.split())  # wrapped at 100 columns
    assert claude.check_settings(load(settings_path(clone.main)), stub_of(clone)) == []


def test_stub_prints_fault_json_when_helper_is_gone(clone, tmp_path):
    helper = make_helper_copy(tmp_path / "we'ird \"dir\\x")
    proc = run_cli_with(helper, "install", cwd=clone.main)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert str(helper) in Path(stub_of(clone)).read_text() or "we'\\''ird" in Path(stub_of(clone)).read_text()
    helper.unlink()
    command = load(settings_path(clone.main))["hooks"]
    for event in EVENTS:
        cmd = next(h["command"] for g in command[event] for h in g["hooks"] if h["command"].startswith("'"))
        res = run_stub(cmd, clone.main, event=event, path="/usr/bin:/bin")
        assert res.returncode == 0
        if event not in ("SessionStart", "Stop"):
            # said where a reader decides, not at every prompt and tool call
            assert res.stdout == "", event
            continue
        answer = json.loads(res.stdout)
        assert "helper not found" in answer["systemMessage"]
        assert str(helper) in answer["systemMessage"]  # the path survives quoting, quotes and all
        if event == "SessionStart":
            assert answer["hookSpecificOutput"] == {"hookEventName": event,
                                                    "additionalContext": answer["systemMessage"]}
        else:
            assert set(answer) == {"systemMessage"}
    # with git-korus-mail back on PATH the stub falls back to it
    cmd = claude.hook_command(stub_of(clone), "SessionStart")
    res = run_stub(cmd, clone.main, path=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    assert "is empty" in json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]


def run_cli_with(helper, *args, cwd):
    import subprocess
    return subprocess.run([str(helper), *args], cwd=cwd, capture_output=True, text=True)


def test_verify_fails_when_the_drain_answers_garbage(clone, tmp_path):
    helper = make_fake_helper(tmp_path / "bin", "not json\n")
    proc = run_cli_with(helper, "install", cwd=clone.main)
    assert proc.returncode == 1
    assert "problem" in proc.stdout and "not JSON" in proc.stdout


def test_install_from_subdirectory_and_linked_worktree_agree(clone):
    sub = clone.main / "sub"
    sub.mkdir()
    files = installed_files(clone, clone.main, clone.web)

    def state():
        out = {}
        for p in files:
            if p.exists():
                data = p.read_bytes()
                out[str(p)] = data
        return out

    first = install(sub).stdout
    from_sub = state()
    uninstall(clone.main)
    second = install(clone.web).stdout
    assert state() == from_sub
    assert first == second
    assert len(from_sub) == len(files)


def test_invalid_settings_json_is_left_untouched(clone):
    p = write_foreign(clone.main, '{"model": "opus",,}\n')
    before = p.read_bytes()
    proc = install(clone.main, check=False)
    assert proc.returncode == 1
    assert str(p) in proc.stderr and "not valid JSON" in proc.stderr
    assert p.read_bytes() == before


def test_settings_of_the_wrong_shape_are_left_untouched(clone):
    p = write_foreign(clone.main, '{"hooks": ["not", "an", "object"]}\n')
    before = p.read_bytes()
    proc = install(clone.main, check=False)
    assert proc.returncode == 1 and '"hooks" is not an object' in proc.stderr
    assert p.read_bytes() == before


def test_purge_needs_yes_off_a_tty(clone):
    install(clone.main)
    run_cli("send", "--to", str(clone.web), "x", cwd=clone.main, check=True)
    proc = uninstall(clone.main, "--purge", check=False)
    assert proc.returncode == 1 and "--yes" in proc.stderr
    assert clone.mail_root.exists()
    assert claude.check_settings(load(settings_path(clone.main)), stub_of(clone)) == []  # nothing changed

    proc = uninstall(clone.main, "--purge", "--yes")
    assert "1 queued" in proc.stdout
    assert not clone.mail_root.exists()
    assert not settings_path(clone.main).exists()


def test_user_scope(clone, hermetic_env):
    user_settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    user_settings.parent.mkdir(parents=True)
    user_settings.write_text('{\n  "theme": "dark"\n}\n')
    original = user_settings.read_bytes()
    install(clone.web, "--scope", "user")
    data = load(user_settings)
    stub = stub_of(clone)
    assert data["theme"] == "dark"
    assert claude.check_settings(data, stub, str(clone.main)) == []
    assert not settings_path(clone.main).exists()  # user scope leaves the worktrees alone
    cmd = our_commands(data, stub)["SessionStart"][0]
    assert cmd.endswith(f"--repo '{clone.main}'")
    outside = hermetic_env / "projects"
    outside.mkdir()
    res = run_stub(cmd, outside)
    assert claude_protocol.check_answer("SessionStart", res.stdout) is None, res.stdout + res.stderr
    assert run_cli("doctor", cwd=clone.main).returncode == 0

    uninstall(clone.main, "--scope", "user")
    assert user_settings.read_bytes() == original
    assert not Path(stub).exists()


def test_user_and_local_scope_share_the_stub(clone):
    install(clone.main)
    install(clone.main, "--scope", "user")
    uninstall(clone.main)
    assert Path(stub_of(clone)).exists()  # the user scope still calls it
    proc = uninstall(clone.main, "--purge", "--yes", check=False)
    assert proc.returncode == 1 and "--scope user" in proc.stderr
    uninstall(clone.main, "--scope", "user")
    assert not Path(stub_of(clone)).exists()


FOREIGN_STOP = {"hooks": [{"type": "command", "command": "echo hi"}]}


@pytest.mark.parametrize("settings", [{}, {"x": 1, "hooks": {"Stop": [FOREIGN_STOP]}}])
def test_merge_then_remove_is_identity(settings):
    stub = "/r/.git/mail/hooks/claude-hook"
    merged = claude.merge_settings(settings, stub)
    assert claude.merge_settings(merged, stub) == merged
    removed, n = claude.remove_settings(merged, stub)
    assert n == len(EVENTS) and removed == settings


def test_stub_of_reads_quoted_paths():
    stub = "/a b/it's/.git/mail/hooks/claude-hook"
    assert claude.stub_of({"type": "command", "command": claude.hook_command(stub, "Stop", "/x'y")}) == stub
    assert claude.stub_of({"type": "command", "command": "'/other/hook' Stop"}) is None
    assert claude.stub_of({"type": "command", "command": f"echo '{stub}'"}) is None


def test_concurrent_installs_leave_one_entry_per_event(clone):
    import subprocess
    more = [clone.add_worktree(f"w{i}") for i in range(2)]
    worktrees = [clone.main, clone.web, *more]
    procs = [subprocess.Popen([sys.executable, "-m", "git_korus_mail", "install"], cwd=wt,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for wt in worktrees * 2]
    results = [p.communicate() + (p.returncode,) for p in procs]
    assert all(rc == 0 for _o, _e, rc in results), results
    stub = stub_of(clone)
    for wt in worktrees:
        assert our_commands(load(settings_path(wt)), stub) == {ev: [f"'{stub}' {ev}"] for ev in EVENTS}
    record = load(clone.mail_root / "hooks" / "installed.json")
    assert sorted(record["scopes"]["local"]["files"]) == sorted(str(settings_path(w)) for w in worktrees)
    exclude = (clone.common_dir / "info" / "exclude").read_text().splitlines()
    assert exclude.count(".claude/settings.local.json") == 1


@pytest.mark.parametrize("how,why", [
    ("interpreter-gone", "its Python interpreter {interp} is gone"),
    ("unimportable", "No module named 'git_korus_mail'"),
])
@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_stub_reports_a_helper_that_cannot_run(clone, tmp_path, how, why, shell):
    from install_fixtures import break_helper
    helper = make_helper_copy(tmp_path / "venv" / "bin")
    assert run_cli_with(helper, "install", cwd=clone.main).returncode == 0
    break_helper(helper, how)
    why = why.format(interp=helper.parent / "gone-venv" / "bin" / "python")
    command = load(settings_path(clone.main))["hooks"]
    for event in EVENTS:
        cmd = next(h["command"] for g in command[event] for h in g["hooks"] if h["command"].startswith("'"))
        res = run_stub_with(shell, cmd, clone.web if event == "Stop" else clone.main, event)
        assert res.returncode == 0, res.stderr
        if event not in ("SessionStart", "Stop"):
            assert res.stdout == "", (event, res.stdout)  # said where a reader decides, not every turn
            continue
        answer = json.loads(res.stdout)
        text = answer["systemMessage"]
        assert text.startswith("git korus-mail: ") and "mail is not being delivered" in text, text
        assert why in text, text
        # advice that can work here: this venv's own reinstall, then install for this clone
        assert "reinstall it: " in text and "pipx install git-korus-mail" not in text, text
        assert f"{helper} install --repo {os.path.realpath(clone.main)}" in text, text
        if event == "SessionStart":
            assert answer["hookSpecificOutput"] == {"hookEventName": "SessionStart", "additionalContext": text}
        else:
            assert set(answer) == {"systemMessage"}


def run_stub_with(shell, command, cwd, event, stdin=None):
    import subprocess
    payload = stdin if stdin is not None else json.dumps(
        {"session_id": "s-test-1", "transcript_path": "", "cwd": str(cwd), "hook_event_name": event,
         **({"source": "startup"} if event == "SessionStart" else {})})
    return subprocess.run([shell, "-c", command], cwd=cwd, input=payload, capture_output=True, text=True,
                          timeout=60)


def test_stub_passes_a_good_answer_through_unchanged_and_hands_over_stdin(clone, tmp_path):
    # a helper that installs for real, and whose drain answers with what it read on stdin
    helper = tmp_path / "bin" / "git-korus-mail"
    helper.parent.mkdir()
    helper.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "if sys.argv[1:2] == ['drain']:\n"
        "    got = json.loads(sys.stdin.read())\n"
        "    sys.stdout.write(json.dumps({'systemMessage': 'saw ' + got['session_id'] + ' \\\\ %s \"q\"',\n"
        "                                 'args': sys.argv[2:]}) + '\\n')\n"
        "    sys.exit(int(got.get('rc', 0)))\n"
        "from git_korus_mail.cli import main\n"
        "sys.exit(main())\n")
    helper.chmod(0o755)
    proc = run_cli_with(helper, "install", cwd=clone.main)
    assert proc.returncode == 1  # its drain cannot answer install's self-test: it said so
    cmd = claude.hook_command(stub_of(clone), "UserPromptSubmit", repo="/some/where")
    for rc in (0, 3):  # an answer from a run that died later is still passed on: it may hold shown mail
        payload = json.dumps({"session_id": "sess-xyz", "hook_event_name": "UserPromptSubmit", "rc": rc})
        res = run_stub_with("sh", cmd, clone.main, "UserPromptSubmit", stdin=payload)
        assert res.returncode == 0, res.stderr
        assert res.stdout == json.dumps({"systemMessage": 'saw sess-xyz \\ %s "q"',
                                         "args": ["--client=claude", "--repo", "/some/where"]}) + "\n"


def test_install_wires_every_worktree_it_can_and_names_each_it_could_not(clone):
    docs = clone.add_worktree("docs")
    later = clone.add_worktree("zz-later")  # after the broken one in git's order
    bad_web = write_foreign(clone.web, '{"model": "opus",,}\n')
    bad_docs = write_foreign(docs, '["a list, not an object"]\n')
    before = {p: p.read_bytes() for p in (bad_web, bad_docs)}
    proc = install(clone.main, check=False)
    assert proc.returncode == 1
    for wt in (clone.main, later):  # wired, before and after the broken ones
        assert claude.check_settings(load(settings_path(wt)), stub_of(clone)) == [], wt
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("git korus-mail: not wired: ")]
    assert len(errors) == 2, proc.stderr
    assert any(os.path.realpath(clone.web) in ln and "not valid JSON" in ln for ln in errors), errors
    assert any(os.path.realpath(docs) in ln and "not a JSON object" in ln for ln in errors), errors
    assert all("fix it and run install again" in ln for ln in errors), errors
    assert {p: p.read_bytes() for p in before} == before  # never touched

    # doctor's advice can succeed: fix the named file, then install
    from test_doctor import doctor, failing
    rc, data = doctor(clone.main)
    fixes = {f["where"]: f["fix"] for f in failing(data, "wiring")}
    assert fixes[str(bad_web)] == (f"fix {bad_web} by hand (it must be a JSON object), "
                                   f"then run `git korus-mail install`"), fixes
    bad_web.write_text("{}\n")
    bad_docs.write_text("{}\n")
    assert install(clone.main, check=False).returncode == 0
    rc, data = doctor(clone.main)
    assert not failing(data, "wiring"), failing(data, "wiring")


def test_stub_reports_a_broken_git_korus_mail_found_on_path(clone, tmp_path):
    from install_fixtures import break_helper
    helper = make_helper_copy(tmp_path / "first" / "bin")
    assert run_cli_with(helper, "install", cwd=clone.main).returncode == 0
    helper.unlink()  # the baked helper is gone; another copy on PATH cannot run either
    other = make_helper_copy(tmp_path / "other" / "bin")
    break_helper(other, "interpreter-gone")
    cmd = claude.hook_command(stub_of(clone), "SessionStart")
    res = run_stub(cmd, clone.main, path=f"{other.parent}:/usr/bin:/bin")
    assert res.returncode == 0, res.stderr
    text = json.loads(res.stdout)["systemMessage"]
    assert f"{other} drain exited 127: its Python interpreter {other.parent / 'gone-venv' / 'bin' / 'python'}" \
        f" is gone" in text, text
