"""`log` (issue 29, "A person follows the team"): the clone's history, one line an event, oldest
first, escaped, under 100 columns; `--follow` as it happens, across journal rotations, ending
quietly on Ctrl-C and on a closed pipe. It reads and never writes: the mail root is the same
bytes after it. Every command here is the real one, in a process of its own."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

from helpers import PYTHON, hook, run_cli
from install_fixtures import box_dir

from git_korus_mail.store import journal
from git_korus_mail.store.fsafe import Dir
from test_read_terminal import server  # noqa: F401 (a fixture: a tmux server of the test's own)

HOSTILE = "\x1b]2;PWNED\x07 schema \x1b[31mchanged\x1b[0m \u202eexe.txt\n\nsecond line"


def snapshot(root):
    """Every file and directory under the mail root: path, mode, size and a hash of the bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            digest = None
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_size if digest else None, digest)
    return out


def log(clone, *args, cwd=None):
    proc = run_cli("log", *args, cwd=cwd or clone.main)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def send(clone, body, to=None):
    proc = run_cli("send", "--json", "--wait=0", "--to", str(to or clone.web), body, cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["results"][0]["id"]


def test_log_tells_what_happened_in_order_escaped_and_changes_nothing(clone):
    first = send(clone, HOSTILE)
    hook("UserPromptSubmit", clone.web, "s-reader")
    hook("Stop", clone.web, "s-reader")
    second = send(clone, "withdrawn soon")
    assert run_cli("cancel", second, cwd=clone.main).returncode == 0
    before = snapshot(clone.mail_root)
    text = log(clone)
    as_json = log(clone, "--json")
    assert snapshot(clone.mail_root) == before  # it only reads
    lines = text.splitlines()
    events = [line.split()[2] for line in lines]
    assert events == ["sent", "shown", "consumed", "sent", "cancelled"], text
    assert all(len(line) < 100 for line in lines), text
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    sent_line = lines[0]
    assert f"…{first[-8:]}" in sent_line and "→ ../web" in sent_line
    assert "note: \\u001b]2;PWNED\\u0007 schema" in sent_line  # the first line, escaped as read escapes it
    assert "second line" not in text
    assert "to session s-reader" in lines[1] and "at UserPromptSubmit" in lines[1]
    assert "by session s-reader" in lines[2]
    assert f"…{second[-8:]}" in lines[4]
    records = [json.loads(line) for line in as_json.splitlines()]
    assert [r["event"] for r in records] == events
    assert records[0]["id"] == first and records[0]["to"] == str(clone.web)
    assert records[0]["first_line"].startswith("\x1b]2;PWNED")  # JSON carries the text itself


def test_a_message_the_store_no_longer_keeps_is_named_by_its_id(clone):
    msg_id = send(clone, "soon gone")
    box = box_dir(clone, clone.web)
    os.unlink(box / "inbox" / f"{msg_id}.json")  # as a prune leaves it: the journal outlives the file
    [line] = log(clone).splitlines()
    assert f"…{msg_id[-8:]}" in line and "(no longer in the store)" in line


def test_since_takes_a_duration_or_a_utc_time_and_refuses_anything_else(clone):
    send(clone, "one")
    assert len(log(clone, "--since=1h").splitlines()) == 1
    assert log(clone, "--since=2999-01-01") == ""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert len(log(clone, f"--since={today}").splitlines()) == 1
    for bad in ("yesterday", "5x", "2026-13-01", "-3h", ""):
        proc = run_cli("log", f"--since={bad}", cwd=clone.main)
        assert proc.returncode == 129, (bad, proc.stderr)
        assert proc.stderr.splitlines()[0].startswith("git korus-mail: --since:"), proc.stderr
        assert "Traceback" not in proc.stderr


def test_no_mail_root_yet_is_an_empty_history(clone):
    assert not clone.mail_root.exists()
    assert log(clone) == ""
    assert not clone.mail_root.exists()  # and reading made none


# -- the journal cursor (store/journal.py, read_new) ----------------------------------------------
def _append_raw(root, data):
    with open(root / journal.NAME, "ab") as f:
        f.write(data)


def test_a_line_still_being_written_waits_for_its_newline(clone):
    send(clone, "one")
    d = Dir.open_path(str(clone.mail_root))
    try:
        first, cur = journal.read_new(d, None)
        assert [r["event"] for r in first] == ["sent"]
        _append_raw(clone.mail_root, b'{"at": "2026-12-02T00:00:00Z", "event": "half')
        assert journal.read_new(d, cur)[0] == []
        _append_raw(clone.mail_root, b'way"}\n')
        got, cur = journal.read_new(d, cur)
        assert [r["event"] for r in got] == ["halfway"]
        assert journal.read_new(d, cur)[0] == []
    finally:
        d.close()


def test_a_rotation_between_two_reads_loses_and_repeats_nothing(clone, monkeypatch):
    send(clone, "one")
    d = Dir.open_path(str(clone.mail_root))
    try:
        _, cur = journal.read_new(d, None)
        monkeypatch.setattr(journal, "MAX_BYTES", 600)
        for n in range(12):  # rotates once: the first lines are in journal.1.jsonl afterwards
            journal.append(d, "probe", n=n)
        assert (clone.mail_root / journal.ROTATED).exists()
        got, cur = journal.read_new(d, cur)
        assert [r["n"] for r in got] == list(range(12))
        # a rotation right after our read, and no live file yet (the next append makes it)
        os.rename(clone.mail_root / journal.NAME, clone.mail_root / journal.ROTATED)
        assert journal.read_new(d, cur)[0] == []
        journal.append(d, "probe", n=12)
        assert [r["n"] for r in journal.read_new(d, cur)[0]] == [12]
    finally:
        d.close()


# -- --follow, as a process of its own ---------------------------------------------------------------
def follower(clone, *args):
    return subprocess.Popen([PYTHON, "-m", "git_korus_mail", "log", "--follow", *args], cwd=clone.main,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read_until(proc, count, timeout=30):
    """The follower's next `count` lines, or fail after `timeout` seconds. Read from the fd
    itself: a buffered readline would keep lines where select cannot see them."""
    import selectors
    pending = getattr(proc, "pending", b"")
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout.fileno(), selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while pending.count(b"\n") < count:
        left = deadline - time.monotonic()
        assert left > 0, f"only {len(pending.splitlines())} of {count} lines: {pending[-300:]!r}"
        if sel.select(left):
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"the follower ended: {proc.stderr.read()}"
            pending += chunk
    lines = pending.split(b"\n")
    proc.pending = b"\n".join(lines[count:])
    return [line.decode() for line in lines[:count]]


def live_inode(clone):
    try:
        return os.stat(clone.mail_root / journal.NAME).st_ino
    except FileNotFoundError:
        return None  # rotated away; the next append makes it again


def test_follow_prints_each_event_once_as_it_happens_across_rotations(clone, monkeypatch):
    send(clone, "before the follower")
    proc = follower(clone, "--json")
    try:
        assert json.loads(read_until(proc, 1)[0])["event"] == "sent"
        # Another writer (this process) appends while the follower polls; the journal rotates
        # five times. Each rotation is given a poll's time before the next one, as the real
        # 4 MB bound gives it (docs/STORE.md: rotating twice within one poll would take 16 MB/s).
        monkeypatch.setattr(journal, "MAX_BYTES", 800)
        d = Dir.open_path(str(clone.mail_root))
        try:
            n, rotations, ino = 0, 0, live_inode(clone)
            while rotations < 5:
                journal.append(d, "probe", n=n)
                n += 1
                now = live_inode(clone)
                if now != ino:
                    rotations, ino = rotations + 1, now
                    time.sleep(0.6)
        finally:
            d.close()
        got = [json.loads(line) for line in read_until(proc, n)]
        assert [r["n"] for r in got] == list(range(n))
        msg_id = send(clone, "while following")
        [line] = read_until(proc, 1)
        assert json.loads(line)["id"] == msg_id
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and b"Traceback" not in err, err


def test_follow_ends_quietly_when_its_reader_goes_away(clone):
    send(clone, "one")
    proc = follower(clone)
    read_until(proc, 1)
    proc.stdout.close()  # as `| head -1` does once it has its line
    send(clone, "two")  # the next line finds the pipe closed
    try:
        err = proc.stderr.read()
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and b"Traceback" not in err and b"Broken pipe" not in err, err


# -- as a person watches it: a real terminal (tmux), a hostile body, the screen captured ---------------
def test_follow_in_a_real_terminal_shows_the_team_live_and_interprets_no_escape(clone, server):  # noqa: F811
    from test_read_terminal import CLIP, TITLE, buffers, seen, tmux
    cli = [sys.executable, "-m", "git_korus_mail"]
    env = ["env", f"PYTHONPATH={os.pathsep.join(sys.path)}", "NO_COLOR=1"]
    import shlex
    tmux(server, "new-window", "-d", "-n", "log", "-c", str(clone.main),
         " ".join(shlex.quote(a) for a in env + cli + ["log", "--follow"]) + "; sleep 600")
    body = (f"\x1b]2;{TITLE}\x07\x1b]52;c;cHduZWQtY2xpcGJvYXJk\x07\x1b[31mRED\x1b[0m migration 42 is in\n"
            f"\x1b[2J")
    msg_id = send(clone, body)
    hook("UserPromptSubmit", clone.web, "s-web")
    hook("Stop", clone.web, "s-web")
    deadline = time.monotonic() + 30
    plain = ""
    while time.monotonic() < deadline:
        plain, styled, title = seen(server, "log")
        if "consumed" in plain:
            break
        time.sleep(0.1)
    lines = [line for line in plain.splitlines() if line.strip()]
    print("\n".join(lines))  # the captured screen (pytest -s shows it)
    assert [line.split()[2] for line in lines] == ["sent", "shown", "consumed"], plain
    assert f"…{msg_id[-8:]}" in lines[0]
    # escaped, then cut at the edge: the escapes of a title and a clipboard write, as text
    assert f"note: \\u001b]2;{TITLE}\\u0007\\u001b]52;" in lines[0] and lines[0].endswith("…"), plain
    assert title != TITLE and CLIP not in buffers(server) and "\x1b" not in styled
    assert all(len(line) < 100 for line in lines)
