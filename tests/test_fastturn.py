"""A turn with nothing new (docs/HOOKS.md, "A turn with nothing new"): the stub answers a prompt
and a Stop without Python when the launch's stamp proves there is nothing to do but record the
turn, and records it with one `mv` (store/presence.py's turn record); every doubt starts Python.
Real processes throughout: the installed stub run by sh, dash and bash, the real drain behind it."""

import json
import os
import signal
import subprocess
import re
import time

import hermetic
import invariants
import pytest

from helpers import context_of, run_cli
from stubworld import SHELLS, Stub, age, inbox_of


def send(clone, text):
    run_cli("send", "--to", "web", "--", text, cwd=clone.main, check=True)


def sessions_dir(clone):
    return inbox_of(clone, clone.web).parent / "sessions"


def presence_of(clone, session="s-fast"):
    """The session's presence as every reader sees it (store/presence.load merges the turn record)."""
    from git_korus_mail.core import keys
    from git_korus_mail.store import presence
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(str(clone.mail_root.parent), create=False)
    box = root.box(keys.key_for(str(clone.web)).name, create=False)
    return presence.load(box, session)


@pytest.fixture
def stub(clone):
    """A launch past one consumed message, stamped for whole turns: its Stop consumed what it was
    shown, and its next prompt, with nothing new, stamped the launch with the box link."""
    s = Stub(clone, clone.web)
    send(clone, "first")
    assert "first" in context_of(s.run("UserPromptSubmit")[0])
    age(inbox_of(clone, clone.web))
    assert s.run("PostToolUse")[1]  # stamped, without the box link: a message shown and not consumed
    assert not os.path.lexists(clone.mail_root / "fast" / os.readlink(s.stamp) / "box")
    assert s.run("Stop")[1]  # consumes it (Python), and removes the stamp
    age(inbox_of(clone, clone.web))
    assert s.run("UserPromptSubmit")[1]  # nothing new: a stamp with the box link
    gen = clone.mail_root / "fast" / os.readlink(s.stamp)
    assert os.readlink(gen / "box") == str(inbox_of(clone, clone.web).parent) + "/"
    return s


@pytest.mark.parametrize("shell", SHELLS)
def test_a_whole_turn_with_nothing_new_starts_no_python(stub, clone, shell):
    before = presence_of(clone)
    assert before["state"] == "working"
    assert stub.run("Stop", shell) == (None, False)
    turn = sessions_dir(clone) / "s-fast.state"
    assert re.fullmatch(r"idle Stop [0-9]+\n", turn.read_text())  # the format presence reads, pinned
    rec = presence_of(clone)
    assert rec["state"] == "idle" and rec["last_event"] == "Stop" and rec["at"] > before["at"]
    assert rec["events"]["Stop"] == rec["at"]
    for _ in range(2):
        assert stub.run("UserPromptSubmit", shell) == (None, False)
        assert re.fullmatch(r"working UserPromptSubmit [0-9]+\n", turn.read_text())
        assert presence_of(clone)["state"] == "working"
        assert stub.run("PostToolUse", shell) == (None, False)
        assert stub.run("Stop", shell) == (None, False)
        assert presence_of(clone)["state"] == "idle"
    assert not [n for n in os.listdir(sessions_dir(clone)) if n.startswith(".")]  # no staged file left
    # who reads the merged record
    out = run_cli("who", cwd=clone.main, check=True).stdout
    assert "idle" in out and "working" not in out


def test_a_drain_supersedes_the_turn_record(stub, clone):
    """The next Python run writes the record with `turn_seen` and removes the turn record."""
    assert stub.run("Stop") == (None, False)
    send(clone, "second")
    answer, started = stub.run("UserPromptSubmit")
    assert started and "second" in context_of(answer)
    assert not (sessions_dir(clone) / "s-fast.state").exists()
    rec = json.loads((sessions_dir(clone) / "s-fast.json").read_text())
    assert rec["state"] == "working" and rec["last_event"] == "UserPromptSubmit" and rec["turn_seen"]


@pytest.mark.parametrize("shell", SHELLS)
def test_mail_published_before_a_prompt_is_shown_at_that_prompt(stub, clone, shell):
    assert stub.run("Stop", shell) == (None, False)
    send(clone, "in the same tick")  # right before the prompt: the inbox's name is new to the stamp
    answer, started = stub.run("UserPromptSubmit", shell)
    assert started and "in the same tick" in context_of(answer)
    assert presence_of(clone)["state"] == "working"


