"""Two wirings of one hook event (issue 21 item 7): with `install` and `install --scope user`,
Claude Code runs two drains for every event, in parallel, with the same stdin and the same
CLAUDE_PID. A message must reach the launch's context once per event however many run, and a
drain killed after it claimed the event must not lose the show (docs/HOOKS.md, "One answer per
event"; store/events.py). Real separate processes; the gaps are held open with the crash
module's pause points, never by timing."""

import json
import os
import signal
import subprocess
import time

import invariants
from helpers import PYTHON, context_of, hook, launch_dir, run_cli


from test_new_context import box_dir, names, send  # noqa: E402 - the same small helpers


def payload(event, cwd, session="s1", **extra):
    p = {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event}
    if event == "SessionStart":
        p["source"] = "startup"
    p.update(extra)
    return json.dumps(p).encode()


def start(data, cwd, env=None):
    """A drain process waiting for its stdin (Python is up by the time we write it)."""
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.Popen([PYTHON, "-m", "git_korus_mail", "drain"], cwd=cwd, env=full,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc, timeout=60):
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait(timeout=timeout)
    return proc.returncode, out.decode(), err.decode()


def feed(proc, data):
    proc.stdin.write(data)
    proc.stdin.close()


def wait_file(path, proc=None, timeout=30):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert proc is None or proc.poll() is None, finish(proc)
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def copies(outs, needle):
    return sum((context_of(json.loads(o)) or "").count(needle) for o in outs if o.strip())


def test_two_parallel_drains_of_one_event_show_each_message_once(clone):
    """Both wirings started together, released together, three events in a row: every message
    reaches the context once. Before the fix both drains showed it (as in issue 21)."""
    hook("SessionStart", clone.web, "s1")
    events = [("UserPromptSubmit", {"prompt": "go", "prompt_id": "p1"}),
              ("PostToolUse", {"tool_use_id": "toolu_1", "prompt_id": "p1"}),
              ("PostToolUse", {"tool_use_id": "toolu_2", "prompt_id": "p1"})]
    for n, (event, extra) in enumerate(events):
        needle = f"twin-body-{n}"
        send(clone, needle)
        data = payload(event, clone.web, **extra)
        a, b = start(data, clone.web), start(data, clone.web)
        time.sleep(0.3)  # not asserted: only gives both interpreters time to reach the read
        feed(a, data)
        feed(b, data)
        results = [finish(a), finish(b)]
        assert all(rc == 0 for rc, _, _ in results), results
        outs = [o for _, o, _ in results]
        assert copies(outs, needle) == 1, outs
        assert sum(bool(o.strip()) for o in outs) == 1, outs  # the twin says nothing at all
    hook("Stop", clone.web, "s1")
    b = box_dir(clone, clone.web)
    assert len(names(b / "seen")) == 3 and names(b / "inbox") == []
    invariants.check(clone.mail_root)


def test_the_twin_waits_for_the_holder_and_stays_silent(clone, tmp_path):
    send(clone, "held-by-the-first")
    data = payload("SessionStart", clone.web)
    go = str(tmp_path / "go")
    a = start(data, clone.web, env={"KORUS_MAIL_PAUSE_AT": f"event:claimed:{go}"})
    feed(a, data)
    wait_file(go + ".reached", a)  # a holds the event's claim and has not answered yet
    b = start(data, clone.web)
    feed(b, data)
    time.sleep(0.5)  # not asserted as timing: b must still be waiting, whatever the delay
    assert b.poll() is None, finish(b)
    open(go, "w").close()
    (rc_a, out_a, err_a), (rc_b, out_b, err_b) = finish(a), finish(b)
    assert rc_a == 0 and rc_b == 0, (err_a, err_b)
    assert "| held-by-the-first" in context_of(json.loads(out_a))
    assert out_b.strip() == "", out_b
    # the claim, pinned: events/<session>@<launch>.<32 hex of the payload's sha256>, answered
    (claim,) = names(box_dir(clone, clone.web) / "events")
    import hashlib
    assert claim == f"{launch_dir('s1')}.{hashlib.sha256(data).hexdigest()[:32]}"
    rec = json.loads((box_dir(clone, clone.web) / "events" / claim).read_text())
    assert sorted(rec) == ["at", "pid", "state", "ticks"] and rec["state"] == "answered"
    assert rec["pid"] == a.pid


def test_a_holder_killed_after_claiming_leaves_the_show_to_its_twin(clone, tmp_path):
    mid = send(clone, "shown-by-the-twin")
    data = payload("UserPromptSubmit", clone.web, prompt="go", prompt_id="p1")
    hook("SessionStart", clone.web, "s1", extra={"source": "resume"})  # nothing new: just a launch
    mid2 = send(clone, "second")
    go = str(tmp_path / "go")
    a = start(data, clone.web, env={"KORUS_MAIL_PAUSE_AT": f"event:claimed:{go}"})
    feed(a, data)
    wait_file(go + ".reached", a)
    b = start(data, clone.web)
    feed(b, data)
    os.kill(a.pid, signal.SIGKILL)  # killed while it holds the claim, before any output
    rc_a, out_a, _ = finish(a)
    rc_b, out_b, err_b = finish(b)
    assert rc_a == -signal.SIGKILL and out_a == ""
    assert rc_b == 0, err_b
    assert "| second" in context_of(json.loads(out_b))
    hook("Stop", clone.web, "s1")
    b_dir = box_dir(clone, clone.web)
    assert sorted(names(b_dir / "seen")) == sorted([mid + ".json", mid2 + ".json"])
    invariants.check(clone.mail_root)


