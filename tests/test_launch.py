"""Display markers are keyed by launch: a session id plus the client process that showed the mail.

Claude Code keeps the session id across --resume, so two processes can carry one id. Each test
here stands in for Claude Code with real processes (`sleep`-like children whose pids the hooks
get as CLAUDE_PID), kills one with SIGKILL as a crash or a closed laptop lid would, and runs
every hook event as its own `git-korus-mail drain` process. Marker directory names are computed
from /proc by the tests (helpers.launch_dir), not by the product.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from helpers import context_of, hook, launch_dir, proc_start_ticks, run_cli
from git_korus_mail.core import keys
from git_korus_mail.store import markers

SESSION = "3a41ebd9-4ef9-482f-bdd5-d8b563fac427"


def box_dir(clone):
    return clone.mail_root / "box" / keys.key_for(str(clone.web)).name


def names(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def send(clone, body):
    proc = run_cli("send", "--to", "../web", body, cwd=clone.main, check=True)
    return proc.stdout.split()[1]


class FakeClaude:
    """A real process standing in for one Claude Code launch: its pid is the hooks' CLAUDE_PID."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        self.pid = self.proc.pid
        self.start = proc_start_ticks(self.pid)

    def hook(self, event, clone, session=SESSION):
        return hook(event, clone.web, session, env={"CLAUDE_PID": str(self.pid)})

    @property
    def dir_name(self):
        return launch_dir(SESSION, self.pid, self.start)

    def sigkill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()  # reaped: /proc no longer lists it

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def launches():
    made = []

    def make():
        f = FakeClaude()
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()


def receipt(clone, msg_id):
    p = box_dir(clone) / "receipts" / (msg_id + ".json")
    return json.loads(p.read_text()) if p.exists() else None


def test_resumed_launch_after_a_sigkill_is_shown_the_mail_again_and_consumes_it(clone, launches):
    """The issue's sequence: launch A of session X shows M and is SIGKILLed before any prompt;
    launch B of the same X must be shown M (not told "already shown"), and only then consume it."""
    a = launches()
    msg_id = send(clone, "PAYLOAD-M for web")
    assert "PAYLOAD-M" in context_of(a.hook("SessionStart", clone)[0])
    b_dir = box_dir(clone)
    a_marked = set(names(b_dir / "shown"))
    a.sigkill()

    b = launches()
    ctx = context_of(b.hook("SessionStart", clone)[0])
    assert "PAYLOAD-M" in ctx and "already shown" not in ctx, ctx
    assert receipt(clone, msg_id) is None, "consumed before the new launch's Stop"
    b.hook("Stop", clone)
    r = receipt(clone, msg_id)
    assert r is not None and r["session"] == SESSION
    assert r["launch"]["pid"] == b.pid and r["launch"]["start"] == b.start, r["launch"]
    assert r["observed"]["launch"] == r["launch"]["tag"] and SESSION + "@" + r["launch"]["tag"] == b.dir_name
    # the dead launch's markers were swept at B's SessionStart (bounded, and A is provably gone)
    assert a_marked == {a.dir_name} and not (b_dir / "shown" / a.dir_name).exists()
    # the sender's status names the launch that consumed it
    st = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    fate = [m["fate"] for m in st["sent"] if m["id"] == msg_id][0]
    assert fate["state"] == "consumed" and fate["session"] == SESSION and fate["launch"] == r["launch"]["tag"]
    text = run_cli("status", cwd=clone.main, check=True).stdout
    assert f" ago by session {SESSION[:8]}\n" in text, text  # the launch is in --json


def test_marker_layout_on_disk(clone, launches):
    """shown/<session>@<pid>-<start ticks>-<boot id[:8]>/: a `.launch` record and one marker per message."""
    a = launches()
    msg_id = send(clone, "layout")
    a.hook("SessionStart", clone)
    d = box_dir(clone) / "shown" / a.dir_name
    assert names(d) == [".launch", msg_id]
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    rec = json.loads((d / ".launch").read_text())
    assert rec == {"client": "claude", "tag": f"{a.pid}-{a.start}-{boot[:8]}", "pid": a.pid, "start": a.start,
                   "boot": boot, "pidns": os.readlink("/proc/self/ns/pid"), "host": os.uname().nodename,
                   "session": SESSION}
    obs = json.loads((d / msg_id).read_text())
    assert obs["session"] == SESSION and obs["launch"] == rec["tag"] and obs["event"] == "SessionStart"
    assert oct((d / msg_id).stat().st_mode & 0o777) == "0o600" and oct(d.stat().st_mode & 0o777) == "0o700"


