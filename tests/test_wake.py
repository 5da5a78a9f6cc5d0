"""The wake-up tier's watcher, run through the real stub in separate processes, with a stand-in
for Claude Code's process (CLAUDE_PID): a `sleep` whose command line says what kind of run it is
(no -p: the terminal UI; -p with stream-json input; -p with a text prompt)."""

import json
import os
import subprocess
import time

import pytest
from helpers import git, hook, reaped, run_cli
from install_fixtures import install, stub_of

import hermetic
import invariants

WATCH_CAP = 20  # seconds any watcher in these tests may live (its reach is shortened to this)


@pytest.fixture
def urgent(clone):
    install(clone.main, "--urgent")
    # these tests send more than the receiver's default rate (8 per 30 s from one sender) on purpose
    git("config", "korus-mail.rate", "100/30", cwd=clone.main)
    return clone



def person_time(stamp):
    """A stored stamp as a person reads it: `2026-12-02 02:45:41Z` (issue 25: one time format)."""
    return f"{stamp[:10]} {stamp[11:19]}Z"

def fake_claude(tmp_path, *args):
    """A process standing in for Claude Code: its argv is `<tmp>/claude <args>`."""
    exe = tmp_path / "claude"
    if not exe.exists():
        exe.write_text("#!/bin/sh\nwhile :; do sleep 1; done\n")
        exe.chmod(0o755)
    # stdin a pipe held open here, as a stream-json client holds Claude Code's input
    return subprocess.Popen([str(exe), *args], stdin=subprocess.PIPE, start_new_session=True)


def env_for(claude, session, reach=WATCH_CAP):
    return {"CLAUDE_PID": str(claude.pid), "CLAUDE_CODE_SESSION_ID": session,
            "KORUS_MAIL_WATCH_REACH": str(reach)}


