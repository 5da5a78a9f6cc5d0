"""Codex's sh fast path (docs/HOOKS.md, "Codex's key: the payload's head"): a Codex hook event
with nothing new for its launch is answered in POSIX sh without starting Python, its key the
session read from the payload's head and the stub's parent process. Held to every rule
tests/test_fastpath.py and tests/test_fastturn.py hold Claude Code's stub to: a publish in the
same clock tick, a stamp of another launch or directory, OFF, a crash between every two steps.
Real processes throughout: a `codex` process (a copy of bash by that name, holding the session's
transcript open, as launch.py proves) runs the installed stub by sh, dash and bash, the payload
on a pipe, the real drain behind it."""

import json
import os
import re
import signal
import subprocess
import time

import invariants
import pytest

from helpers import context_of, run_cli
from stubworld import (SHELLS, CodexLaunch, age, inbox_of, new_mail_is_shown_at_the_next_tool_call,
                       same_instant_mail_is_shown_at_the_next_event, send, shown_at_next_tool_call)


@pytest.fixture
def launch(clone, tmp_path):
    s = CodexLaunch(clone, clone.web, tmp=tmp_path)
    yield s
    s.close()


@pytest.fixture
def stub(launch, clone):
    """A launch after its prompt was shown a message: the box then holds nothing new for it."""
    send(clone, "first")
    answer, _ = launch.run("SessionStart")
    assert "first" in context_of(answer)
    launch.run("UserPromptSubmit", prompt="hi")
    age(inbox_of(clone, clone.web))  # as if the mail had come in a while ago
    return launch


def sessions_of(clone):
    return inbox_of(clone, clone.web).parent / "sessions"


@pytest.mark.parametrize("shell", SHELLS)
def test_a_codex_tool_call_with_nothing_new_starts_no_python(stub, clone, shell):
    answer, started = stub.run("PostToolUse", shell, tool_name="Bash", tool_response="x" * 4000)
    assert started and answer is None  # the first one runs the drain, which stamps the launch
    gen = clone.mail_root / "fast" / os.readlink(stub.stamp)
    assert os.readlink(gen / "cwd") == str(clone.web)
    for _ in range(3):
        assert stub.run("PostToolUse", shell, tool_name="Bash", tool_response="y" * 400_000) == (None, False)


@pytest.mark.parametrize("shell", SHELLS)
def test_new_mail_is_shown_at_codexs_next_tool_call(stub, clone, shell):
    new_mail_is_shown_at_the_next_tool_call(stub, clone, shell)
    invariants.check(clone.mail_root)


def test_mail_published_in_the_same_tick_as_codexs_look_is_shown_at_the_next_event(stub, clone):
    same_instant_mail_is_shown_at_the_next_event(stub, clone)


@pytest.mark.parametrize("shell", SHELLS)
def test_mail_behind_an_inbox_mtime_set_back_is_shown_at_codexs_next_tool_call(stub, clone, shell):
    stub.run("PostToolUse", shell)
    assert stub.run("PostToolUse", shell) == (None, False)
    inbox = inbox_of(clone, clone.web)
    before = inbox.stat().st_mtime_ns
    send(clone, "behind an old mtime")
    os.utime(inbox, ns=(before, before))
    shown_at_next_tool_call(stub, "behind an old mtime", shell)


def test_a_stamp_of_another_session_launch_or_directory_is_never_trusted(stub, clone, tmp_path):
    stub.run("PostToolUse")
    assert stub.run("PostToolUse") == (None, False)
    # another session in the same process: its own key, no stamp of its own yet
    assert stub.run("PostToolUse", session="019a2f00-0000-7000-8000-0000000000ff")[1]
    # another launch of the same session (a `resume` beside it): another parent, no stamp
    other = CodexLaunch(clone, clone.web, session=stub.session, tmp=tmp_path / "other")
    try:
        assert other.run("PostToolUse")[1]
    finally:
        other.close()
    # the same launch's key, from another directory: the stamp's cwd is web's
    main = CodexLaunch(clone, clone.main, session=stub.session, tmp=tmp_path / "main")
    main.proc.stdin.close()
    main.proc.wait()
    main.proc = stub.proc  # the same process runs the event, in main
    main.cwd = clone.main
    stub.proc.stdin.write(f"cd '{clone.main}'\n")
    stub.proc.stdin.flush()
    assert stub.proc.stdout.readline() == "rc=0\n"
    assert main.run("PostToolUse")[1]


