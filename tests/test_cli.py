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
    assert rest.lstrip("\n").startswith("usage:\n") and f"git-korus-mail {args[0]} " in rest, proc.stderr
    assert proc.stdout == ""
    assert not _inboxes(clone)


def test_drain_help_shows_help_and_reads_no_stdin(clone):
    for flag in ("-h", "--help"):
        proc = subprocess.run([PYTHON, "-m", "git_korus_mail", "drain", flag], cwd=clone.main,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("usage:\n  git-korus-mail drain [--client=<name>] [--repo=<path>]"), proc.stdout
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
