"""The stub's fast path (docs/HOOKS.md, "The fast path"): a tool call with nothing new for its
launch is answered in POSIX sh without starting Python, and every doubt starts Python. Real
processes throughout: the installed stub run by sh, dash and bash, the real drain behind it."""

import json
import os
import re

import hermetic
import invariants
import pytest

from helpers import context_of, run_cli
from stubworld import (SHELLS, Stub, age, inbox_of, new_mail_is_shown_at_the_next_tool_call,
                       same_instant_mail_is_shown_at_the_next_event, send, shown_at_next_tool_call)


@pytest.fixture
def stub(clone):
    s = Stub(clone, clone.web)
    send(clone, "first")
    answer, _ = s.run("UserPromptSubmit")  # shown here: the box then holds nothing new for the launch
    assert "first" in context_of(answer)
    age(inbox_of(clone, clone.web))  # as if the mail had come in a while ago
    return s


@pytest.mark.parametrize("shell", SHELLS)
def test_a_tool_call_with_nothing_new_starts_no_python(stub, clone, shell):
    answer, started = stub.run("PostToolUse", shell)
    assert started and answer is None  # the first one runs the drain, which stamps the launch
    inbox = inbox_of(clone, clone.web)
    gen = clone.mail_root / "fast" / os.readlink(stub.stamp)
    assert os.readlink(gen / "inbox") == str(inbox) and os.readlink(gen / "cwd") == str(clone.web)
    assert (gen / "seen").stat().st_mtime_ns == inbox.stat().st_mtime_ns
    for _ in range(3):
        assert stub.run("PostToolUse", shell) == (None, False)


@pytest.mark.parametrize("shell", SHELLS)
def test_new_mail_is_shown_at_the_next_tool_call(stub, clone, shell):
    new_mail_is_shown_at_the_next_tool_call(stub, clone, shell)


def test_mail_published_in_the_same_instant_as_the_look_is_shown_at_the_next_event(stub, clone):
    same_instant_mail_is_shown_at_the_next_event(stub, clone)


@pytest.mark.parametrize("garbage", ["file", "dangling", "no-seen", "seen-dir", "inbox-file", "other-cwd",
                                     "other-box"])
def test_a_missing_or_garbage_stamp_starts_python(stub, clone, garbage):
    stub.run("PostToolUse")
    assert stub.run("PostToolUse") == (None, False)
    fast = clone.mail_root / "fast"
    gen = fast / os.readlink(stub.stamp)
    if garbage == "file":
        stub.stamp.unlink()
        stub.stamp.write_text("")
    elif garbage == "dangling":
        stub.stamp.unlink()
        stub.stamp.symlink_to("nowhere")
    elif garbage == "no-seen":
        (gen / "seen").unlink()
    elif garbage == "seen-dir":
        (gen / "seen").unlink()
        (gen / "seen").mkdir()
    elif garbage == "inbox-file":
        (gen / "inbox").unlink()
        (gen / "inbox").symlink_to(gen / "cwd")
        (clone.base / "plain").write_text("")
        (gen / "inbox").unlink()
        (gen / "inbox").symlink_to(clone.base / "plain")
    elif garbage == "other-cwd":
        (gen / "cwd").unlink()
        (gen / "cwd").symlink_to(clone.main)
    elif garbage == "other-box":  # a stamp naming another inbox, as old as this one
        (gen / "inbox").unlink()
        other = clone.base / "other-inbox"
        other.mkdir()
        t = (gen / "seen").stat().st_mtime_ns
        os.utime(other, ns=(t, t))
        (gen / "inbox").symlink_to(other)
        send(clone, "behind another inbox")
        answer, started = stub.run("PostToolUse")
        assert not started  # the stamp speaks for the inbox it names: the drain never writes this
        stub.stamp.unlink()
        shown_at_next_tool_call(stub, "behind another inbox")
        return
    assert stub.run("PostToolUse")[1]


def test_another_sessions_stamp_is_never_trusted(stub, clone):
    stub.run("PostToolUse")
    assert stub.run("PostToolUse") == (None, False)
    assert stub.run("PostToolUse", session="s-other")[1]  # its own key: no stamp of its own yet
    assert stub.run("PostToolUse", env={"CLAUDE_PID": "1"})[1]  # another launch of the same session


@pytest.mark.parametrize("shell", SHELLS)
def test_a_payload_of_another_session_never_stamps_the_environments(clone, shell):
    """The stub looks the stamp up by the environment's session; the drain answers the payload's.
    When they differ (a hook command run by hand, a client that hands a hook another session's
    environment), a stamp written under the environment's key would speak for a launch that was
    shown nothing: so the drain writes none (clients/claude/protocol.fast_key_of), and the
    environment's session is shown its mail at its own next tool call."""
    s = Stub(clone, clone.web, session="s-env")
    send(clone, "for s-env")
    foreign = {"CLAUDE_CODE_SESSION_ID": "s-env"}
    answer, _ = s.run("UserPromptSubmit", shell, env=foreign, session="s-payload")
    assert "for s-env" in context_of(answer)  # shown to the payload's session
    age(inbox_of(clone, clone.web))
    for _ in range(2):  # nothing new for the payload's session: every condition of a stamp holds but one
        answer, started = s.run("PostToolUse", shell, env=foreign, session="s-payload")
        assert started and answer is None
    assert not os.path.lexists(s.stamp)  # fast/s-env@<pid>
    assert not os.path.lexists(clone.mail_root / "fast" / f"s-payload@{os.getpid()}")
    answer, started = s.run("PostToolUse", shell)  # s-env's own first tool call
    assert started and "for s-env" in context_of(answer)