def test_a_stop_consumes_nothing_its_launch_did_not_show(clone, launches):
    a = launches()
    msg_id = send(clone, "shown by A only")
    a.hook("SessionStart", clone)
    a.sigkill()
    b = launches()
    ans, _ = b.hook("Stop", clone)  # a Stop with no display in this launch
    assert ans is None
    assert receipt(clone, msg_id) is None
    assert names(box_dir(clone) / "inbox") == [msg_id + ".json"]


def test_a_marker_of_a_live_launch_authorizes_only_that_launch(clone, launches):
    """Two live processes with one session id (the same session resumed in two terminals):
    each is shown the mail; the first Stop consumes it once, the other finds it gone."""
    a, b = launches(), launches()
    msg_id = send(clone, "for both terminals")
    assert "for both terminals" in context_of(a.hook("SessionStart", clone)[0])
    assert "for both terminals" in context_of(b.hook("SessionStart", clone)[0])
    b.hook("Stop", clone)
    assert receipt(clone, msg_id)["launch"]["pid"] == b.pid
    a.hook("Stop", clone)
    assert receipt(clone, msg_id)["launch"]["pid"] == b.pid
    assert names(box_dir(clone) / "seen") == [msg_id + ".json"]
    assert names(box_dir(clone) / "shown" / a.dir_name) == [".launch"]  # A's marker went with the "gone"


def test_without_a_launch_mail_is_shown_once_and_never_consumed(clone, launches):
    msg_id = send(clone, "nobody can prove they saw me")
    no_pid = {"CLAUDE_PID": ""}
    assert "nobody can prove" in context_of(hook("SessionStart", clone.web, SESSION, env=no_pid)[0])
    assert hook("UserPromptSubmit", clone.web, SESSION, env=no_pid)[0] is None  # not shown again
    ans, _ = hook("Stop", clone.web, SESSION, env=no_pid)
    assert "1 message(s) shown but left queued" in ans["systemMessage"] and "CLAUDE_PID" in ans["systemMessage"]
    assert hook("Stop", clone.web, SESSION, env=no_pid)[0] is None  # said once per session
    assert receipt(clone, msg_id) is None
    assert names(box_dir(clone) / "shown" / f"{SESSION}@unknown") == [msg_id]
    # a real launch of the same session is shown it and consumes it
    b = launches()
    assert "nobody can prove" in context_of(b.hook("SessionStart", clone)[0])
    b.hook("Stop", clone)
    assert receipt(clone, msg_id)["launch"]["pid"] == b.pid


def test_a_claude_pid_that_does_not_run_is_no_launch(clone, launches):
    gone = launches()
    gone.sigkill()
    msg_id = send(clone, "for a ghost")
    env = {"CLAUDE_PID": str(gone.pid)}
    assert "for a ghost" in context_of(hook("SessionStart", clone.web, SESSION, env=env)[0])
    ans, _ = hook("Stop", clone.web, SESSION, env=env)
    assert "left queued" in ans["systemMessage"] and f"process {gone.pid} does not run" in ans["systemMessage"]
    assert receipt(clone, msg_id) is None


def test_markers_of_the_layout_before_launches_authorize_nothing(clone, launches):
    """`shown/<session>/<id>` from a version that keyed markers by session only."""
    msg_id = send(clone, "marked the old way")
    legacy = box_dir(clone) / "shown" / SESSION
    legacy.mkdir(parents=True, mode=0o700)
    (legacy / msg_id).write_text(json.dumps({"session": SESSION, "event": "SessionStart"}))
    b = launches()
    b.hook("Stop", clone)
    assert receipt(clone, msg_id) is None
    assert "marked the old way" in context_of(b.hook("SessionStart", clone)[0])
    assert not legacy.exists(), "the old layout's directory was not swept"
    b.hook("Stop", clone)
    assert receipt(clone, msg_id)["launch"]["pid"] == b.pid