def start_watcher(clone, worktree, claude, session, reach=WATCH_CAP):
    """The watcher entry's command, as Claude Code runs it: /bin/sh -c, the Stop payload on stdin."""
    env = dict(os.environ, **env_for(claude, session, reach))
    payload = json.dumps(hermetic.payload("Stop", session, worktree)).encode()
    proc = subprocess.Popen(["/bin/sh", "-c", f"'{stub_of(clone)}' Watch"], cwd=str(worktree), env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(payload)
    proc.stdin.close()
    proc.stdin = None  # written and closed: communicate() must not touch it
    return proc


def claim_path(clone, worktree, session, claude):
    from helpers import launch_dir
    boxes = [p.parent for p in (clone.mail_root / "box").glob("*/path")
             if p.read_text().strip() == os.path.realpath(worktree)]
    return boxes[0] / "watch" / launch_dir(session, claude.pid) if boxes else None


def wait_for(pred, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def armed(clone, worktree, session, claude):
    def check():
        p = claim_path(clone, worktree, session, claude)
        return p is not None and p.exists()
    return check


def drain(event, worktree, claude, session):
    return hook(event, worktree, session, env=env_for(claude, session))


def send(clone, to, body, *extra):
    proc = run_cli("send", "--json", "--wait=0", "--to", str(to), *extra, "--", body, cwd=clone.main, check=True)
    return json.loads(proc.stdout)["results"][0]["id"]


def publish_question(clone, worktree, body):
    """A question as `ask` writes one (kind question), and marked not to wake: it wakes anyway."""
    from git_korus_mail.core import keys
    from git_korus_mail.store import message
    from git_korus_mail.store.files import MailRoot
    key = keys.key_for(str(worktree))
    box = MailRoot.open(str(clone.common_dir)).box(key.name, create=True, path=key.path)
    msg = message.build(body, key.path, key.name, {"path": str(clone.main), "branch": "main", "session": None},
                        kind="question", wake=False)
    assert msg["wake"] is False and msg["kind"] == "question"
    from git_korus_mail.store import publish  # loaded where used
    publish.publish(box, msg, message.encode(msg))


@pytest.fixture
def claude(tmp_path):
    procs = []

    def make(*args):
        procs.append(fake_claude(tmp_path, *args))
        return procs[-1]
    yield make
    for p in procs:
        p.kill()
        p.wait()
        if p.stdin and not p.stdin.closed:
            p.stdin.close()


def test_new_mail_wakes_an_idle_terminal_session_once(urgent, claude):
    cc, sid = claude(), "s-wake-1"
    drain("SessionStart", urgent.web, cc, sid)
    w = start_watcher(urgent, urgent.web, cc, sid)
    wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
    send(urgent, urgent.web, "wake up, the schema changed")
    out, err = w.communicate(timeout=15)
    assert w.returncode == 2, (out, err)
    assert out == b""
    text = err.decode()
    assert text.startswith("1 new message(s) from ") and os.path.realpath(urgent.main) in text, text
    assert "wake up" not in text  # the body is shown by the woken turn's drain, never in the wake
    assert not claim_path(urgent, urgent.web, sid, cc).exists()  # let go before it woke
    # the same message never wakes the launch again, even while it is still unseen (a woken
    # turn whose show failed or was cut short): the next watcher waits its reach out
    w2 = start_watcher(urgent, urgent.web, cc, sid, reach=1)
    out, err = w2.communicate(timeout=15)
    assert (w2.returncode, out, err) == (0, b"", b"")
    # the woken turn's first event shows it as any prompt's would, and marks it shown after
    answer, _ = drain("UserPromptSubmit", urgent.web, cc, sid)
    assert "wake up, the schema changed" in hermetic.context_of(answer)


def test_a_message_shown_but_not_consumed_does_not_wake(urgent, claude):
    cc, sid = claude(), "s-wake-shown"
    send(urgent, urgent.web, "already seen")
    drain("SessionStart", urgent.web, cc, sid)  # shown; a discarded session never reaches Stop
    w = start_watcher(urgent, urgent.web, cc, sid, reach=1)
    assert w.wait(timeout=15) == 0


def test_print_mode_watcher_ends_at_once_and_stream_mode_waits(urgent, claude):
    send(urgent, urgent.web, "waiting for you")
    for args, wakes in ((("-p", "fix it", "--output-format", "json"), False),
                        (("-p", "--input-format", "stream-json", "--output-format", "stream-json"), True)):
        cc = claude(*args)
        sid = f"s-mode-{len(args)}"
        t0 = time.monotonic()
        w = start_watcher(urgent, urgent.web, cc, sid)
        out, err = w.communicate(timeout=15)
        assert w.returncode == (2 if wakes else 0), (args, out, err)
        if not wakes:
            assert (out, err) == (b"", b"") and time.monotonic() - t0 < WATCH_CAP / 2


def test_a_stream_session_whose_input_closed_is_not_woken(urgent, claude):
    """claude -p --input-format stream-json with its stdin closed waits for its hooks, then ends:
    the watcher must end too, not hold the exit for its whole reach."""
    cc, sid = claude("-p", "--input-format", "stream-json"), "s-closed"
    w = start_watcher(urgent, urgent.web, cc, sid)
    wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
    t0 = time.monotonic()
    cc.stdin.close()
    assert w.wait(timeout=10) == 0 and time.monotonic() - t0 < 5


def test_no_wake_waits_and_a_question_always_wakes(urgent, claude):
    cc, sid = claude(), "s-nowake"
    send(urgent, urgent.web, "not urgent", "--no-wake")
    w = start_watcher(urgent, urgent.web, cc, sid, reach=1.5)
    assert w.wait(timeout=15) == 0
    publish_question(urgent, urgent.web, "is the build green?")
    w = start_watcher(urgent, urgent.web, cc, sid)
    out, err = w.communicate(timeout=15)
    assert w.returncode == 2 and err.startswith(b"1 new message(s)"), err  # the question alone


def test_at_most_one_watcher_per_launch_and_a_prompt_ends_it(urgent, claude):
    cc, sid = claude(), "s-one"
    drain("SessionStart", urgent.web, cc, sid)
    w1 = start_watcher(urgent, urgent.web, cc, sid)
    wait_for(armed(urgent, urgent.web, sid, cc), what="the first watcher's claim")
    w2 = start_watcher(urgent, urgent.web, cc, sid)
    assert w2.wait(timeout=15) == 0  # the launch has its watcher: the second ends at once
    assert w1.poll() is None
    drain("UserPromptSubmit", urgent.web, cc, sid)  # the session works again
    assert w1.wait(timeout=5) == 0 and w1.stderr.read() == b""
    assert not claim_path(urgent, urgent.web, sid, cc).exists()


def test_watcher_ends_with_its_launch(urgent, claude):
    cc, sid = claude(), "s-gone"
    w = start_watcher(urgent, urgent.web, cc, sid)
    wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
    claim = claim_path(urgent, urgent.web, sid, cc)
    cc.kill()
    cc.wait()
    assert w.wait(timeout=5) == 0
    assert list(claim.parent.iterdir()) == []


def test_off_and_a_filter_for_another_session_do_not_wake(urgent, claude):
    cc, sid = claude(), "s-off"
    send(urgent, urgent.web, "for someone else", "--session", "s-other")
    run_cli("off", cwd=urgent.main, check=True)
    send(urgent, urgent.web, "while off")
    w = start_watcher(urgent, urgent.web, cc, sid, reach=1.5)
    assert w.wait(timeout=15) == 0
    run_cli("on", cwd=urgent.main, check=True)
    w = start_watcher(urgent, urgent.web, cc, sid)
    out, err = w.communicate(timeout=15)
    assert w.returncode == 2 and err.startswith(b"1 new message(s)"), err  # "while off" only


def test_wake_budget_then_the_mail_waits_and_the_user_is_told(urgent, claude):
    cc, sid = claude(), "s-budget"
    drain("SessionStart", urgent.web, cc, sid)
    for i in range(6):
        send(urgent, urgent.web, f"message {i}")
        w = start_watcher(urgent, urgent.web, cc, sid)
        assert w.wait(timeout=15) == 2, i
    send(urgent, urgent.web, "one too many")
    w = start_watcher(urgent, urgent.web, cc, sid)
    assert w.wait(timeout=15) == 0 and w.stderr.read() == b""
    answer, _ = drain("Stop", urgent.web, cc, sid)
    assert "wake budget spent (6 wakes in 10 minutes): 1 message(s)" in answer["systemMessage"], answer
    answer, _ = drain("UserPromptSubmit", urgent.web, cc, sid)  # the next prompt shows it
    assert "one too many" in hermetic.context_of(answer)


def test_list_and_who_show_wakeable_until_while_a_watcher_is_armed(urgent, claude):
    cc, sid = claude(), "s-list"
    drain("SessionStart", urgent.web, cc, sid)
    drain("Stop", urgent.web, cc, sid)
    w = start_watcher(urgent, urgent.web, cc, sid)
    wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
    data = json.loads(run_cli("list", "--json", cwd=urgent.main, check=True).stdout)
    rec = [s for b in data["boxes"] for s in b["sessions"] if s["session"] == sid]
    assert rec and rec[0]["wakeable_until"].endswith("Z"), rec
    text = run_cli("list", cwd=urgent.main, check=True).stdout
    assert "wakeable until " in text, text
    who = json.loads(run_cli("who", "--json", cwd=urgent.main, check=True).stdout)
    [mine] = [r for r in who["sessions"] if r["session"] == sid]
    assert mine["state"] == "idle" and mine["wakeable_until"] == rec[0]["wakeable_until"], mine
    # a person's time format (issue 25), and lines wrapped at 100 columns
    assert f"wakeable until {person_time(mine['wakeable_until'])}" \
        in " ".join(run_cli("who", cwd=urgent.main, check=True).stdout.split())
    drain("UserPromptSubmit", urgent.web, cc, sid)
    w.wait(timeout=5)
    data = json.loads(run_cli("list", "--json", cwd=urgent.main, check=True).stdout)
    rec = [s for b in data["boxes"] for s in b["sessions"] if s["session"] == sid]
    assert rec[0]["wakeable_until"] is None


# -- the verdict at send ---------------------------------------------------------------------
def send_json(clone, to, body, *extra):
    proc = run_cli("send", "--json", "--to", str(to), *extra, "--", body, cwd=clone.main, check=True)
    (res,) = json.loads(proc.stdout)["results"]
    return res


def test_verdict_queued_without_a_live_session_and_refused_when_not_queued(clone):
    install(clone.main)  # wired: without a hook, nothing would show it (test_true_words.py)
    res = send_json(clone, clone.web, "nobody there")
    assert (res["verdict"], res["why"]) == ("queued", "no live session there; it is shown when one starts")
    assert res["as_of"].endswith("Z")
    proc = run_cli("send", "--json", "--to", "/nonexistent/x", "--", "lost?", cwd=clone.main)
    (bad,) = json.loads(proc.stdout)["results"]
    assert proc.returncode == 1 and bad["verdict"] == "refused" and bad["ok"] is False


def test_verdict_delivered_only_on_a_live_launchs_marker(clone, claude):
    cc, sid = claude(), "s-verdict"
    drain("UserPromptSubmit", clone.web, cc, sid)  # a session working there
    p = subprocess.Popen([os.path.dirname(os.sys.executable) + "/git-korus-mail", "send", "--json", "--wait=30",
                          "--to", str(clone.web), "--", "shown soon"], cwd=str(clone.main),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    inbox = lambda: [q for q in (clone.mail_root / "box").glob("*/inbox/*.json")]  # noqa: E731
    wait_for(lambda: inbox(), what="the message queued")
    assert p.poll() is None  # waiting for the proof: a working session could show it
    answer, _ = drain("PostToolUse", clone.web, cc, sid)  # its next tool call shows it
    assert "shown soon" in hermetic.context_of(answer)
    out, err = p.communicate(timeout=30)
    (res,) = json.loads(out)["results"]
    assert res["verdict"] == "delivered" and res["shown_to"]["session"] == sid, res
    assert res["shown_to"]["event"] == "PostToolUse"
    # a marker of a launch that is gone proves nothing any more (its markers authorize nothing)
    from git_korus_mail.core import verdict
    from git_korus_mail.store.files import MailRoot
    cc.kill()
    cc.wait()
    root = MailRoot.open(str(clone.common_dir))
    assert verdict.judge(root.box(res["box"]), res["id"])["verdict"] == "queued"


def test_uninstall_ends_an_armed_watcher(urgent, claude):
    cc, sid = claude(), "s-uninstall"
    w = start_watcher(urgent, urgent.web, cc, sid)
    wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
    run_cli("uninstall", cwd=urgent.main, check=True)
    assert w.wait(timeout=10) == 0
    send(urgent, urgent.web, "after uninstall")  # nobody is woken by it


def test_mail_the_limits_drop_or_hold_back_wakes_nobody(urgent, claude):
    """issue 22 item 9: a wake says the mail is in the woken turn's context, so only mail that
    turn will show may wake: not a loop the limits drop, not mail held behind the backlog."""
    git("config", "korus-mail.loop-seconds", "600", cwd=urgent.main)  # the loop's window spans the test
    cc, sid = claude(), "s-limits"
    drain("SessionStart", urgent.web, cc, sid)
    send(urgent, urgent.web, "done")
    answer, _ = drain("UserPromptSubmit", urgent.web, cc, sid)
    assert "done" in hermetic.context_of(answer)
    drain("Stop", urgent.web, cc, sid)  # consumed
    w = start_watcher(urgent, urgent.web, cc, sid, reach=2)
    wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
    send(urgent, urgent.web, "done")  # the same text again from the same sender: a loop
    out, err = w.communicate(timeout=15)
    assert (w.returncode, out, err) == (0, b"", b""), err
    answer, _ = drain("UserPromptSubmit", urgent.web, cc, sid)  # what the wake would have led to
    text = hermetic.context_of(answer)
    assert "dropped by its limits (1 as loop" in text and "| done" not in text, text
    drain("Stop", urgent.web, cc, sid)
    # the backlog: one message this session was shown and has not consumed fills a backlog of one;
    # one for another session takes no place in it (docs/DESIGN.md, "Limits"), as the drain counts
    send(urgent, urgent.web, "for someone else", "--session", "s-other")
    send(urgent, urgent.web, "fills the backlog")
    drain("UserPromptSubmit", urgent.web, cc, sid)  # shown, not consumed: it wakes nobody itself
    send(urgent, urgent.web, "behind the backlog")
    git("config", "korus-mail.backlog", "1", cwd=urgent.main)  # after all three: send refuses at the limit
    w = start_watcher(urgent, urgent.web, cc, sid, reach=2)
    out, err = w.communicate(timeout=15)
    assert (w.returncode, out, err) == (0, b"", b""), err
    answer, _ = drain("UserPromptSubmit", urgent.web, cc, sid)
    assert "1 message held back" in hermetic.context_of(answer)
    drain("Stop", urgent.web, cc, sid)
    # room again, the backlog still one: the shown message is consumed, and the one for another
    # session still queued ahead holds nothing back, so now it wakes
    w = start_watcher(urgent, urgent.web, cc, sid)
    out, err = w.communicate(timeout=15)
    assert w.returncode == 2 and err.startswith(b"1 new message(s)"), err
    invariants.check(urgent.mail_root)


def _judge(clone, msg_id):
    """The verdict `send` would give `msg_id` now (core/verdict.py), from the store as it is."""
    from git_korus_mail.core import verdict
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(str(clone.common_dir))
    from git_korus_mail.store import records  # loaded where used
    [box] = [b for b in root.boxes() if records.fate(b, msg_id)[0] != "gone"]
    return verdict.judge(box, msg_id)


def test_verdict_says_woken_right_after_the_wake_tier_woke_the_session(urgent, claude):
    """issue 25: right after a wake the verdict called the session "not wakeable"."""
    cc, sid = claude(), "s-woken"
    drain("SessionStart", urgent.web, cc, sid)
    drain("Stop", urgent.web, cc, sid)
    w = start_watcher(urgent, urgent.web, cc, sid)
    wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
    msg_id = send(urgent, urgent.web, "wake up")
    assert w.wait(timeout=15) == 2  # woken
    res = _judge(urgent, msg_id)
    assert (res["verdict"], res["why"]) == (
        "queued", "a session there was woken for it; it is shown in the turn the wake started"), res


def test_who_and_the_verdict_say_a_spent_wake_budget(urgent, claude):
    """issue 25: `who` said "wakeable until" for a session whose wake budget was spent."""
    cc, sid = claude(), "s-spent"
    drain("SessionStart", urgent.web, cc, sid)
    for i in range(6):
        send(urgent, urgent.web, f"message {i}")
        w = start_watcher(urgent, urgent.web, cc, sid)
        assert w.wait(timeout=15) == 2, i
    w = start_watcher(urgent, urgent.web, cc, sid)  # armed: nothing waits that has not woken it
    wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
    who = json.loads(run_cli("who", "--json", cwd=urgent.main, check=True).stdout)
    [mine] = [r for r in who["sessions"] if r["session"] == sid]
    assert mine["state"] == "idle" and mine["wakeable_until"] is None, mine
    assert mine["wake_budget_spent_until"].endswith("Z"), mine
    text = " ".join(run_cli("who", cwd=urgent.main, check=True).stdout.split())
    assert "wakeable until" not in text and f"wake budget spent until {person_time(mine['wake_budget_spent_until'])}" \
        " (new mail waits for its next prompt)" in text, text
    listed = json.loads(run_cli("list", "--json", cwd=urgent.main, check=True).stdout)
    assert [s["wakeable_until"] for b in listed["boxes"] for s in b["sessions"] if s["session"] == sid] == [None]
    msg_id = send(urgent, urgent.web, "one too many")
    assert w.wait(timeout=15) == 0  # the budget: not woken
    res = _judge(urgent, msg_id)
    assert res["why"] == (f"a session there is idle and its wake budget is spent until "
                          f"{mine['wake_budget_spent_until']}; it is shown at its next prompt"), res


# -- the box's FIFO (store/watch.py open_signal, issue 26): a publication wakes the watcher at once --
# The watcher run directly (as the stub runs it, `drain --watch`), with its own looks at the inbox
# set to an hour: only the publication's poke can make it look in time.
_SLOW_LOOKS = (
    "import sys\n"
    "from git_korus_mail.core import wake\n"
    "wake.RESCAN = wake.SIGNAL_POLL = 3600.0\n"
    "_orig = wake.watch_launch\n"
    "wake.watch_launch = lambda *a, **kw: _orig(*a, poll=3600.0, **kw)\n"
    "from git_korus_mail.commands.drain import main\n"
    "sys.exit(main(['--watch']))\n"
)


_LOOKS = "import sys\nfrom git_korus_mail.commands.drain import main\nsys.exit(main(['--watch']))\n"


def slow_watcher(clone, worktree, claude, session, code=_SLOW_LOOKS):
    """The watcher process itself (no stub between: a kill ends it), by default with its own
    looks an hour apart."""
    from helpers import PYTHON
    env = dict(os.environ, **env_for(claude, session))
    p = subprocess.Popen([PYTHON, "-c", code], cwd=str(worktree), env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=lambda: os.umask(0o477))
    p.stdin.write(json.dumps(hermetic.payload("Stop", session, worktree)).encode())
    p.stdin.close()
    p.stdin = None
    return p


def fifo_of(clone, worktree, session, claude):
    claim = claim_path(clone, worktree, session, claude)
    return claim.parent / f".{claim.name}.signal"


def fifo_ready(clone, worktree, session, claude):
    import stat

    def check():
        try:
            st = os.lstat(fifo_of(clone, worktree, session, claude))
        except (OSError, AttributeError):
            return False
        # pinned: watch/.<session>@<launch>.signal, a FIFO, 0600 whatever the umask
        assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        return True
    return check


def test_a_watcher_is_woken_by_the_publication_not_by_a_later_look(urgent, claude):
    cc, sid = claude(), "s-poke"
    drain("SessionStart", urgent.web, cc, sid)
    w = slow_watcher(urgent, urgent.web, cc, sid)
    with reaped(w):
        wait_for(armed(urgent, urgent.web, sid, cc), what="the watcher's claim")
        wait_for(fifo_ready(urgent, urgent.web, sid, cc), what="the watcher's FIFO")
        time.sleep(0.5)  # its first look (an empty inbox) is behind it: the next is an hour away
        send(urgent, urgent.web, "poked awake")
        out, err = w.communicate(timeout=30)  # an hour's look would not come in time
    assert w.returncode == 0, err
    assert out.decode().startswith("korus-mail-wake 1 new message(s) from "), (out, err)
    assert not fifo_of(urgent, urgent.web, sid, cc).exists()  # gone with the claim
    assert not claim_path(urgent, urgent.web, sid, cc).exists()
    invariants.check(urgent.mail_root, idle=False)


def test_a_prompt_ends_the_watcher_and_its_fifo(urgent, claude):
    """The prompt's drain ends the watcher with SIGTERM, which ends it at once without its own
    cleanup (commands/watch.py): the FIFO goes with the claim (store/watch.disarm)."""
    cc, sid = claude(), "s-poke-prompt"
    drain("SessionStart", urgent.web, cc, sid)
    w = slow_watcher(urgent, urgent.web, cc, sid)
    with reaped(w):
        wait_for(fifo_ready(urgent, urgent.web, sid, cc), what="the watcher's FIFO")
        drain("UserPromptSubmit", urgent.web, cc, sid)
        assert w.wait(timeout=30) == 0
    assert not fifo_of(urgent, urgent.web, sid, cc).exists()
    assert not claim_path(urgent, urgent.web, sid, cc).exists()


def test_a_killed_watchers_fifo_never_holds_up_a_send_and_is_swept(urgent, claude):
    import signal
    cc, sid = claude(), "s-poke-killed"
    drain("SessionStart", urgent.web, cc, sid)
    w = slow_watcher(urgent, urgent.web, cc, sid)
    fifo = None
    with reaped(w):
        wait_for(fifo_ready(urgent, urgent.web, sid, cc), what="the watcher's FIFO")
        fifo = fifo_of(urgent, urgent.web, sid, cc)
        w.send_signal(signal.SIGKILL)
        w.communicate(timeout=30)
    assert fifo.exists()  # nobody reads it now
    send(urgent, urgent.web, "no reader")  # the poke's open fails at once: the send is not held up
    cc.kill()
    cc.wait()  # its launch ended: the watcher's leftovers are provably dead
    cc2, sid2 = claude(), "s-poke-next"
    drain("SessionStart", urgent.web, cc2, sid2)
    w2 = start_watcher(urgent, urgent.web, cc2, sid2, reach=1)  # its arming sweeps the dead launch's files
    w2.communicate(timeout=30)
    assert not fifo.exists()
    assert not fifo.with_name(fifo.name[1:-len(".signal")]).exists()


def test_mail_that_comes_without_a_poke_still_wakes_by_the_watchers_own_look(urgent, claude, monkeypatch):
    """A publisher killed between its link and its poke, or one of an older version, pokes
    nobody: the watcher's own look at the inbox (every 0.1 s with a FIFO) finds the mail."""
    from git_korus_mail.store import watch
    cc, sid = claude(), "s-no-poke"
    drain("SessionStart", urgent.web, cc, sid)
    w = slow_watcher(urgent, urgent.web, cc, sid, code=_LOOKS)  # its looks as shipped
    with reaped(w):
        wait_for(fifo_ready(urgent, urgent.web, sid, cc), what="the watcher's FIFO")
        poked = []
        monkeypatch.setattr(watch, "poke", lambda box: poked.append(box))  # this publisher pokes nobody
        publish_question(urgent, urgent.web, "unpoked: ready?")
        assert len(poked) == 1  # the stand-in ran in place of the poke: no byte was written
        out, err = w.communicate(timeout=30)
    assert w.returncode == 0, err
    assert out.decode().startswith("korus-mail-wake 1 new message(s) from "), (out, err)
