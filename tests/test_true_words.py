"""Issue 25, "What it says must be true": the verdict, the faults and the words a person reads
say what is so, and each fix line, once run, makes its problem go away."""

import json
import os
import subprocess
import time

import pytest

from helpers import git, hook, run_cli
from install_fixtures import box_dir, install

import hermetic


def _only_on_path(tmp_path, *names):
    """A PATH holding only `names` (git, sh, ...) by symlink: no codex on it."""
    import shutil
    d = tmp_path / "path-bin"
    d.mkdir(exist_ok=True)
    for n in names:
        target = shutil.which(n)
        if target and not (d / n).exists():
            (d / n).symlink_to(target)
    return str(d)


# -- Python leaking into words -----------------------------------------------------------------
def test_read_says_no_and_dash_never_false_or_none(clone):
    proc = run_cli("send", "--no-wake", "--to", str(clone.web), "--", "hi", cwd=clone.main, check=True)
    msg_id = proc.stdout.split()[1]
    hook("UserPromptSubmit", clone.web, "s-words")
    out = run_cli("read", msg_id, cwd=clone.web, check=True).stdout
    assert "\nwake     no\n" in out and ", truncated no," in out, out
    for word in ("None", "False", "True"):
        assert word not in out, out


def test_safe_renders_missing_and_flags_as_words():
    from git_korus_mail.commands.text import safe
    assert (safe(None), safe(False), safe(True), safe(0), safe("x")) == ("-", "no", "yes", "0", "x")


# -- install checks before it writes -----------------------------------------------------------
def test_install_codex_without_codex_writes_nothing(clone, tmp_path):
    path = _only_on_path(tmp_path, "git", "sh", "bash", "cat", "tr", "cut", "tail")
    before = set(p for p in clone.common_dir.rglob("*"))
    exclude = (clone.common_dir / "info" / "exclude").read_bytes()
    proc = install(clone.main, "--client", "codex", check=False, env={"PATH": path})
    assert proc.returncode == 1, proc
    assert proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1 and "Codex CLI not found" in proc.stderr, proc.stderr
    assert set(p for p in clone.common_dir.rglob("*")) == before  # no stub, no record, no mail root
    assert (clone.common_dir / "info" / "exclude").read_bytes() == exclude
    assert not (clone.main / ".codex").exists() and not (clone.main / ".claude").exists()
    home = os.environ["HOME"]
    assert not os.path.exists(os.path.join(home, ".codex", "hooks.json"))
    # a later worktree add says nothing of us: nothing was wired
    added = git("worktree", "add", str(tmp_path / "later"), cwd=clone.main)
    assert "korus" not in added.stderr + added.stdout, added.stderr


def test_uninstall_says_restored_once_per_file(clone):
    settings = clone.main / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "x"}')
    install(clone.main)
    out = run_cli("uninstall", cwd=clone.main, check=True).stdout
    lines = out.splitlines()
    # the path is cut from its start to fit 100 columns (issue 25); its end names the file
    assert sum(1 for line in lines if line.startswith("settings  ") and line.endswith(
        f"{str(settings)[-40:]}  restored")) == 1, out
    assert len(lines) == len(set(lines)), out
    assert settings.read_text() == '{"model": "x"}'


# -- a drain killed once is no broken install ----------------------------------------------------
def _killing_helper(directory, how):
    """A git-korus-mail whose drain dies: "killed" by SIGKILL (the OOM killer, a time limit),
    "broken" by a traceback (its package cannot be imported), exit 1. --version works in both."""
    import sys
    from install_fixtures import CONSOLE_SCRIPT
    directory.mkdir(parents=True)
    dest = directory / "git-korus-mail"
    die = "os.kill(os.getpid(), 9)" if how == "killed" else "raise ImportError('no module named x')"
    dest.write_text(f"#!{sys.executable}\nimport os, sys\nif sys.argv[1:2] == ['drain']:\n    {die}\n"
                    + CONSOLE_SCRIPT.read_text().split("\n", 1)[1])
    dest.chmod(0o755)
    return dest


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_stub_says_a_killed_drain_is_no_broken_install(clone, tmp_path, client):
    import importlib
    client_stub = importlib.import_module(f"git_korus_mail.clients.{client}.stub")
    stub_file = tmp_path / "stub"
    for how in ("killed", "broken"):
        helper = _killing_helper(tmp_path / how / "bin", how)
        stub_file.write_text(client_stub.render_stub(str(helper), str(clone.main)))
        stub_file.chmod(0o700)
        for event in ("SessionStart", "Stop"):
            payload = json.dumps(hermetic.payload(event, "s-killed", str(clone.main)))
            res = subprocess.run(["sh", "-c", f"'{stub_file}' {event}"], cwd=str(clone.main), input=payload,
                                 capture_output=True, text=True, timeout=60)
            assert res.returncode == 0, res.stderr
            text = json.loads(res.stdout)["systemMessage"]
            if how == "killed":
                assert f"{helper} drain exited 137: killed by signal 9 (out of memory, or a time limit), " \
                       "not a broken install; the mail stays queued and is shown at a later event" in text, text
                assert "reinstall" not in text and "not being delivered" not in text, text
            else:  # a helper that cannot run is still a broken install, with the advice
                assert "drain exited 1" in text and "reinstall it: " in text, text


