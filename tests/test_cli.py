"""The CLI's promises, through the real command in separate processes: usage errors as git
reports them (one line, the usage, exit 129), help for every command, quiet closed pipes."""

import os
import subprocess
import sys

import pytest

from helpers import PYTHON, run_cli


def _inboxes(clone):
    box = clone.mail_root / "box"
    return [p for p in box.glob("*/inbox/*")] if box.exists() else []


@pytest.mark.parametrize("args,needle", [
    (["send", "--to", ".", "--ttl", "0", "hi"], "--ttl 0: out of range"),
    (["send", "--to", ".", "--ttl", "abc", "hi"], "--ttl 'abc': minutes as a whole number"),
    (["send", "--to", ".", "--ttl", "-5", "hi"], "--ttl -5: out of range"),
    (["send", "--to", ".", "--kind", "Bad/Kind", "hi"], "--kind 'Bad/Kind'"),
    (["send", "--to", ".", "--kind", "", "hi"], "--kind '': use a lowercase word"),
    (["send", "--to", ".", "--session", "../x", "hi"], "--session '../x': not a session id"),
    (["send"] + ["--to=."] * 9 + ["hi"], "9 destinations; at most 8"),
    (["install", "--scope", "galaxy"], "--scope 'galaxy': expected local or user"),
    (["uninstall", "--scope", "galaxy"], "--scope 'galaxy': expected local or user"),
])
def test_invalid_option_value_is_a_usage_error(clone, args, needle):
    proc = run_cli(*args, cwd=clone.main)
    assert proc.returncode == 129, proc.stderr
    first, rest = proc.stderr.split("\n", 1)
    assert first.startswith("git korus-mail: ") and needle in first, proc.stderr
    # then the command's own usage, as for any other usage error
    assert rest.lstrip("\n").startswith("usage:\n") and f"git korus-mail {args[0]} " in rest, proc.stderr
    assert proc.stdout == ""
    assert not _inboxes(clone)