@pytest.mark.parametrize("shell", SHELLS)
def test_mail_published_in_the_same_tick_as_the_stamp_sends_a_stop_to_python(stub, clone, shell):
    """Whatever the inbox's times say (set back to the stamp's `seen`), a name the stamp does not
    list sends the Stop to the drain, which records idle with everything it does."""
    inbox = inbox_of(clone, clone.web)
    seen = (clone.mail_root / "fast" / os.readlink(stub.stamp) / "seen").stat().st_mtime_ns
    send(clone, "behind equal times")
    os.utime(inbox, ns=(seen, seen))
    assert stub.run("Stop", shell)[1]
    assert presence_of(clone)["state"] == "idle"
    answer, started = stub.run("UserPromptSubmit", shell)
    assert started and "behind equal times" in context_of(answer)


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop"])
def test_a_stamp_of_another_launch_or_directory_starts_python(stub, clone, event):
    assert stub.run("Stop") == (None, False)
    assert stub.run(event, env={"CLAUDE_PID": "1"})[1]  # another launch: no stamp of its own
    other = Stub(clone, clone.main)  # the same launch in another worktree: cwd is not the stamp's
    assert other.run(event)[1]


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop"])
def test_off_starts_python(stub, clone, event):
    run_cli("off", cwd=clone.main, check=True)
    assert stub.run(event)[1]
    run_cli("on", cwd=clone.main, check=True)


def test_an_armed_watcher_sends_the_prompt_to_python_which_ends_it(stub, clone):
    """A watcher's claim (store/watch.py) for the launch: the stub writes the prompt's state, then
    finds the claim and leaves the prompt to the drain, which removes it. A wakes record alone is
    no watcher."""
    from git_korus_mail.store.launch import Launch
    assert stub.run("Stop") == (None, False)
    watch = inbox_of(clone, clone.web).parent / "watch"
    watch.mkdir(exist_ok=True)
    (watch / f"s-fast@{os.getpid()}-1-x.wakes").write_text("{}")
    assert stub.run("UserPromptSubmit") == (None, False)
    assert stub.run("Stop") == (None, False)
    claim = watch / f"s-fast@{Launch.of_process('claude', os.getpid()).tag}"
    claim.write_text(json.dumps({"pid": 999999999, "start": 1}))  # a watcher that died: nothing to signal
    assert stub.run("UserPromptSubmit")[1]
    assert not claim.exists()  # the drain ended it
    assert presence_of(clone)["state"] == "working"
    invariants.check(clone.mail_root)


def test_a_watcher_arming_after_a_fast_prompt_sees_the_session_working(stub, clone):
    """The watcher's own check (core/wake.py `_superseded`) reads presence.load: a prompt the stub
    answered after the watcher started counts as work since."""
    from git_korus_mail.stamps import parse_stamp
    assert stub.run("Stop") == (None, False)
    started = time.time()
    time.sleep(0.05)
    assert stub.run("UserPromptSubmit") == (None, False)
    rec = presence_of(clone)
    assert rec["state"] == "working" and parse_stamp(rec["at"]) > started


def test_a_shown_message_sends_the_stop_to_python_which_consumes_it(stub, clone):
    send(clone, "to be consumed")
    answer, started = stub.run("PostToolUse")
    assert started and "to be consumed" in context_of(answer)
    age(inbox_of(clone, clone.web))
    assert stub.run("PostToolUse")[1]  # restamps: without the box link (a message shown, not consumed)
    assert stub.run("PostToolUse") == (None, False)
    assert not os.path.lexists(clone.mail_root / "fast" / os.readlink(stub.stamp) / "box")
    assert stub.run("Stop")[1]
    assert not os.listdir(inbox_of(clone, clone.web))  # consumed


def test_a_pending_fault_sends_the_stop_to_python_which_tells_it(stub, clone):
    from git_korus_mail.core import keys
    from git_korus_mail.store import presence
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(str(clone.mail_root.parent), create=False)
    box = root.box(keys.key_for(str(clone.web)).name, create=False)
    presence.add_pending_fault(box, "s-fast", "wake budget spent (a test's fault)")
    assert (sessions_dir(clone) / "s-fast.faults").exists()
    answer, started = stub.run("Stop")
    assert started and "a test's fault" in json.dumps(answer)
    assert not (sessions_dir(clone) / "s-fast.faults").exists()


@pytest.mark.parametrize("shell", SHELLS)
def test_a_tool_call_after_a_fast_stop_records_working(stub, clone, shell):
    """A continued turn (another Stop hook blocked): tool calls after the stub's Stop run the
    drain, which records the session working again."""
    assert stub.run("Stop", shell) == (None, False)
    assert stub.run("PostToolUse", shell)[1]
    assert presence_of(clone)["state"] == "working"
    assert not (sessions_dir(clone) / "s-fast.state").exists()
    assert stub.run("PostToolUse", shell) == (None, False)