# -- send's verdict --------------------------------------------------------------------------------
def test_send_says_dropped_when_the_receivers_limits_drop_it(clone):
    """issue 25: mail the limits dropped was reported `queued`, "not delivered: it is dropped"
    only on a second line; the sending model reads the same words as the person."""
    import sys
    install(clone.main)
    git("config", "korus-mail.loop-seconds", "600", cwd=clone.main)
    run_cli("send", "--to", str(clone.web), "--", "done", cwd=clone.main, check=True)
    hook("UserPromptSubmit", clone.web, "s-limits")
    hook("Stop", clone.web, "s-limits")  # consumed
    hook("UserPromptSubmit", clone.web, "s-limits")  # working: send waits for its next event
    p = subprocess.Popen([sys.executable, "-m", "git_korus_mail", "send", "--wait=30", "--to", str(clone.web),
                          "--", "done"], cwd=str(clone.main), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    inbox = box_dir(clone, clone.web) / "inbox"
    deadline = time.monotonic() + 30
    while not any(n.endswith(".json") for n in os.listdir(inbox)):
        assert time.monotonic() < deadline and p.poll() is None, p.poll()
        time.sleep(0.02)
    answer, _ = hook("PostToolUse", clone.web, "s-limits")  # the same text again: a loop, dropped
    assert "dropped by its limits (1 as loop" in hermetic.context_of(answer)
    out, err = p.communicate(timeout=60)
    first, second = out.split("\n", 1)
    second = " ".join(second.split())  # wrapped at 100 columns (issue 25)
    assert p.returncode == 0 and err == "", err
    assert first.startswith("dropped ") and first.endswith(" (web)"), out
    assert second.startswith("dropped, as of ") and ": the receiver's limits dropped it (loop: " in second, out
    assert second.endswith("; it is shown to nobody") and "queued" not in out, out


def test_send_says_nothing_is_wired_after_uninstall_of_both_scopes(clone):
    """issue 25: after uninstall, send still said "it is shown at their next prompt"."""
    hook("Stop", clone.web, "s-idle")  # an idle session there, from before the uninstall
    install(clone.main)
    install(clone.main, "--scope", "user")
    out = run_cli("send", "--to", str(clone.web), "--", "wired", cwd=clone.main, check=True).stdout
    out = " ".join(out.split())  # lines are wrapped at 100 columns (issue 25)
    assert "nothing is wired" not in out and "it is shown at their next prompt" in out, out
    run_cli("uninstall", cwd=clone.main, check=True)
    out = run_cli("send", "--to", str(clone.web), "--", "user scope only", cwd=clone.main, check=True).stdout
    assert "nothing is wired" not in out, out  # the user scope still wires it
    run_cli("uninstall", "--scope", "user", cwd=clone.main, check=True)
    out = run_cli("send", "--to", str(clone.web), "--", "unwired", cwd=clone.main, check=True).stdout
    assert " ".join(out.split()).endswith(": nothing is wired to show it: no hook is installed in this clone; "
                                          "`git korus-mail install` wires one"), out
    assert "next prompt" not in out, out


def test_plain_uninstall_after_a_user_scope_install_says_it_stays(clone):
    """issue 25: a plain `uninstall` after `install --scope user` left the user scope's wiring
    in place in silence. One scope is undone at a time (as git config's); the other is named."""
    install(clone.main, "--scope", "user")
    out = run_cli("uninstall", cwd=clone.main, check=True).stdout
    assert "note: the user scope still wires this clone's worktrees, so mail is still shown;\n" \
           "  `git korus-mail uninstall --scope user` removes it\n" in out, out
    out = run_cli("uninstall", "--scope", "user", cwd=clone.main, check=True).stdout
    assert "still wires" not in out, out
    install(clone.main)
    install(clone.main, "--scope", "user")
    out = run_cli("uninstall", "--scope", "user", cwd=clone.main, check=True).stdout
    assert "note: the local scope still wires this clone's worktrees, so mail is still shown;\n  " \
           "`git korus-mail uninstall` removes it\n" in out, out


# -- doctor: every fix line, once run, makes its problem go away ------------------------------------
def _doctor(cwd, env=None):
    proc = run_cli("doctor", "--json", cwd=cwd, env=env)
    return proc.returncode, json.loads(proc.stdout)


def _problems(data):
    return [f for f in data["findings"] if not f["ok"]]


def _run_fixes(cwd, data, env=None):
    """Run each problem's fix line that is a command of ours, as a person would copy it."""
    import shlex
    for fix in sorted({f["fix"] for f in _problems(data) if (f["fix"] or "").startswith("git korus-mail ")}):
        args = shlex.split(fix)[2:]
        proc = run_cli(*args, cwd=cwd, env=env)
        assert proc.returncode == 0, (fix, proc.stdout, proc.stderr)


def test_doctor_in_a_bare_repository_is_healthy_once_its_fix_ran(clone, tmp_path):
    """issue 25: in a bare repository doctor's problem stayed after `install` exited 0."""
    bare = tmp_path / "bare.git"
    git("clone", "-q", "--bare", str(clone.main), str(bare), cwd=tmp_path)
    rc, data = _doctor(bare)
    assert rc == 1 and [f["fix"] for f in _problems(data)] == ["git korus-mail install"], _problems(data)
    _run_fixes(bare, data)
    rc, data = _doctor(bare)
    assert rc == 0 and not _problems(data), _problems(data)
    [hook_finding] = [f for f in data["findings"] if f["check"] == "wiring"]
    assert hook_finding["detail"] == ("no worktree to wire yet (a bare repository): wires worktrees that "
                                      "`git worktree add` makes"), hook_finding
    added = git("worktree", "add", str(tmp_path / "wt"), cwd=bare)
    assert "wired" in added.stderr, added.stderr
    rc, data = _doctor(bare)
    assert rc == 0 and not _problems(data), _problems(data)


def test_doctor_does_not_call_a_create_box_unread_when_a_user_scope_session_reads_it(clone, tmp_path):
    """issue 25: a `--create` box was called "nobody will read them", yet a user-scope session
    there read it."""
    other = tmp_path / "scratch"
    other.mkdir()
    install(clone.main, "--scope", "user")
    run_cli("send", "--create", "--to", str(other), "--", "first", cwd=clone.main, check=True)
    answer, _ = hook("UserPromptSubmit", other, "s-user", repo=str(clone.main))
    assert "first" in hermetic.context_of(answer)
    hook("Stop", other, "s-user", repo=str(clone.main))
    hook("SessionEnd", other, "s-user", repo=str(clone.main))
    run_cli("send", "--create", "--to", str(other), "--", "second", cwd=clone.main, check=True)
    rc, data = _doctor(clone.main)
    stranded = [f for f in data["findings"] if f["check"] == "stranded"]
    assert len(stranded) == 1 and stranded[0]["ok"], stranded
    assert "nobody will read them" not in stranded[0]["detail"], stranded
    assert "read there under the user scope's wiring (last by session s-user)" in stranded[0]["detail"], stranded


def test_each_fix_line_of_ours_once_run_makes_its_problem_go_away(clone):
    """issue 25: run every `git korus-mail ...` fix line doctor gives, then doctor again."""
    from install_fixtures import settings_path, stub_of
    install(clone.main)
    os.unlink(settings_path(clone.web))  # a worktree unwired
    stub = stub_of(clone)
    with open(stub, "a") as f:
        f.write("# edited\n")  # the stub differs from the template
    os.unlink(clone.common_dir / "hooks" / "post-checkout")  # new worktrees would not be wired
    run_cli("off", cwd=clone.main, check=True)  # delivery off
    rc, data = _doctor(clone.main)
    fixes = sorted({f["fix"] for f in _problems(data)})
    assert rc == 1 and fixes == ["git korus-mail install", "git korus-mail on"], _problems(data)
    assert len(_problems(data)) >= 4, _problems(data)
    _run_fixes(clone.main, data)
    rc, data = _doctor(clone.main)
    assert rc == 0 and not _problems(data), _problems(data)


def test_the_verdict_names_a_session_in_words_never_none():
    from git_korus_mail.core import verdict
    assert verdict._session(None) == "a session that named no id"
    assert verdict._session("s-1\n") == "session s-1\\u000a"  # from disk: escaped as the drain escapes