def test_parallel_stops_consume_once_and_say_nothing_of_each_other(clone):
    mid = send(clone, "consumed-once")
    assert "| consumed-once" in context_of(hook("SessionStart", clone.web, "s1")[0])
    data = payload("Stop", clone.web, prompt_id="p1", last_assistant_message="done", stop_hook_active=False)
    a, b = start(data, clone.web), start(data, clone.web)
    time.sleep(0.3)
    feed(a, data)
    feed(b, data)
    outs = [finish(a), finish(b)]
    assert all(rc == 0 for rc, _, _ in outs), outs
    assert all(o.strip() == "" for _, o, _ in outs), outs  # no "claimed by another process" notice
    assert names(box_dir(clone, clone.web) / "seen") == [mid + ".json"]
    invariants.check(clone.mail_root)


def test_the_same_payload_later_is_another_event(clone):
    """Two compactions in one turn carry identical payloads; the second comes after the first's
    hooks ended, so it is answered again (and re-shows what the lost context held)."""
    send(clone, "twice-compacted")
    hook("SessionStart", clone.web, "s1")
    extra = {"source": "compact", "prompt_id": "p1", "model": "m"}
    first = hook("SessionStart", clone.web, "s1", extra=extra)[0]
    second = hook("SessionStart", clone.web, "s1", extra=extra)[0]
    assert "| twice-compacted" in context_of(first) and "| twice-compacted" in context_of(second)


def test_an_event_started_in_the_tick_its_twin_answered_in_is_the_next_event():
    """A process's start time counts whole clock ticks. The next event with the same payload can
    start within the tick its predecessor answered in (tests do, quickly): it must be answered,
    never taken for a silent twin (that left a Stop consuming nothing, at random, in the suite)."""
    from git_korus_mail.store import events
    answered = {"state": "answered", "ticks": 1000.4, "at": 0}
    assert events._same_event(answered, 999)          # started a tick before the answer: a twin
    assert not events._same_event(answered, 1000)     # the answer's own tick: the next event
    assert not events._same_event(answered, 1001)


def test_install_says_and_doctor_names_a_double_wiring(clone):
    local = run_cli("install", cwd=clone.main, check=True)
    assert "both scopes" not in local.stdout  # one scope: nothing to say
    user = run_cli("install", "--scope", "user", cwd=clone.main, check=True)
    user_settings = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "settings.json")
    # the note is wrapped at 100 columns (issue 25): its lines after the first are indented
    flat = " ".join(user.stdout.split("\nnote  ", 1)[1].split("\n    ")).split("\n", 1)[0]
    note = ["note  " + " ".join(flat.split())]
    assert note == [f"note  Claude Code is wired in both scopes for this clone (each worktree's settings "
                    f"and {user_settings}): it runs both hooks at every event, in parallel. korus-mail "
                    f"keeps both and answers each event once (the other hook stays silent), at the cost "
                    f"of a second hook run per event. One scope is enough: git korus-mail uninstall "
                    f"--scope local"], user.stdout
    doctor = json.loads(run_cli("doctor", "--json", cwd=clone.main).stdout)
    named = [f for f in doctor["findings"] if f["detail"].startswith("wired twice: Claude Code is wired in both")]
    assert [f["where"] for f in named] == [user_settings], doctor["findings"]
    assert named[0]["detail"].endswith("uninstall --scope user")
    run_cli("uninstall", "--scope", "user", cwd=clone.main, check=True)
    doctor = json.loads(run_cli("doctor", "--json", cwd=clone.main).stdout)
    assert not [f for f in doctor["findings"] if "wired twice" in f["detail"]]


def test_a_compaction_run_by_two_wirings_shows_the_lost_mail_once_and_keeps_its_proof(clone):
    """The twin of a SessionStart(compact) must neither show the mail a second time nor drop
    the display markers its holder just wrote (then nothing would be consumed)."""
    mid = send(clone, "lost-in-compaction")
    hook("SessionStart", clone.web, "s1")
    hook("UserPromptSubmit", clone.web, "s1", extra={"prompt": "go", "prompt_id": "p1"})
    data = payload("SessionStart", clone.web, source="compact", prompt_id="p1", model="m")
    a, b = start(data, clone.web), start(data, clone.web)
    time.sleep(0.3)
    feed(a, data)
    feed(b, data)
    outs = [finish(a), finish(b)]
    assert all(rc == 0 for rc, _, _ in outs), outs
    assert copies([o for _, o, _ in outs], "lost-in-compaction") == 1, outs
    hook("Stop", clone.web, "s1", extra={"prompt_id": "p1", "last_assistant_message": "ok"})
    assert names(box_dir(clone, clone.web) / "seen") == [mid + ".json"]
    invariants.check(clone.mail_root)