def test_a_stamp_spoken_by_a_shell_between_codex_and_the_stub_is_never_written(clone, tmp_path):
    """The stub's parent is not the Codex process the drain proves (a wrapper shell in the hook's
    command): the key the stub spells names that shell, so the drain writes no stamp under it
    (core/drain_fast.py), and every event runs the drain."""
    s = CodexLaunch(clone, clone.web, tmp=tmp_path)
    try:
        send(clone, "first")
        assert "first" in context_of(s.run("SessionStart")[0])
        s.run("UserPromptSubmit", prompt="hi")
        age(inbox_of(clone, clone.web))
        for _ in range(3):
            assert s.run("PostToolUse", shell="sh -c '\"$0\" \"$@\"; true' sh")[1]  # sh <- sh <- codex
        fast = clone.mail_root / "fast"
        assert not fast.exists() or not os.listdir(fast)
    finally:
        s.close()


@pytest.mark.parametrize("head", ["spaced", "reordered", "cut", "empty"])
def test_a_payload_that_does_not_begin_with_its_session_runs_the_drain_on_the_very_bytes(stub, clone, head):
    """Whatever the head holds, the drain reads the payload the client wrote: the bytes the stub
    took are handed back in front of the rest (a message queued now is shown; a long payload
    parses whole). A head the stub cannot read a session from is never a stamp's key."""
    stub.run("PostToolUse")
    assert stub.run("PostToolUse") == (None, False)
    send(clone, f"after a {head} head")
    p = json.loads(stub.payload("PostToolUse", tool_response="z" * 3000))
    if head == "spaced":  # json.dumps's own spacing, and a trailing newline
        raw = json.dumps(p) + "\n"
    elif head == "reordered":
        raw = json.dumps(dict(reversed(list(p.items()))), separators=(",", ":"))
    elif head == "cut":  # a session id the 512 bytes of the head cut: another session, read whole
        raw = json.dumps(dict(p, session_id="s" * 600), separators=(",", ":"))
    else:
        raw = ""
    answer, started = stub.run("PostToolUse", raw=raw)
    assert started
    if head != "empty":  # (the cut one: shown to that other session, whose payload was read whole)
        assert f"after a {head} head" in context_of(answer)
        assert not [n for n in os.listdir(clone.mail_root / "fast") if n.startswith("s" * 600)]
        return
    assert context_of(answer) is None and "unusable payload" in answer["systemMessage"]
    answer, started = stub.run("PostToolUse")  # the launch's own next event: the message waits for it
    assert started and f"after a {head} head" in context_of(answer)


@pytest.mark.parametrize("size", [10, 511, 512, 513, 4096])
def test_the_drain_gets_the_payload_byte_for_byte(clone, tmp_path, size):
    """The event's identity (clients/codex/protocol._event_key) hashes the payload's bytes: the
    head taken by the stub and the rest, through its pipe, must be those very bytes around the
    512-byte edge, less only the trailing newline of a payload the head held whole, which the
    identity ignores (a payload past the head keeps it)."""
    from git_korus_mail.clients.codex import stub as codex_stub
    got = tmp_path / "got"
    helper = tmp_path / "helper"
    helper.write_text(f"#!/bin/sh\ncat > '{got}'\n")
    helper.chmod(0o700)
    path = tmp_path / "codex-hook"
    path.write_text(codex_stub.render_stub(str(helper)))
    head = b'{"session_id":"s1","x":"'
    tail = b'"}\n'
    # ASCII, and UTF-8 whose characters the 512-byte edge cuts in two (one byte of three, two of four)
    for fill in (b"y", "\u00e9\u20ac\U0001f600".encode()):
        body = (fill * size)[:max(0, size - len(head) - len(tail))]
        data = head + body + tail
        for shell in SHELLS:
            got.unlink(missing_ok=True)
            proc = subprocess.run([shell, str(path), "PostToolUse"], input=data, capture_output=True,
                                  env=dict(os.environ, LC_ALL="C.UTF-8"))
            assert proc.returncode == 0, proc.stderr
            want = data if len(data) > 512 else data.rstrip(b"\n")
            assert got.read_bytes() == want, (shell, fill)


def test_the_events_identity_ignores_a_trailing_newline_and_nothing_else():
    from git_korus_mail.clients.codex import protocol
    one = b'{"session_id":"s1","hook_event_name":"Stop","turn_id":"t1"}'
    assert protocol._event_key(one) == protocol._event_key(one + b"\n") == protocol._event_key(one + b"\n\n")
    assert protocol._event_key(one) != protocol._event_key(one.replace(b"t1", b"t2"))
    assert protocol._event_key(one) != protocol._event_key(one + b" ")