def test_a_marker_copied_from_another_launch_is_refused(clone, launches):
    a = launches()
    msg_id = send(clone, "copied marker")
    a.hook("SessionStart", clone)
    a.sigkill()
    b = launches()
    shown = box_dir(clone) / "shown"
    (shown / b.dir_name).mkdir(mode=0o700)
    (shown / b.dir_name / msg_id).write_bytes((shown / a.dir_name / msg_id).read_bytes())
    ans, _ = b.hook("Stop", clone)
    assert "was not written by this launch" in ans["systemMessage"]
    assert receipt(clone, msg_id) is None


def _dead_launch_dir(shown, session, fake, ids):
    d = shown / launch_dir(session, fake.pid, fake.start)
    d.mkdir(mode=0o700)
    for i in ids:
        (d / i).write_text("{}")
    return d


def test_dead_launches_are_swept_a_few_per_event_and_live_ones_kept(clone, launches):
    msg_id = send(clone, "x")
    me = launches()
    me.hook("SessionStart", clone)
    live = launches()
    live.hook("SessionStart", clone, session="live-other-session")
    shown = box_dir(clone) / "shown"
    live_dir = launch_dir("live-other-session", live.pid, live.start)
    dead_dirs = []
    for i in range(3 * markers.SWEEP_DIRS):
        f = launches()
        dead_dirs.append(_dead_launch_dir(shown, f"dead-{i}", f, [msg_id, f"{msg_id}.skip"]).name)
        f.sigkill()
    (shown / "junk-file").write_text("not a directory")
    reused = launches()  # a running pid, but not the process the directory names
    reused_dir = launch_dir("reused", reused.pid, reused.start + 1)
    (shown / reused_dir).mkdir()
    expected_gone = set(dead_dirs) | {"junk-file", reused_dir}
    before = set(names(shown))
    me.hook("Stop", clone)
    after = set(names(shown))
    assert len(before - after) <= markers.SWEEP_DIRS, "one event judged more than its share"
    assert before - after <= expected_gone
    for _ in range(60):
        if not (set(names(shown)) & expected_gone):
            break
        me.hook("Stop", clone)
    assert not (set(names(shown)) & expected_gone), "dead launches' markers were never swept"
    assert {me.dir_name, live_dir} <= set(names(shown))
    assert names(shown / live_dir) == [".launch", msg_id]


def test_session_end_clears_only_its_own_launch(clone, launches):
    a, b = launches(), launches()
    msg_id = send(clone, "kept")
    a.hook("SessionStart", clone)
    b.hook("SessionStart", clone)
    b.hook("SessionEnd", clone)
    shown = box_dir(clone) / "shown"
    assert not (shown / b.dir_name).exists()
    assert names(shown / a.dir_name) == [".launch", msg_id]
    assert names(box_dir(clone) / "inbox") == [msg_id + ".json"]


def test_presence_of_a_launch_whose_pid_now_runs_another_process_is_gone(clone, launches):
    """`list` (and `send --to all`) judge a session by its launch: pid AND start time."""
    a = launches()
    a.hook("SessionStart", clone)

    def state():
        data = json.loads(run_cli("list", "--json", cwd=clone.main, check=True).stdout)
        row = [r for r in data["boxes"] if r["slug"] == "web"][0]
        return {s["session"]: s["state"] for s in row["sessions"]}[SESSION]

    assert state() == "idle"
    rec_path = box_dir(clone) / "sessions" / (SESSION + ".json")
    rec = json.loads(rec_path.read_text())
    assert rec["client_pid"] == a.pid and rec["launch"] == a.dir_name.split("@")[1]
    # as if the pid had been reused: the same pid, started at another time
    rec["launch"] = f"{a.pid}-{a.start + 1}-{rec['launch'].rsplit('-', 1)[1]}"
    rec_path.write_text(json.dumps(rec))
    assert state() == "gone"

