"""The presence record's pid under its two keys: `client_pid` (now) and `claude_pid` (0.1.0,
which named one client though it held every client's pid). docs/STORE.md, "Presence: the pid's
two keys", is the rule: writers write both with one value, readers read both.

Each form is pinned with bytes written out here, not by the product's encoder; records are
written by real `drain` processes and judged by a real `list --json`. The older reader is the
0.1.0 module itself (tests/old_presence_1fdb03b.py, checked against git's history where there
is one), run against what the new writer wrote.
"""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import hook, proc_start_ticks, run_cli
from git_korus_mail.core import keys

SESSION = "5b0c7e2a-91d4-4c3e-8f6a-0d2f4e9b7a13"
OLD_READER = Path(__file__).with_name("old_presence_1fdb03b.py")


def boot():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000000Z"


class Client:
    """A real process standing in for a client launch: its pid is the hooks' CLAUDE_PID."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        self.pid = self.proc.pid
        self.start = proc_start_ticks(self.pid)
        self.tag = f"{self.pid}-{self.start}-{boot()[:8]}"

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()  # reaped: /proc no longer lists it


@pytest.fixture
def clients():
    made = []

    def make():
        made.append(Client())
        return made[-1]

    yield make
    for c in made:
        if c.proc.poll() is None:
            c.kill()


def sessions_dir(clone):
    return clone.mail_root / "box" / keys.key_for(str(clone.web)).name / "sessions"


def listed_state(clone):
    data = json.loads(run_cli("list", "--json", cwd=clone.main, check=True).stdout)
    row = [r for r in data["boxes"] if r["slug"] == "web"][0]
    return {s["session"]: s["state"] for s in row["sessions"]}[SESSION]


def record_bytes(clone, client, pids, at):
    """A presence record as a writer of 0.1.0 or later writes it after one SessionStart, with
    the pid under the keys `pids` names ({key: pid}); keys sorted, as every writer sorts them."""
    fields = {"at": f'"{at}"', "boot": f'"{boot()}"', "box": f'"{sessions_dir(clone).parent.name}"',
              "client": '"claude"', "config_dir": f'"{os.environ["CLAUDE_CONFIG_DIR"]}"',
              "cwd": f'"{clone.web}"', "events": '{"SessionStart": "%s"}' % at,
              "last_event": '"SessionStart"', "launch": f'"{client.tag}"', "pending_faults": "[]",
              "pidns": f'"{os.readlink("/proc/self/ns/pid")}"', "session": f'"{SESSION}"', "state": '"idle"',
              "turn_seen": "null"}
    fields.update({key: str(pid) for key, pid in pids.items()})
    return ("{" + ", ".join(f'"{k}": {v}' for k, v in sorted(fields.items())) + "}").encode()


def old_reader():
    spec = importlib.util.spec_from_file_location("old_presence_1fdb03b", OLD_READER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_new_writer_writes_both_keys_with_one_value(clone, clients):
    c = clients()
    hook("SessionStart", clone.web, SESSION, env={"CLAUDE_PID": str(c.pid)})
    data = (sessions_dir(clone) / (SESSION + ".json")).read_bytes()
    at = json.loads(data)["at"]
    expected = (b'{"at": "%s", "boot": "%s", "box": "%s", "claude_pid": %d, "client": "claude", "client_pid": %d, '
                b'"config_dir": "%s", "cwd": "%s", "events": {"SessionStart": "%s"}, "last_event": "SessionStart", '
                b'"launch": "%s", "pending_faults": [], "pidns": "%s", "session": "%s", "state": "idle", "turn_seen": null}') % (
        at.encode(), boot().encode(), sessions_dir(clone).parent.name.encode(), c.pid, c.pid,
        os.environ["CLAUDE_CONFIG_DIR"].encode(), str(clone.web).encode(), at.encode(), c.tag.encode(),
        os.readlink("/proc/self/ns/pid").encode(), SESSION.encode())
    assert data == expected
    assert data == record_bytes(clone, c, {"claude_pid": c.pid, "client_pid": c.pid}, at)
    assert listed_state(clone) == "idle"
    c.kill()
    assert listed_state(clone) == "gone"


@pytest.mark.parametrize("form", ["old key only", "new key only"])
def test_a_record_with_one_key_is_judged_by_its_pid(clone, clients, form):
    """0.1.0 wrote the old key alone; a release after the dual-key period writes the new alone."""
    c = clients()
    key = "claude_pid" if form == "old key only" else "client_pid"
    path = sessions_dir(clone)
    path.mkdir(parents=True)
    (path / (SESSION + ".json")).write_bytes(record_bytes(clone, c, {key: c.pid}, stamp(time.time())))
    assert listed_state(clone) == "idle"
    c.kill()
    assert listed_state(clone) == "gone"  # well inside the day a record with no pid would be live


def test_the_next_event_carries_an_old_record_forward_under_both_keys(clone, clients):
    c = clients()
    path = sessions_dir(clone)
    path.mkdir(parents=True)
    (path / (SESSION + ".json")).write_bytes(record_bytes(clone, c, {"claude_pid": c.pid}, stamp(time.time())))
    hook("UserPromptSubmit", clone.web, SESSION, env={"CLAUDE_PID": ""})  # this event names no pid
    rec = json.loads((path / (SESSION + ".json")).read_bytes())
    assert (rec["claude_pid"], rec["client_pid"], rec["state"]) == (c.pid, c.pid, "working")


def test_a_record_an_older_writer_rewrote_last_is_judged_by_the_old_key(clone, clients):
    """An older writer rewrites `claude_pid` and carries a newer writer's `client_pid` forward
    unchanged: when they differ, the old key names the launch that wrote last."""
    earlier, later = clients(), clients()
    earlier.kill()
    path = sessions_dir(clone)
    path.mkdir(parents=True)
    (path / (SESSION + ".json")).write_bytes(
        record_bytes(clone, later, {"claude_pid": later.pid, "client_pid": earlier.pid}, stamp(time.time())))
    assert listed_state(clone) == "idle"
    later.kill()
    assert listed_state(clone) == "gone"


def test_the_older_reader_judges_a_new_record_right(clone, clients):
    old = old_reader()
    c = clients()
    hook("SessionStart", clone.web, SESSION, env={"CLAUDE_PID": str(c.pid)})
    new = json.loads((sessions_dir(clone) / (SESSION + ".json")).read_bytes())
    assert old.liveness(dict(new)) == "idle"
    c.kill()
    assert old.liveness(dict(new)) == "gone"
    # why the old key is still written: without it the older reader sees no pid at all, and
    # judges the dead client live for a day after its last event
    del new["claude_pid"]
    assert old.liveness(dict(new)) == "idle"
    assert old.liveness(dict(new), now=time.time() + old.NO_PID_LIVE_SECONDS + 60) == "gone"


def test_the_older_reader_is_the_one_git_history_holds():
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run(["git", "-C", str(repo), "show", "1fdb03b:git_korus_mail/store/presence.py"],
                          capture_output=True)
    if proc.returncode != 0:
        pytest.skip("no git history here (a shallow clone): the copy is checked where there is one")
    assert OLD_READER.read_bytes() == proc.stdout
