"""What the relay must never cost (docs/RELAY.md, "Cost"; issue 27, item 5): no hook event and no
command of a clone without a remote imports nats (about 19x an interpreter's start, measured),
and no hook event opens a socket, with or without a remote configured. No server is needed."""

import json
import os
import shutil
import subprocess

import pytest

import hermetic
from helpers import PYTHON, run_cli
from relayworld import free_port, wait_for

EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")


def configure_remote(clone, url):
    """A remote as `remote add` leaves it, written by the test (no server): the config, and a
    directory naming one other clone `vm` with a worktree `web`."""
    relay = clone.mail_root / "relay"
    relay.mkdir(parents=True, exist_ok=True)
    (relay / "config.json").write_text(json.dumps({
        "v": 1, "url": url, "label": "laptop", "creds": None, "origin": "example.invalid/r",
        "namespace": "0123456789abcdef", "roots": ["0" * 40], "clone": "aaaaaaaaaaaa"}))
    (relay / "peers.json").write_text(json.dumps({"bbbbbbbbbbbb": {"label": "vm", "updated": 0, "worktrees": [
        {"name": "web", "path": "/elsewhere/web", "key": "web-0123456789abcdef01234567"}]}}))


def imported(args, cwd, input=None):
    """The modules a real run of the command imported (python -X importtime, stderr)."""
    proc = subprocess.run([PYTHON, "-X", "importtime", "-m", "git_korus_mail", *args], cwd=cwd, input=input,
                          capture_output=True, text=True, env=dict(os.environ))
    mods = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            mods.add(line.rsplit("|", 1)[1].strip())
    assert mods, proc.stderr[-500:]
    return mods, proc


def nats_in(mods):
    return sorted(m for m in mods if m == "nats" or m.startswith("nats."))


def run_events(clone, session):
    for event in EVENTS:
        payload = json.dumps(hermetic.payload(event, session, clone.web))
        mods, proc = imported(["drain"], clone.web, input=payload)
        assert proc.returncode == 0, proc.stderr[-500:]
        yield event, mods


def stop_relay(clone):
    """The relay the remote send started (it takes its lock after importing nats): killed by pid."""
    lock = clone.mail_root / "relay" / "lock"
    if not wait_for(lambda: lock.exists() and lock.read_text().strip(), 20):
        return
    try:
        os.kill(int(lock.read_text()), 9)
    except ProcessLookupError:
        pass


def test_no_remote_no_nats_anywhere(clone):
    run_cli("send", "--to", "web", "--", "local mail", cwd=clone.main, check=True)
    for event, mods in run_events(clone, "s-cost"):
        assert nats_in(mods) == [], event
    for args in (["send", "--to", "web", "--", "again"], ["list"], ["status"], ["remote"], ["who"]):
        mods, proc = imported(args, clone.main)
        assert proc.returncode == 0, (args, proc.stderr[-300:])
        assert nats_in(mods) == [] and "git_korus_mail.relay.server" not in mods, args
    # a `<label>:<name>` with no remote is what it always was: a local name, refused as one
    mods, proc = imported(["send", "--to", "vm:web", "--", "x"], clone.main)
    assert proc.returncode == 1 and "no worktree, session name or box key matches" in proc.stderr, proc.stderr
    assert nats_in(mods) == [] and "git_korus_mail.relay.link" not in mods
    assert "git_korus_mail.core.relayhost" not in mods  # the relay's process only


def test_with_a_remote_the_hooks_and_a_remote_send_still_import_no_nats(clone):
    configure_remote(clone, f"nats://127.0.0.1:{free_port()}")  # loopback, nothing listens
    try:
        run_cli("send", "--to", "web", "--", "local mail", cwd=clone.main, check=True)
        for event, mods in run_events(clone, "s-cost"):
            assert nats_in(mods) == [], event
        mods, proc = imported(["send", "--to", "vm:web", "--", "to the other machine"], clone.main)
        assert proc.returncode == 0 and "queued" in proc.stdout, proc.stderr
        assert nats_in(mods) == [] and "git_korus_mail.relay.address" in mods
        assert len(os.listdir(clone.mail_root / "relay" / "outbox")) == 1
    finally:
        stop_relay(clone)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_no_hook_event_opens_a_connection(clone, tmp_path):
    """Every hook event, with mail queued and a remote configured, run under strace: any
    connect(2), of any address family, fails the test."""
    configure_remote(clone, f"nats://127.0.0.1:{free_port()}")
    run_cli("send", "--to", "web", "--", "shown, then consumed", cwd=clone.main, check=True)
    for event in EVENTS:
        trace = tmp_path / f"{event}.strace"
        payload = json.dumps(hermetic.payload(event, "s-strace", clone.web))
        proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), PYTHON, "-m",
                               "git_korus_mail", "drain"], cwd=clone.web, input=payload, capture_output=True,
                              text=True, env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr[-500:]
        calls = [line for line in trace.read_text().splitlines() if "connect(" in line]
        assert calls == [], (event, calls)
    assert list((clone.mail_root / "box").glob("*/seen/*.json")), "the Stop consumed nothing: no real drain ran"
