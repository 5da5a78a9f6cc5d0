"""The journal and its lock planted as traps: a FIFO, a hard link to a victim, a symlink.

Each is a file of the store like any other: opened without following and without
blocking, used only when it is a regular file of ours with one link, 0600 whatever
the umask. Refusing the journal costs history lines, never mail: the message is
still queued, shown and consumed. Subprocess timeouts below are hang detectors,
not timing asserts: the old code blocked on the FIFO until killed.
"""

import json
import os
import stat

import pytest

from helpers import PYTHON, run_cli
from git_korus_mail.store import journal
from git_korus_mail.errors import MailError
from git_korus_mail.store.files import MailRoot

HANG = 60  # seconds; a run that takes this long is hung


def _run(*args, cwd, input=None):
    import subprocess
    return subprocess.run([PYTHON, "-m", "git_korus_mail", *args], cwd=cwd, input=input, capture_output=True,
                          text=True, timeout=HANG)


def _hook(event, cwd, session):
    payload = {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event}
    proc = _run("drain", cwd=cwd, input=json.dumps(payload))
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def _root(clone):
    run_cli("off", cwd=clone.main, check=True)  # creates the mail root
    run_cli("on", cwd=clone.main, check=True)
    return clone.mail_root


def _inbox(clone):
    boxes = list((clone.mail_root / "box").iterdir())
    return [n for b in boxes if (b / "inbox").exists() for n in os.listdir(b / "inbox")]


S1 = "11111111-1111-4111-8111-111111111111"


def test_fifo_journal_hangs_nothing_and_mail_still_flows(clone):
    root = _root(clone)
    (root / journal.NAME).unlink()
    os.mkfifo(root / journal.NAME, 0o600)
    _run("send", "--to", str(clone.web), "through a fifo journal", cwd=clone.main)
    [name] = _inbox(clone)
    ans = _hook("SessionStart", clone.web, S1)
    assert name[:-5] in ans["hookSpecificOutput"]["additionalContext"]
    _hook("Stop", clone.web, S1)
    assert _inbox(clone) == []
    _run("status", cwd=clone.main)
    doc = json.loads(_run("doctor", "--json", cwd=clone.main).stdout)
    assert any(f["check"] == "journal" and not f["ok"] and "regular file" in f["detail"] for f in doc["findings"])
    assert stat.S_ISFIFO(os.lstat(root / journal.NAME).st_mode)


def test_fifo_journal_is_refused_in_one_call(clone):
    import subprocess
    root = _root(clone)
    (root / journal.NAME).unlink()
    os.mkfifo(root / journal.NAME, 0o600)
    code = ("import sys; from git_korus_mail.store import journal; from git_korus_mail.errors import MailError; "
            "from git_korus_mail.store.files import MailRoot\n"
            "try:\n    journal.append(MailRoot.open(sys.argv[1]).dir, 'sent', id='x')\n"
            "except MailError as exc:\n    print(exc)\n")
    proc = subprocess.run([PYTHON, "-c", code, str(clone.common_dir)], capture_output=True, text=True,
                          timeout=HANG)
    assert proc.stdout.strip() == f"{root / journal.NAME} is a fifo, not a file; refusing it", proc.stderr


def test_journal_hard_linked_to_a_victim_is_neither_written_nor_chmodded(clone, tmp_path):
    root = _root(clone)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    os.chmod(victim, 0o644)
    (root / journal.NAME).unlink()
    os.link(victim, root / journal.NAME)
    _run("send", "--to", str(clone.web), "beside a hard-linked journal", cwd=clone.main)
    assert len(_inbox(clone)) == 1  # the mail is queued all the same
    _hook("SessionStart", clone.web, S1)
    _hook("Stop", clone.web, S1)
    assert _inbox(clone) == []
    assert victim.read_bytes() == b"precious\n"
    assert stat.S_IMODE(os.stat(victim).st_mode) == 0o644
    with MailRoot.open(str(clone.common_dir)).dir as d, pytest.raises(MailError, match="2 links"):
        journal.append(d, "sent", id="x")
    doc = json.loads(_run("doctor", "--json", cwd=clone.main).stdout)
    assert any(f["check"] == "journal" and "links" in f["detail"] for f in doc["findings"] if not f["ok"])
    assert "precious" not in _run("status", cwd=clone.main).stdout


def _oversized_journal(root):
    with open(root / journal.NAME, "ab") as f:
        f.write(b'{"at": "2026-01-01T00:00:00.000000Z", "event": "padding"}\n' * (journal.MAX_BYTES // 50))


@pytest.mark.parametrize("victim_exists", [True, False])
def test_lock_symlinked_out_of_the_store_is_not_followed(clone, tmp_path, victim_exists):
    root = _root(clone)
    _oversized_journal(root)
    victim = tmp_path / "victim.lock"
    if victim_exists:
        victim.write_bytes(b"precious\n")
        os.chmod(victim, 0o644)
    os.symlink(victim, root / journal.LOCK)
    with MailRoot.open(str(clone.common_dir)).dir as d, pytest.raises(MailError, match="symlink"):
        journal.append(d, "sent", id="x")
    if victim_exists:
        assert victim.read_bytes() == b"precious\n" and stat.S_IMODE(os.stat(victim).st_mode) == 0o644
    else:
        assert not victim.exists()
    assert os.path.islink(root / journal.LOCK)


def test_lock_is_created_0600_inside_the_root_under_umask_0(clone):
    root = _root(clone)
    _oversized_journal(root)
    old = os.umask(0)
    try:
        with MailRoot.open(str(clone.common_dir)).dir as d:
            journal.append(d, "sent", id="x")
    finally:
        os.umask(old)
    st = os.lstat(root / journal.LOCK)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert (root / journal.ROTATED).exists()
    assert not (root / journal.NAME).exists()  # rotated away whole


def test_a_journal_left_0400_by_an_old_umask_is_made_0600_again(clone):
    root = _root(clone)
    os.chmod(root / journal.NAME, 0o400)
    with MailRoot.open(str(clone.common_dir)).dir as d:
        journal.append(d, "sent", id="x")
    assert stat.S_IMODE(os.stat(root / journal.NAME).st_mode) == 0o600
    assert journal.read(MailRoot.open(str(clone.common_dir)).dir)[-1]["id"] == "x"