@pytest.mark.parametrize("shell", SHELLS)
def test_off_sends_codexs_events_to_python(stub, clone, shell):
    stub.run("PostToolUse", shell)
    assert stub.run("PostToolUse", shell) == (None, False)
    run_cli("off", cwd=clone.main, check=True)
    for event in ("PostToolUse", "UserPromptSubmit", "Stop"):
        assert stub.run(event, shell)[1]
    run_cli("on", cwd=clone.main, check=True)


# -- a turn with nothing new, and a worktree that never got mail -------------------------------
@pytest.mark.parametrize("shell", SHELLS)
def test_a_whole_codex_turn_with_nothing_new_starts_no_python(stub, clone, shell):
    assert stub.run("PostToolUse", shell)[1]
    assert stub.run("Stop", shell)[1]  # consumes "first" (Python) and removes the stamp
    age(inbox_of(clone, clone.web))
    assert stub.run("UserPromptSubmit", shell, prompt="next")[1]  # nothing new: the stamp, with its box link
    turn = sessions_of(clone) / f"{stub.session}.state"
    for _ in range(2):
        assert stub.run("PostToolUse", shell) == (None, False)
        assert stub.run("Stop", shell) == (None, False)
        assert re.fullmatch(r"idle Stop [0-9]+\n", turn.read_text())
        assert stub.run("UserPromptSubmit", shell, prompt="again") == (None, False)
        assert re.fullmatch(r"working UserPromptSubmit [0-9]+\n", turn.read_text())
    out = run_cli("who", cwd=clone.main, check=True).stdout
    assert "working" in out
    invariants.check(clone.mail_root)


def test_a_shown_message_sends_codexs_stop_to_python_which_consumes_it(stub, clone):
    """A message shown to the launch and not consumed: its Stop is the drain's, never the stub's."""
    assert stub.run("PostToolUse")[1]
    assert stub.run("Stop")[1]
    age(inbox_of(clone, clone.web))
    assert stub.run("UserPromptSubmit", prompt="next")[1]
    assert stub.run("PostToolUse") == (None, False)
    send(clone, "a second one")
    shown_at_next_tool_call(stub, "a second one")
    age(inbox_of(clone, clone.web))
    assert stub.run("PostToolUse")[1]  # stamped again, without the box link: one shown, not consumed
    assert stub.run("PostToolUse") == (None, False)
    assert stub.run("Stop")[1]  # the drain consumes it
    assert not os.listdir(inbox_of(clone, clone.web))


def test_a_question_shown_to_codex_is_answered_by_the_stop_the_stub_leaves_to_python(stub, clone):
    """A question shown at a tool call: the Stop after it goes to the drain, whose automatic
    answer is the run's final text (Stop's last_assistant_message), delivered to the asker."""
    from asking import start_ask
    assert stub.run("PostToolUse")[1]
    assert stub.run("Stop")[1]
    age(inbox_of(clone, clone.web))
    assert stub.run("UserPromptSubmit", prompt="next")[1]  # working: an ask to it waits
    asker = start_ask(clone, "which port does the api use?", timeout=60)
    try:
        deadline = time.time() + 30
        while True:
            answer, started = stub.run("PostToolUse")
            if context_of(answer) and "which port" in context_of(answer):
                break
            assert time.time() < deadline, "the question was never shown"
            time.sleep(0.2)
        assert started
        assert stub.run("Stop", last_assistant_message="port 8080")[1]
        out, err = asker.communicate(timeout=60)
    finally:
        if asker.poll() is None:
            asker.kill()
    assert asker.returncode == 0, err
    assert "port 8080" in out
    invariants.check(clone.mail_root)


@pytest.fixture
def fresh(launch, clone):
    """A launch in a worktree that never got mail, after its prompt: the box has no inbox."""
    launch.run("SessionStart")
    assert launch.run("UserPromptSubmit", prompt="hi") == (None, True)
    assert not os.path.lexists(inbox_of(clone, clone.web))
    return launch


@pytest.mark.parametrize("shell", SHELLS)
def test_a_worktree_that_never_got_mail_starts_no_python_from_codexs_first_tool_call(fresh, clone, shell):
    for _ in range(3):
        assert fresh.run("PostToolUse", shell) == (None, False)
    assert fresh.run("Stop", shell) == (None, False)
    assert fresh.run("UserPromptSubmit", shell) == (None, False)
    send(clone, "the very first")
    shown_at_next_tool_call(fresh, "the very first", shell)
    invariants.check(clone.mail_root)