def test_drain_help_shows_help_and_reads_no_stdin(clone):
    for flag, code in (("-h", 129), ("--help", 0)):
        proc = subprocess.run([PYTHON, "-m", "git_korus_mail", "drain", flag], cwd=clone.main,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        assert proc.returncode == code, proc.stderr
        assert proc.stdout.startswith("usage:\n  git korus-mail drain [--client=<name>] [--repo=<path>]"), proc.stdout
    assert "drain" in run_cli("--help", cwd=clone.main).stdout


@pytest.mark.parametrize("args", [["list"], ["status"], ["--help"], ["send", "-h"], ["list", "--json"]])
def test_closed_stdout_pipe_is_quiet(clone, args):
    # `git korus-mail list | head -n 0`: the reader is gone before the output is flushed.
    # Buffered stdout is what a user has (PYTHONUNBUFFERED would hide the fault).
    run_cli("send", "--to", "../web", "hello", cwd=clone.main, check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    cmd = " ".join(["'" + sys.executable + "'", "-m", "git_korus_mail", *args])
    proc = subprocess.run(["sh", "-c", f"{cmd} | head -n 0; echo \"rc=$?\" >&2"], cwd=clone.main, env=env,
                          capture_output=True, text=True, timeout=60)
    # sh reports head's status; ours is in the pipeline: run it again with a closed pipe directly
    r, w = os.pipe()
    os.close(r)
    try:
        direct = subprocess.run([sys.executable, "-m", "git_korus_mail", *args], cwd=clone.main, env=env,
                                stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(w)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert direct.returncode == 0 and direct.stderr == "", (direct.returncode, direct.stderr)


def test_list_says_how_many_sessions_it_left_out_and_all_shows_them(clone):
    from helpers import hook
    for i in range(7):
        hook("UserPromptSubmit", clone.web, f"sess-{i}")
    cut = run_cli("list", cwd=clone.main, check=True).stdout
    assert cut.count("    session sess-") == 5
    assert "    ... and 2 more sessions (--all shows every one)\n" in cut
    full = run_cli("list", "--all", cwd=clone.main, check=True).stdout
    assert full.count("    session sess-") == 7 and "more sessions" not in full


def test_status_says_how_many_sent_messages_it_left_out_and_all_shows_them(clone):
    import json
    run_cli("send", "--to", "../web", "first", cwd=clone.main, check=True)
    from git_korus_mail.core import keys
    sent = clone.mail_root / "box" / keys.key_for(str(clone.main)).name / "sent"
    [rec_file] = list(sent.iterdir())
    rec = json.loads(rec_file.read_text())
    for i in range(21):  # older records of the same shape as send writes
        old = dict(rec, id=f"0000-{i:04d}")
        (sent / f"{old['id']}.json").write_text(json.dumps(old))
    cut = run_cli("status", cwd=clone.main, check=True).stdout
    assert cut.count("  to ../web  ") == 20 and "sent from this worktree: 20 of 22, newest first" in cut
    assert "  ... and 2 more messages (--all shows every one)\n" in cut
    full = run_cli("status", "--all", cwd=clone.main, check=True).stdout
    assert full.count("  to ../web  ") == 22 and "more message" not in full
    data = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    assert data["sent_total"] == 22 and len(data["sent"]) == 20


# -- git's grammar (issue 25) ------------------------------------------------------------
def test_a_typo_gets_gits_did_you_mean_not_the_usage(clone):
    proc = run_cli("sned", "--to", "../web", "hi", cwd=clone.main)
    assert (proc.returncode, proc.stdout) == (1, "")  # git's status for `git sned`
    assert proc.stderr == ("git korus-mail: 'sned' is not a korus-mail command. See 'git korus-mail --help'.\n"
                           "\nThe most similar command is\n\tsend\n")
    far = run_cli("xyzzy", cwd=clone.main)
    assert far.returncode == 1 and far.stderr.count("\n") == 1 and "similar" not in far.stderr
    assert not _inboxes(clone)


@pytest.mark.parametrize("args,first", [
    (["read"], "'read' needs <id>"),
    (["reply"], "'reply' needs <id>"),
    (["forward", "--to", "."], "'forward' needs <box>"),
    (["read", "a1", "b2"], "unexpected argument 'b2' for 'read'"),
    (["list", "extra"], "unexpected argument 'extra' for 'list'"),
    (["send", "--to", ".", "a", "b"], "unexpected argument 'b' for 'send'"),
    (["send", "--to"], "option '--to' of 'send' needs a value"),
    (["send", "--frobnicate", "--to", ".", "x"], "unknown option '--frobnicate' for 'send'"),
    (["send", "--json", "--json", "--to", ".", "x"], "option '--json' of 'send' given more than once"),
    (["completion", "tcsh"], "'completion' takes one of bash, zsh, fish, not 'tcsh'"),
    (["send", "--to", ".", "--all-worktrees", "x"], "'--to' and '--all-worktrees' of 'send' exclude each other"),
    (["completion", "bash", "--ids=read"], "unexpected argument 'bash' for 'completion --ids'"),
    (["completion"], "'completion' needs bash|zsh|fish"),
    (["--version", "extra"], "unexpected argument 'extra' after '--version'"),
])
def test_a_usage_error_names_the_argument(clone, args, first):
    proc = run_cli(*args, cwd=clone.main)
    assert proc.returncode == 129, proc.stderr
    assert proc.stderr.split("\n", 1)[0] == f"git korus-mail: {first}"
    assert "missing or unexpected" not in proc.stderr and not _inboxes(clone)


def test_usage_names_git_korus_mail_and_fits_100_columns(clone):
    from git_korus_mail import cli
    for command in sorted(cli.COMMANDS) + ["drain"]:
        proc = run_cli("help", command, cwd=clone.main)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"usage:\n  git korus-mail {command} "), proc.stdout
        assert "git-korus-mail" not in proc.stdout
        wide = [line for line in proc.stdout.splitlines() if len(line) > 100]
        assert not wide, (command, wide)
    assert all(len(line) <= 100 for line in cli.USAGE.splitlines())


def test_help_command_and_dash_h_show_the_commands_usage_and_exit_as_gits(clone):
    gits = subprocess.run(["git", "commit", "-h"], cwd=clone.main, capture_output=True, text=True)
    # git's own, here: 129 (the usage goes to stderr before git 2.41 and to stdout since; ours to stdout)
    assert gits.returncode == 129 and (gits.stdout or gits.stderr).startswith("usage: git commit")
    from git_korus_mail import cli
    helped = run_cli("help", "send", cwd=clone.main)
    assert (helped.returncode, helped.stdout) == (0, cli.COMMANDS["send"])
    dash_h = run_cli("send", "-h", cwd=clone.main)
    assert (dash_h.returncode, dash_h.stdout) == (gits.returncode, cli.COMMANDS["send"])
    assert run_cli("send", "--help", cwd=clone.main).returncode == 0  # asked for in full: not a mistake
    unknown = run_cli("help", "sned", cwd=clone.main)
    assert unknown.returncode == 1 and "\tsend\n" in unknown.stderr


def test_drain_typed_at_a_terminal_says_what_it_is_and_exits(clone):
    import pty
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([PYTHON, "-m", "git_korus_mail", "drain"], cwd=clone.main, stdin=follower,
                              capture_output=True, text=True, timeout=30)
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 129 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "hook entry point" in proc.stderr and "not for typing" in proc.stderr
