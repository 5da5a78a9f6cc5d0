"""Issue 25, "ask on a terminal": a person who runs `ask` at a real terminal is told in one line
what it waits for and what Ctrl-C leaves; Ctrl-C (a real SIGINT, made by the terminal's line
discipline from the ^C typed into a pty) prints the question's id, its state, and how to get the
answer or withdraw it, never a traceback, also through `git korus-mail` (git forwards SIGINT
too, so the command gets it twice); and the timeout advice suits whoever runs the command."""

import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time

import pytest

from asking import wait_question, working
from helpers import PYTHON, REPO_ROOT, run_cli

import invariants


def _read_until(fd, want, timeout=30.0):
    got = b""
    deadline = time.time() + timeout
    while time.time() < deadline and want not in got:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            got += chunk
    return got.decode("utf-8", "replace")


def _drain(fd, pid, timeout=20.0):
    """Read the terminal until every process that holds it is gone (the read fails: a child
    git left behind may still write after git itself exits); (the output, git's or ask's exit)."""
    out = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: no process holds the terminal any more
            break
        if not chunk:
            break
        out += chunk
    else:
        os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"ask did not end after Ctrl-C: {out!r}")
    _, status = os.waitpid(pid, 0)
    return out.decode("utf-8", "replace"), os.waitstatus_to_exitcode(status)


def _ask_at_a_terminal(argv, cwd, env):
    """`argv` as a person runs it: in a new session with a pty as its controlling terminal."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a login-less person's shell would exec just this
        try:
            os.chdir(cwd)
            # an interactive shell runs its foreground job with Ctrl-C's signals at their
            # defaults; this test may itself run with them ignored (a job started with `&` by a
            # shell without job control), which git's own SIGINT handler would then restore and
            # not die of: git exits 128, "waitpid ... No child processes", after its child ended
            for sig in (signal.SIGINT, signal.SIGQUIT):
                signal.signal(sig, signal.SIG_DFL)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def _person_env(tmp_path):
    """No client around: a person at a terminal (no CLAUDE_PID, no CODEX_SESSION_ID); our
    git-korus-mail first on PATH, for `git korus-mail`."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_PID", "CODEX_SESSION_ID", "CODEX_THREAD_ID")}
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    tool = bindir / "git-korus-mail"
    tool.write_text(f"#!/bin/sh\nexec {PYTHON} -m git_korus_mail \"$@\"\n")
    tool.chmod(0o755)
    env["PATH"] = f"{bindir}:{os.environ['PATH']}"
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["TERM"] = "dumb"
    return env