def test_mail_published_between_codexs_look_and_its_stamp_is_shown_at_the_next_event(fresh, clone, tmp_path):
    """The drain looked (no inbox) and is held before it links its stamp (crash point
    `stamp:staged`) when the first message arrives, in the same clock tick for all the stamp
    knows: the stamp says "no inbox", the inbox is there, and the stub must not believe it."""
    fresh.stamp.unlink()
    gate = tmp_path / "gate"
    finish = fresh.start("PostToolUse", env=f"KORUS_MAIL_PAUSE_AT='stamp:staged:{gate}'")
    deadline = time.time() + 30
    while not os.path.exists(f"{gate}.reached"):
        assert time.time() < deadline
        time.sleep(0.01)
    send(clone, "between look and stamp")
    gate.write_text("")
    said, answer, started = finish()
    assert said == "rc=0\n" and started and answer is None
    assert os.path.lexists(fresh.stamp)  # the stamp of a box without an inbox, written after the publish
    shown_at_next_tool_call(fresh, "between look and stamp")
    invariants.check(clone.mail_root)


@pytest.mark.parametrize("step", ["stamp:staged", "stamp:linked"])
def test_a_drain_killed_around_codexs_stamp_leaves_the_next_event_right(stub, clone, step):
    """The drain SIGKILLed between staging its stamp and linking it, or right after: the stub
    finds no stamp (Python runs) or a whole one (nothing new), and new mail is shown next."""
    assert stub.sh(f"export KORUS_MAIL_CRASH_AT={step}") == "rc=0\n"
    stub.run("PostToolUse")  # killed at the step: the stub reports the signal, exit 0
    assert stub.sh("unset KORUS_MAIL_CRASH_AT") == "rc=0\n"
    answer, started = stub.run("PostToolUse")
    assert answer is None and started == (step == "stamp:staged")
    send(clone, f"after a kill at {step}")
    shown_at_next_tool_call(stub, f"after a kill at {step}")
    invariants.check(clone.mail_root, killed_debris_ok=True)


@pytest.mark.parametrize("when", ["after-head", "before-mv", "after-mv"])
def test_a_codex_stub_killed_between_its_steps(stub, clone, tmp_path, when):
    """The stub SIGKILLed after taking the payload's head (the event is lost to the client as a
    failed hook: nothing is shown or consumed), between its staged turn record and its `mv` (the
    record is the old one; the staged file is swept by the next opening show), or right after its
    `mv` (the record is the new one). The next events go on, mail is shown, the invariants hold."""
    assert stub.run("PostToolUse")[1]
    assert stub.run("Stop")[1]
    age(inbox_of(clone, clone.web))
    assert stub.run("UserPromptSubmit", prompt="next")[1]
    assert stub.run("Stop") == (None, False)
    turn = sessions_of(clone) / f"{stub.session}.state"
    before = turn.read_text()
    bindir = tmp_path / "killbin"
    bindir.mkdir()
    tool = "dd" if when == "after-head" else "mv"
    real = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
    runs_real = f"'{real}' \"$@\"\n" if when in ("after-head", "after-mv") else ""
    # (dd is the stub's $( ) itself, exec'd there: its parent is the stub, as mv's is)
    (bindir / tool).write_text("#!/bin/sh\n" + runs_real + "kill -9 $PPID\nexit 1\n")
    (bindir / tool).chmod(0o755)
    finish = stub.start("UserPromptSubmit", env=f"PATH='{bindir}:{os.environ['PATH']}'")
    said, answer, started = finish()
    assert said == f"rc={128 + signal.SIGKILL}\n" and answer is None and not started
    staged = [n for n in os.listdir(sessions_of(clone)) if n.startswith(".")]
    if when == "after-mv":
        assert re.fullmatch(r"working UserPromptSubmit [0-9]+\n", turn.read_text()) and not staged
    else:
        assert turn.read_text() == before
        assert staged == ([f".{stub.session}.state.{staged[0].rpartition('.')[2]}"] if when == "before-mv" else [])
    assert stub.run("UserPromptSubmit", prompt="again") == (None, False)  # the client's next event
    send(clone, f"after a kill {when}")
    shown_at_next_tool_call(stub, f"after a kill {when}")
    invariants.check(clone.mail_root, killed_debris_ok=True)
    stub.run("SessionStart")  # an opening show sweeps what a killed stub staged
    assert not [n for n in os.listdir(sessions_of(clone)) if n.startswith(".")]
    invariants.check(clone.mail_root)


