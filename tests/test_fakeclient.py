"""A second client, driven through the same core: the seam between the drain and its clients.

tests/fakeclient/ is a client of its own protocol (line-based stdin, plain-text answers, its
own event names, its own launch variable), one module beside clients/claude/ and unknown to
git_korus_mail. Each event is a real separate process, as a client would run it; the client
process itself is a real sleeping process whose pid the hook is given.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PYTHON, launch_dir, run_cli
from git_korus_mail.core import keys

FAKE_HOOK = Path(__file__).resolve().parent / "fakeclient" / "hook.py"


def fake_hook(event, cwd, session, client_pid):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}  # no Claude fact leaks in
    env["FAKE_CLIENT_PID"] = str(client_pid)
    proc = subprocess.run([PYTHON, str(FAKE_HOOK)], input=f"event {event}\nsession {session}\ncwd {cwd}\n",
                          capture_output=True, text=True, cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def client_process():
    """Start a stand-in for the fake client's process; kill it to end that launch."""
    started = []

    def start():
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        started.append(p)
        return p
    yield start
    for p in started:
        p.kill()
        p.wait()


def box_dir(clone, path):
    return clone.mail_root / "box" / keys.key_for(str(path)).name


def names(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def send(clone, body):
    return run_cli("send", "--to", "../web", body, cwd=clone.main, check=True).stdout.split()[1]


def test_fake_client_shows_consumes_and_ends_through_the_core(clone, client_process):
    session = "fake-session-1"
    proc = client_process()
    out = fake_hook("hello", clone.web, session, proc.pid)
    assert out.startswith("to-model:\n") and "is empty (as of 20" in out  # the opening show announces
    first = send(clone, "from the api to a fake client")
    out = fake_hook("look", clone.web, session, proc.pid)
    assert out.startswith("to-model:\n") and "| from the api to a fake client" in out
    # the person's line comes through the same seam, in this client's own form
    assert out.rstrip("\n").endswith(f"\nto-user: korus-mail: 1 message from ../api (note, id …{first[-8:]}) "
                                     f"shown to the model")
    assert fake_hook("look", clone.web, session, proc.pid) == ""  # shown once to this launch
    assert fake_hook("done", clone.web, session, proc.pid) == ""  # consumed; the normal path says nothing
    b = box_dir(clone, clone.web)
    assert names(b / "inbox") == [] and names(b / "receipts") == [first + ".json"]
    receipt = json.loads((b / "receipts" / (first + ".json")).read_text())
    assert receipt["session"] == session and receipt["observed"]["event"] == "look"
    assert receipt["launch"]["client"] == "fake" and receipt["launch"]["pid"] == proc.pid
    assert fake_hook("bye", clone.web, session, proc.pid) == ""
    rec = json.loads((b / "sessions" / (session + ".json")).read_text())
    assert rec["state"] == "closed" and rec["last_event"] == "bye"
    assert sorted(rec["events"]) == ["bye", "done", "hello", "look"]


def test_fake_client_resumed_launch_consumes_only_what_it_showed(clone, client_process):
    session = "fake-session-2"
    first = client_process()
    fake_hook("hello", clone.web, session, first.pid)
    mid = send(clone, "shown to a launch that is then killed")
    assert "| shown to a launch that is then killed" in fake_hook("look", clone.web, session, first.pid)
    first.kill()
    first.wait()  # killed: no done, no bye
    resumed = client_process()  # the same session id, carried by a new process
    b = box_dir(clone, clone.web)
    assert fake_hook("done", clone.web, session, resumed.pid) == ""
    assert names(b / "inbox") == [mid + ".json"]  # the killed launch's display proves nothing here
    assert names(b / "shown" / launch_dir(session, resumed.pid)) in ([], [".launch"])
    out = fake_hook("hello", clone.web, session, resumed.pid)
    assert "| shown to a launch that is then killed" in out  # shown again, to the launch that runs now
    fake_hook("done", clone.web, session, resumed.pid)
    assert names(b / "inbox") == [] and names(b / "receipts") == [mid + ".json"]
    receipt = json.loads((b / "receipts" / (mid + ".json")).read_text())
    assert receipt["launch"]["pid"] == resumed.pid and receipt["observed"]["event"] == "hello"


def test_fake_client_shows_but_never_consumes_without_a_launch(clone):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    mid = send(clone, "no launch named")
    proc = subprocess.run([PYTHON, str(FAKE_HOOK)], input=f"event hello\nsession s-none\ncwd {clone.web}\n",
                          capture_output=True, text=True, cwd=clone.web, env=env)
    assert "| no launch named" in proc.stdout
    proc = subprocess.run([PYTHON, str(FAKE_HOOK)], input=f"event done\nsession s-none\ncwd {clone.web}\n",
                          capture_output=True, text=True, cwd=clone.web, env=env)
    assert proc.stdout.startswith("to-user: korus-mail: 1 message(s) shown but left queued")
    assert names(box_dir(clone, clone.web) / "inbox") == [mid + ".json"]