@pytest.mark.parametrize("shell", SHELLS)
def test_codexs_stub_takes_no_fast_path_even_inside_a_stamped_claude_launch(stub, clone, shell):
    """Codex's stub keys its fast path by its payload's head and its own parent (docs/HOOKS.md,
    "Codex's key: the payload's head"), never by Claude Code's environment: a Codex run inside a
    Claude Code session whose environment (CLAUDE_CODE_SESSION_ID, CLAUDE_PID) it inherits and
    whose stamp is valid still runs the drain."""
    import subprocess
    from git_korus_mail.clients.codex import stub as codex_stub
    stub.run("PostToolUse", shell)
    assert stub.run("PostToolUse", shell) == (None, False)  # Claude Code's launch: stamped
    helper = clone.base / "logging-helper"
    codex = clone.mail_root / "hooks" / "codex-hook"
    codex.write_text(codex_stub.render_stub(str(helper)))
    codex.chmod(0o700)
    payload = json.dumps(dict(hermetic.payload("PostToolUse", stub.session, stub.cwd), transcript_path=""))
    env = dict(os.environ, CLAUDE_CODE_SESSION_ID=stub.session)
    before = stub.starts()
    proc = subprocess.run([shell, str(codex), "PostToolUse"], input=payload, capture_output=True, text=True,
                          cwd=stub.cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    assert stub.starts() == before + 1
    assert "--client=codex" in stub.log.read_text().splitlines()[-1]


def test_off_starts_python(stub, clone):
    stub.run("PostToolUse")
    run_cli("off", cwd=clone.main, check=True)
    assert stub.run("PostToolUse")[1]
    run_cli("on", cwd=clone.main, check=True)


def test_stop_and_session_end_remove_the_stamp(stub, clone):
    """After Stop the session is idle: its next tool call runs Python, which records it working.
    (The stamp here lacks the box link, a message having been shown: so Stop runs the drain; a
    Stop the stub answers keeps the stamp, tests/test_fastturn.py.)"""
    stub.run("PostToolUse")
    assert os.path.lexists(stub.stamp)
    assert stub.run("Stop")[1]
    assert not os.path.lexists(stub.stamp)
    assert stub.run("PostToolUse")[1]
    rec = json.loads((inbox_of(clone, clone.web).parent / "sessions" / "s-fast.json").read_text())
    assert rec["state"] == "working"
    stub.run("SessionEnd")
    assert not os.path.lexists(stub.stamp)
    assert not [n for n in os.listdir(clone.mail_root / "fast") if n.startswith(stub.key)]


def test_an_opening_show_removes_a_dead_launchs_stamp(stub, clone):
    stub.run("PostToolUse")
    dead = clone.mail_root / "fast" / "s-dead@999999999"
    dead.symlink_to(os.readlink(stub.stamp))
    stub.run("SessionStart")
    assert not os.path.lexists(dead) and not os.path.lexists(stub.stamp)


@pytest.mark.parametrize("how", ["touch", "restore"])
@pytest.mark.parametrize("shell", SHELLS)
def test_mail_behind_an_inbox_mtime_set_back_is_shown_at_the_next_tool_call(stub, clone, shell, how):
    """issue 22 item 8: something sets the inbox's mtime back after mail came in (`touch -d`, or a
    restore by `cp -a` / `rsync -a` that brings a message file and the directory's old times).
    The stamp's `seen` then equals the inbox's mtime again, yet the next tool call must show it."""
    import shutil
    stub.run("PostToolUse", shell)
    assert stub.run("PostToolUse", shell) == (None, False)
    inbox = inbox_of(clone, clone.web)
    before = inbox.stat().st_mtime_ns
    if how == "touch":
        send(clone, "behind an old mtime")
    else:  # a message made in another clone, copied in with its times (cp -a)
        from git_korus_mail.store import message
        from git_korus_mail.core import keys
        k = keys.key_for(str(clone.web))
        msg = message.build("behind an old mtime", k.path, k.name,
                            {"path": str(clone.main), "branch": "main", "session": None})
        made = clone.base / f"{msg['id']}.json"
        made.write_bytes(message.encode(msg))
        made.chmod(0o600)
        shutil.copy2(made, inbox / made.name)
    os.utime(inbox, ns=(before, before))  # the directory's time set back, as `touch -d` or `cp -a` does
    shown_at_next_tool_call(stub, "behind an old mtime", shell)
    invariants.check(clone.mail_root)


# -- a worktree that never got mail: its box has no inbox (docs/HOOKS.md, "A box without an inbox") --
@pytest.fixture
def fresh(clone):
    """A launch in a worktree that never got mail, after its prompt: the box has no inbox."""
    s = Stub(clone, clone.web)
    assert s.run("UserPromptSubmit") == (None, True)
    assert not os.path.lexists(inbox_of(clone, clone.web))
    return s


def _no_inbox_stamp(clone, stub):
    gen = clone.mail_root / "fast" / os.readlink(stub.stamp)
    # no seen, no names/: pinned; `box`: nothing for a prompt or a Stop either (tests/test_fastturn.py)
    assert sorted(os.listdir(gen)) == ["box", "cwd", "inbox"]
    assert os.readlink(gen / "inbox") == str(inbox_of(clone, clone.web))
    assert os.readlink(gen / "box") == str(inbox_of(clone, clone.web).parent) + "/"
    return gen


@pytest.mark.parametrize("shell", SHELLS)
def test_a_worktree_that_never_got_mail_starts_no_python_from_its_first_tool_call(fresh, clone, shell):
    gen = _no_inbox_stamp(clone, fresh)  # the prompt's show found no inbox, and said so
    assert os.readlink(gen / "cwd") == str(clone.web)
    for _ in range(3):
        assert fresh.run("PostToolUse", shell) == (None, False)
    sessions = inbox_of(clone, clone.web).parent / "sessions"
    assert json.loads((sessions / "s-fast.json").read_text())["state"] == "working"
    # idle, recorded by the stub itself (tests/test_fastturn.py): the next tool call records it working again
    assert fresh.run("Stop", shell) == (None, False)
    assert re.fullmatch(r"idle Stop [0-9]+\n", (sessions / "s-fast.state").read_text())
    assert fresh.run("PostToolUse", shell) == (None, True)
    assert json.loads((sessions / "s-fast.json").read_text())["state"] == "working"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_first_mail_into_a_box_without_an_inbox_is_shown_at_the_next_tool_call(fresh, clone, shell):
    assert fresh.run("PostToolUse", shell) == (None, False)
    send(clone, "the very first")
    shown_at_next_tool_call(fresh, "the very first", shell)
    invariants.check(clone.mail_root)


def test_mail_published_between_the_look_and_the_stamp_is_shown_at_the_next_tool_call(fresh, clone, tmp_path):
    """The drain looked (no inbox) and is about to link its stamp when the first message arrives:
    the stamp says "no inbox", the inbox is there, and the stub must not believe the stamp."""
    from pausing import Paused
    fresh.stamp.unlink()
    d = Paused(tmp_path, ["drain"], clone.web, {"stamp:staged": "staged"},
               stdin=json.dumps(hermetic.payload("PostToolUse", "s-fast", clone.web)),
               env={"CLAUDE_CODE_SESSION_ID": "s-fast"})
    assert d.reach("stamp:staged")
    send(clone, "between look and stamp")  # in the same clock tick as the look, for all the stamp knows
    assert d.finish() == 0, d.err
    _no_inbox_stamp(clone, fresh)
    shown_at_next_tool_call(fresh, "between look and stamp")
    invariants.check(clone.mail_root)


def test_a_publish_that_made_the_inbox_but_has_not_linked_yet_costs_python_then_shows(fresh, clone, tmp_path):
    """A sender held between making the inbox and linking its message: from then on the stub runs
    the drain (the inbox exists; it is too new to stamp), and the message, once linked, is shown at
    the next tool call."""
    from pausing import Paused
    assert fresh.run("PostToolUse") == (None, False)
    s = Paused(tmp_path, ["send", "--to", str(clone.web), "--", "held before its link"], clone.main,
               {"send:tmp-written": "linking"})
    assert s.reach("send:tmp-written")
    assert os.path.isdir(inbox_of(clone, clone.web))
    for shell in SHELLS:
        assert fresh.run("PostToolUse", shell) == (None, True)  # not queued yet: nothing to show
    assert s.finish() == 0, s.err
    shown_at_next_tool_call(fresh, "held before its link")
    invariants.check(clone.mail_root)


def test_a_stamp_of_another_launch_or_directory_is_never_trusted_without_an_inbox(fresh, clone):
    assert fresh.run("PostToolUse") == (None, False)
    assert fresh.run("PostToolUse", session="s-other")[1]
    assert fresh.run("PostToolUse", env={"CLAUDE_PID": "1"})[1]
    # the same launch, now in a worktree that has mail: the stamp made in web says nothing of it
    run_cli("send", "--to", str(clone.main), "--", "for main", cwd=clone.web, check=True)
    in_main = Stub(clone, clone.main)
    shown_at_next_tool_call(in_main, "for main")


def test_off_starts_python_without_an_inbox(fresh, clone):
    assert fresh.run("PostToolUse") == (None, False)
    run_cli("off", cwd=clone.main, check=True)
    assert fresh.run("PostToolUse")[1]
    run_cli("on", cwd=clone.main, check=True)