def test_a_resumed_launch_on_the_same_pid_never_trusts_the_old_launchs_stamp(stub, clone):
    """A stamp outlives its launch (killed), and a new launch of the same session gets the same
    pid (pids are reused): the key is the same, but the new launch was shown nothing. Its
    SessionStart (source `resume`) always runs the drain, whose opening show removes that key's
    stamp, so its first tool call shows the mail the old launch was shown."""
    stub.run("PostToolUse")
    assert stub.run("PostToolUse") == (None, False)
    # as if this process were a new Codex launch of the same session: its display markers are
    # empty (the old launch's were under another start time); the stamp still names its pid
    box = inbox_of(clone, clone.web).parent
    for d in (box / "shown").iterdir():
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
    assert os.path.lexists(stub.stamp)
    answer, started = stub.run("SessionStart", source="resume")
    assert started and "first" in context_of(answer)
    assert not os.path.lexists(stub.stamp)


def test_codexs_stop_and_session_end_remove_the_stamp(stub, clone):
    """Every consume and end phase removes the launch's stamp: the stub hands the drain its key
    at every event, not only at those it may answer (hooks/hook.sh, the head)."""
    stub.run("PostToolUse")
    assert os.path.lexists(stub.stamp)
    assert stub.run("Stop")[1]
    assert not os.path.lexists(stub.stamp)
    age(inbox_of(clone, clone.web))
    assert stub.run("UserPromptSubmit", prompt="next")[1]
    assert os.path.lexists(stub.stamp)
    assert stub.run("SessionEnd", reason="other")[1]
    assert not os.path.lexists(stub.stamp)
    assert not [n for n in os.listdir(clone.mail_root / "fast") if n.startswith(stub.key)]


def test_a_drain_killed_superseding_codexs_turn_record_leaves_the_session_right(stub, clone):
    """After a Stop the stub recorded, the next drain writes the presence record and removes the
    turn record; killed between the two (crash point `turn:recorded`), the record it wrote names
    the turn record as seen, so readers take the drain's state, and the next events go on."""
    from git_korus_mail.core import keys
    from git_korus_mail.store import presence
    from git_korus_mail.store.files import MailRoot
    assert stub.run("PostToolUse")[1]
    assert stub.run("Stop")[1]
    age(inbox_of(clone, clone.web))
    assert stub.run("UserPromptSubmit", prompt="next")[1]
    assert stub.run("Stop") == (None, False)  # the stub's turn record: idle
    turn = sessions_of(clone) / f"{stub.session}.state"
    assert turn.exists()
    send(clone, "wakes the drain")
    assert stub.sh("export KORUS_MAIL_CRASH_AT=turn:recorded") == "rc=0\n"
    stub.run("UserPromptSubmit", prompt="again")  # killed after its record, before the unlink
    assert stub.sh("unset KORUS_MAIL_CRASH_AT") == "rc=0\n"
    assert turn.exists()
    root = MailRoot.open(str(clone.mail_root.parent), create=False)
    box = root.box(keys.key_for(str(clone.web)).name, create=False)
    assert presence.load(box, stub.session)["state"] == "working"  # the drain's, over the stale turn record
    answer, started = stub.run("PostToolUse")
    assert started and "wakes the drain" in context_of(answer)  # the killed run had not marked it shown
    assert stub.run("Stop")[1]
    assert presence.load(box, stub.session)["state"] == "idle"
    invariants.check(clone.mail_root, killed_debris_ok=True)


def test_the_sweep_takes_staged_turn_records_only_of_dead_stubs_or_old_ones(clone):
    """store/presence.sweep_staged: `.<session>.state.<pid>` of a pid that no longer runs, or
    older than a minute, goes; a live stub's fresh one stays (it may be between its write and its
    `mv`), and nothing else in sessions/ is touched."""
    import subprocess as sp
    from git_korus_mail.core import keys
    from git_korus_mail.store import presence
    from git_korus_mail.store.files import MailRoot
    send(clone, "makes the box")
    root = MailRoot.open(str(clone.mail_root.parent), create=False)
    box = root.box(keys.key_for(str(clone.web)).name, create=False)
    sessions = sessions_of(clone)
    sessions.mkdir(exist_ok=True)
    dead = sp.Popen(["true"])
    dead.wait()
    live = os.getpid()
    names = {f".s1.state.{dead.pid}": "dead", f".s2.state.{live}": "live", f".s3.state.{live}": "old",
             ".s4.state.x1": "other", "s5.state": "record", ".state.1": "other"}
    for name, kind in names.items():
        (sessions / name).write_text("idle Stop 1\n")
        if kind == "old":
            age(sessions / name, 120)
    assert presence.sweep_staged(box, time.time()) == 2
    assert sorted(os.listdir(sessions)) == sorted(n for n, k in names.items() if k not in ("dead", "old"))
    assert [n for n in names if presence.staged_turn(n)] == [f".s1.state.{dead.pid}", f".s2.state.{live}",
                                                            f".s3.state.{live}"]