@pytest.mark.parametrize("how", ["fails", "killed"])
def test_a_failed_or_killed_mv_leaves_the_event_to_python(stub, clone, tmp_path, how):
    """The stub's one process: when `mv` fails or is killed, the drain records the state."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "mv"
    fake.write_text("#!/bin/sh\nexit 1\n" if how == "fails" else "#!/bin/sh\nkill -9 $$\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    assert stub.run("Stop", env=env)[1]
    assert presence_of(clone)["state"] == "idle"
    assert not [n for n in os.listdir(sessions_dir(clone)) if n.startswith(".")]
    invariants.check(clone.mail_root)


def test_a_turn_record_on_a_reused_inode_in_the_same_tick_is_still_new(stub, clone):
    """A drain's record names the turn record it superseded by inode, mtime and the writing stub's
    pid: a new turn record on the very inode the drain freed, in the same tick of the file clock
    (the kernel reuses inodes at once, and file times are coarse), is still believed."""
    assert stub.run("Stop") == (None, False)
    turn = sessions_dir(clone) / "s-fast.state"
    st = turn.stat()
    rec = json.loads((sessions_dir(clone) / "s-fast.json").read_text())
    # as if a drain had recorded `working` after this very turn record, and the stub's next
    # Stop had then written its record onto the same inode within the same tick
    state, event, pid = turn.read_text().split()
    rec.update(state="working", last_event="PostToolUse", turn_seen=f"{st.st_ino}:{st.st_mtime_ns}:{pid}")
    (sessions_dir(clone) / "s-fast.json").write_text(json.dumps(rec))
    assert presence_of(clone)["state"] == "working"  # the drain's record stands over what it saw
    with open(turn, "r+") as f:  # the same inode
        f.write(f"idle Stop {int(pid) + 1}\n")
    os.utime(turn, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same tick
    assert turn.stat().st_ino == st.st_ino and turn.stat().st_mtime_ns == st.st_mtime_ns
    assert presence_of(clone)["state"] == "idle"


def test_a_directory_where_the_turn_record_goes_leaves_the_event_to_python(stub, clone):
    """`mv` would put the record inside a directory of that name and succeed: the stub must not
    count that as written (readers take only a file)."""
    assert stub.run("Stop") == (None, False)
    turn = sessions_dir(clone) / "s-fast.state"
    turn.unlink()
    turn.mkdir()
    assert stub.run("UserPromptSubmit")[1]
    assert not os.listdir(turn)
    assert presence_of(clone)["state"] == "working"


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_stub_killed_around_its_mv(stub, clone, tmp_path, when):
    """The stub SIGKILLed between its staged write and its `mv`, or right after the `mv`: the turn
    record is the old one or the new one, never a torn one; a killed stub's staged file is all it
    leaves; the next events go on as usual, and the store's invariants hold."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = subprocess.run(["sh", "-c", "command -v mv"], capture_output=True, text=True).stdout.strip()
    fake = bindir / "mv"
    fake.write_text("#!/bin/sh\n" + (f"'{real}' \"$@\"\n" if when == "after" else "") + "kill -9 $PPID\nexit 1\n")
    fake.chmod(0o755)
    turn = sessions_dir(clone) / "s-fast.state"
    assert stub.run("Stop") == (None, False)
    before = turn.read_text()
    payload = json.dumps(hermetic.payload("UserPromptSubmit", "s-fast", clone.web))
    env = dict(os.environ, CLAUDE_CODE_SESSION_ID="s-fast", PATH=f"{bindir}:{os.environ['PATH']}")
    proc = subprocess.run(["sh", str(stub.path), "UserPromptSubmit"], input=payload, capture_output=True,
                          text=True, cwd=clone.web, env=env)
    assert proc.returncode == -signal.SIGKILL
    if when == "before":
        assert turn.read_text() == before and presence_of(clone)["state"] == "idle"
        assert [n for n in os.listdir(sessions_dir(clone)) if n.startswith(".s-fast.state.")]
    else:
        assert re.fullmatch(r"working UserPromptSubmit [0-9]+\n", turn.read_text())
        assert presence_of(clone)["state"] == "working"
    assert stub.run("UserPromptSubmit") == (None, False)  # the client's next event
    assert presence_of(clone)["state"] == "working"
    assert stub.run("Stop") == (None, False)
    assert presence_of(clone)["state"] == "idle"
    debris = [d for d in invariants.check(clone.mail_root, killed_debris_ok=True).debris if d[0] == "turn-staged"]
    assert len(debris) == (1 if when == "before" else 0)
    stub.run("SessionStart")  # an opening show sweeps what a killed stub staged (store/presence.sweep_staged)
    assert not [n for n in os.listdir(sessions_dir(clone)) if n.startswith(".")]
    invariants.check(clone.mail_root)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_first_mail_into_a_box_without_an_inbox_is_shown_at_the_next_prompt(clone, shell):
    """A worktree that never got mail: its turns are answered by the stub (the stamp's inbox link
    names nothing), and the first message, published right after a Stop the stub answered (in the
    same tick, for all the stamp knows), is shown at the very next prompt."""
    s = Stub(clone, clone.web)
    assert s.run("UserPromptSubmit", shell)[1]  # the launch's first prompt: the drain stamps it
    gen = clone.mail_root / "fast" / os.readlink(s.stamp)
    assert sorted(os.listdir(gen)) == ["box", "cwd", "inbox"] and not os.path.exists(gen / "inbox")
    assert s.run("PostToolUse", shell) == (None, False)
    assert s.run("Stop", shell) == (None, False)
    assert s.run("UserPromptSubmit", shell) == (None, False)
    assert s.run("Stop", shell) == (None, False)
    send(clone, "the very first")
    answer, started = s.run("UserPromptSubmit", shell)
    assert started and "the very first" in context_of(answer)
    assert presence_of(clone)["state"] == "working"
    assert s.run("Stop", shell)[1]  # consumes it
    assert not os.listdir(inbox_of(clone, clone.web))
    invariants.check(clone.mail_root)
