"""doctor on real repositories: healthy after install, and each planted fault found."""

import json
import os
import time

from helpers import run_cli
from install_fixtures import box_dir, dead_pid, install, mkdir700, settings_path

from git_korus_mail.store import claims, journal
from git_korus_mail.stamps import utc_stamp


def doctor(cwd):
    proc = run_cli("doctor", "--json", cwd=cwd)
    data = json.loads(proc.stdout)
    assert (proc.returncode == 0) == data["healthy"]
    return proc.returncode, data


def failing(data, check):
    return [f for f in data["findings"] if f["check"] == check and not f["ok"]]


def queued_box(clone, worktree):
    run_cli("send", "--to", str(worktree), "hello", cwd=clone.main, check=True)
    return box_dir(clone, worktree)


def test_healthy_after_install(clone):
    install(clone.main)
    rc, data = doctor(clone.main)
    assert rc == 0, data
    assert all(f["ok"] for f in data["findings"])
    wired = [f["where"] for f in data["findings"] if f["check"] == "wiring"]
    assert str(settings_path(clone.main)) in wired and str(settings_path(clone.web)) in wired
    text = run_cli("doctor", cwd=clone.web)
    assert text.returncode == 0 and text.stdout.rstrip().endswith("healthy")


def test_not_installed(clone):
    rc, data = doctor(clone.main)
    assert rc == 1 and failing(data, "mail root")
    run_cli("send", "--to", str(clone.web), "x", cwd=clone.main, check=True)
    rc, data = doctor(clone.main)
    assert rc == 1 and failing(data, "wiring")[0]["fix"] == "git korus-mail install"


def test_unwired_worktree_is_found(clone):
    install(clone.main)
    settings_path(clone.web).unlink()
    rc, data = doctor(clone.main)
    assert rc == 1
    assert [f["where"] for f in failing(data, "wiring")] == [str(settings_path(clone.web))]


def test_dead_claim(clone):
    install(clone.main)
    box = queued_box(clone, clone.web)
    msg_id = next((box / "inbox").glob("*.json")).stem
    owner = claims.me("consume", "s-dead")
    owner["pid"] = dead_pid()
    mkdir700(box / "claiming")
    (box / "claiming" / f"{msg_id}.claim").write_text(json.dumps(owner))
    rc, data = doctor(clone.main)
    assert rc == 1
    [finding] = failing(data, "claims")
    assert "dead" in finding["detail"] and "list" in finding["fix"]


def test_live_claim_is_healthy(clone):
    install(clone.main)
    box = queued_box(clone, clone.web)
    msg_id = next((box / "inbox").glob("*.json")).stem
    owner = claims.me("consume", "s-live")  # this test process: alive while doctor runs
    mkdir700(box / "claiming")
    (box / "claiming" / f"{msg_id}.claim").write_text(json.dumps(owner))
    rc, data = doctor(clone.main)
    assert rc == 0, data


def test_quarantine(clone):
    install(clone.main)
    box = queued_box(clone, clone.web)
    mkdir700(box / "quarantine")
    (box / "quarantine" / "junk.json.1.abc").write_text("not a message")
    rc, data = doctor(clone.main)
    assert rc == 1 and "1 file" in failing(data, "quarantine")[0]["detail"]


def test_group_writable_mail_root(clone):
    install(clone.main)
    os.chmod(clone.mail_root, 0o770)
    rc, data = doctor(clone.main)
    assert rc == 1
    assert "chmod 700" in failing(data, "mail root")[0]["fix"]


def test_symlinked_mail_root(clone, tmp_path):
    install(clone.main)
    os.rename(clone.mail_root, tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", clone.mail_root)
    rc, data = doctor(clone.main)
    assert rc == 1 and "symlink" in failing(data, "mail root")[0]["detail"]


def test_off(clone):
    install(clone.main)
    run_cli("off", cwd=clone.main, check=True)
    rc, data = doctor(clone.main)
    assert rc == 1 and failing(data, "delivery")[0]["fix"] == "git korus-mail on"


def test_stale_tmp_file(clone):
    install(clone.main)
    tmp = mkdir700(clone.mail_root / "tmp")
    young = tmp / "msg.young"
    young.write_text("x")
    assert doctor(clone.main)[0] == 0
    old = tmp / "msg.old"
    old.write_text("x")
    past = time.time() - 40 * 3600
    os.utime(old, (past, past))
    rc, data = doctor(clone.main)
    assert rc == 1 and "msg.old" in failing(data, "tmp")[0]["fix"]


def _journal_line(root, at):
    with open(root / journal.NAME, "a") as f:
        f.write(json.dumps({"at": utc_stamp(at), "event": "sent"}) + "\n")


def test_clock_in_the_future(clone):
    install(clone.main)
    _journal_line(clone.mail_root, time.time() + 3600)
    rc, data = doctor(clone.main)
    assert rc == 1 and "future" in failing(data, "clock")[0]["detail"]


def test_clock_going_backwards(clone):
    install(clone.main)
    now = time.time()
    _journal_line(clone.mail_root, now - 60)
    _journal_line(clone.mail_root, now - 3600)
    rc, data = doctor(clone.main)
    assert rc == 1 and "backwards" in failing(data, "clock")[0]["detail"]


def _presence(clone, worktree, session, events):
    d = mkdir700(box_dir(clone, worktree) / "sessions")
    rec = {"session": session, "state": "idle", "at": max(events.values()), "last_event": "x",
           "events": events, "boot": claims.me("x")["boot"]}
    (d / f"{session}.json").write_text(json.dumps(rec))


def test_turns_without_stop_are_a_wiring_problem(clone):
    install(clone.main)
    queued_box(clone, clone.web)
    hour_ago = utc_stamp(time.time() - 3600)
    # a session discarded after SessionStart is normal; one that ran a turn must reach Stop
    _presence(clone, clone.web, "s-discarded", {"SessionStart": hour_ago})
    assert doctor(clone.main)[0] == 0
    _presence(clone, clone.web, "s-turn", {"SessionStart": hour_ago, "UserPromptSubmit": hour_ago})
    rc, data = doctor(clone.main)
    assert rc == 1 and "Stop never drained" in failing(data, "drains")[0]["detail"]
    _presence(clone, clone.web, "s-good", {"SessionStart": hour_ago, "Stop": hour_ago})
    assert doctor(clone.main)[0] == 0


def test_real_drains_are_reported(clone):
    from helpers import hook
    install(clone.main)
    hook("SessionStart", clone.web, "s-1")
    hook("UserPromptSubmit", clone.web, "s-1")
    hook("Stop", clone.web, "s-1")
    rc, data = doctor(clone.main)
    assert rc == 0
    [drains] = [f for f in data["findings"] if f["check"] == "drains"]
    assert "Stop" in drains["detail"] and "SessionStart" in drains["detail"]


def test_gone_helper_and_stale_stub(clone, tmp_path):
    from install_fixtures import make_helper_copy, stub_of
    helper = make_helper_copy(tmp_path / "pipx-bin")
    proc = __import__("subprocess").run([str(helper), "install"], cwd=clone.main, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doctor(clone.main)[0] == 0
    stub = stub_of(clone)
    with open(stub, "a") as f:
        f.write("# edited\n")
    rc, data = doctor(clone.main)
    assert rc == 1 and "template" in failing(data, "wiring")[0]["detail"]
    helper.unlink()
    # the stub still works here through PATH's git-korus-mail, but not in an editor's PATH
    rc, data = doctor(clone.main)
    assert rc == 1 and "is gone" in failing(data, "wiring")[0]["detail"]