@pytest.mark.parametrize("via", ["python", "git"])
def test_ctrl_c_at_a_terminal_says_the_question_its_state_and_what_next(clone, tmp_path, via):
    if via == "git" and not shutil.which("git"):
        pytest.skip("no git")
    working(clone)  # someone there can answer: ask waits
    env = _person_env(tmp_path)
    argv = (["git", "korus-mail"] if via == "git" else [PYTHON, "-m", "git_korus_mail"])
    pid, fd = _ask_at_a_terminal(argv + ["ask", f"--to={clone.web}", "--timeout=60", "--", "ready?"],
                                 str(clone.main), env)
    first = _read_until(fd, b"Ctrl-C")
    [qid] = wait_question(clone)
    short = "…" + qid[-8:]
    assert f"waiting up to 60s for the answer to {short}; Ctrl-C stops waiting; the question stays " \
           f"queued" in first, first
    os.write(fd, b"\x03")  # ^C: the terminal sends SIGINT to the foreground process group
    rest, code = _drain(fd, pid)
    text = first + rest
    # git re-raises the SIGINT its child ended by: a shell reports 130 for both
    assert code == 130 or (via == "git" and code == -signal.SIGINT), (code, text)
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert f"interrupted: question {short} stays queued (as of " in text, text
    assert "\n  a session there is working; it is shown at its next tool call or prompt" in text, text
    assert all(len(line) <= 100 for line in text.splitlines()), text
    assert f"\n  to wait again: git korus-mail ask --again={short}" in text, text
    assert f"\n  to withdraw it: git korus-mail cancel {short}" in text, text
    assert "\n  else its answer, when one comes, arrives here as mail (git korus-mail inbox)" in text, text
    # what it said is so: the question is queued, its wait closed; the printed line waits again
    # (and gets the answer that comes meanwhile), and the printed id withdraws it
    from asking import queued
    assert queued(clone, clone.web, "question") == [qid]
    assert not list((clone.mail_root / "waits").glob("*.json"))
    waiting = subprocess.Popen([PYTHON, "-m", "git_korus_mail", "ask", f"--again={short}", "--timeout=60"],
                               cwd=str(clone.main), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not list((clone.mail_root / "waits").glob("*.json")) and time.time() < deadline:
        time.sleep(0.05)
    assert queued(clone, clone.web, "question") == [qid]  # nothing queued again
    run_cli("reply", short, "yes, ready", cwd=clone.web, check=True)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, (out, err)
    assert out.startswith(f"status answered (an explicit reply) · answer to question {qid}") and "yes, ready" in out
    invariants.check(clone.mail_root)


def test_the_printed_id_withdraws_the_question_after_ctrl_c(clone, tmp_path):
    working(clone)
    pid, fd = _ask_at_a_terminal([PYTHON, "-m", "git_korus_mail", "ask", f"--to={clone.web}", "--timeout=60",
                                  "--", "ready?"], str(clone.main), _person_env(tmp_path))
    _read_until(fd, b"Ctrl-C")
    [qid] = wait_question(clone)
    os.write(fd, b"\x03")
    _drain(fd, pid)
    done = run_cli("cancel", "…" + qid[-8:], cwd=clone.main, check=True)
    assert done.stdout.startswith(f"cancelled {qid} ")
    invariants.check(clone.mail_root)


def test_again_with_an_id_that_is_no_question_from_here_is_one_line(clone):
    proc = run_cli("send", "--no-wake", "--to", str(clone.web), "--", "a note", cwd=clone.main, check=True)
    note = proc.stdout.split()[1]
    for given in (note, "…deadbeef"):
        bad = run_cli("ask", f"--again={given}", "--timeout=1", cwd=clone.main)
        assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "no question asked from this worktree" \
            in bad.stderr, bad.stderr
    assert not (clone.mail_root / "waits").exists() or not list((clone.mail_root / "waits").glob("*.json"))


def test_no_terminal_line_when_not_a_terminal(clone):
    """Under a client the command's stderr is no terminal: no waiting line for a model to read."""
    proc = run_cli("ask", f"--to={clone.web}", "--timeout=1", "--", "anyone?", cwd=clone.main)
    assert "Ctrl-C" not in proc.stderr and "waiting up to" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("runner,env,says,never", [
    ("claude", {}, "give the Bash tool call a timeout (up to 600000 ms)", "write_stdin"),
    ("codex", {"CODEX_SESSION_ID": "019a0000-0000-7000-8000-000000000001"}, "poll it with write_stdin",
     "Bash tool"),
    (None, {}, "a longer --timeout waits longer; the answer comes as mail all the same", "Bash tool"),
])
def test_timeout_advice_suits_who_runs_the_command(clone, runner, env, says, never):
    working(clone)
    full = {k: v for k, v in os.environ.items() if runner == "claude" or k != "CLAUDE_PID"}
    full.update(env)
    proc = subprocess.run([PYTHON, "-m", "git_korus_mail", "ask", f"--to={clone.web}", "--timeout=1", "--",
                           "anyone?"], cwd=str(clone.main), env=full, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    flat = " ".join(proc.stdout.split())
    assert says in flat and never not in flat, flat


def test_runner_of():
    from git_korus_mail.commands.ask import runner_of
    assert runner_of("claude:123-4-ab", None, {}) == "claude"
    assert runner_of("codex:9-8-cd", "s", {}) == "codex"
    assert runner_of("session:77", None, {}) is None
    assert runner_of(None, "019a", {"CODEX_SESSION_ID": "019a"}) == "codex"
    assert sys.version_info >= (3, 9)
