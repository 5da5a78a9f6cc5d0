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
    """Read the terminal until the child exits; (its output, its exit status)."""
    out = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            out += chunk
            if chunk:
                continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return out.decode("utf-8", "replace"), os.waitstatus_to_exitcode(status)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"ask did not end after Ctrl-C: {out!r}")


def _ask_at_a_terminal(argv, cwd, env):
    """`argv` as a person runs it: in a new session with a pty as its controlling terminal."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a login-less person's shell would exec just this
        try:
            os.chdir(cwd)
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
    assert "its answer, when one comes, arrives here as mail: git korus-mail inbox" in text, text
    assert f"to withdraw the question: git korus-mail cancel {short}" in text, text
    # what it said is so: the question is queued, its wait closed, and the printed id withdraws it
    from asking import queued
    assert queued(clone, clone.web, "question") == [qid]
    done = run_cli("cancel", short, cwd=clone.main, check=True)
    assert done.stdout.startswith(f"cancelled {qid} ")
    invariants.check(clone.mail_root)


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
    import subprocess
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
