"""A report reads a bounded tail of each journal half (store/journal.py, READ_BOUND): when rotation
cannot run and the live file grows (issue 26 measured `status` at 101 s and 4.4 GB of memory on
a 1 GB journal), `status`, `doctor` and the repairs still read what a normal journal holds."""

import json

from helpers import run_cli

from git_korus_mail.store import journal
from git_korus_mail.store.fsafe import Dir


def _fill(path, n, start=0):
    with open(path, "ab") as f:
        for i in range(start, start + n):
            f.write((json.dumps({"at": "2026-12-02T00:00:00Z", "event": "probe", "n": i}) + "\n").encode())


def test_a_report_reads_the_last_bound_of_each_half_from_a_whole_line_on(clone, monkeypatch):
    clone.mail_root.mkdir(mode=0o700)
    _fill(clone.mail_root / journal.ROTATED, 50)
    _fill(clone.mail_root / journal.NAME, 200, start=50)
    monkeypatch.setattr(journal, "READ_BOUND", 1000)  # about 18 lines of each half
    d = Dir.open_path(str(clone.mail_root))
    try:
        got = [r["n"] for r in journal.read(d)]
        rotated = [n for n in got if n < 50]
        live = [n for n in got if n >= 50]
        assert live and live == list(range(live[0], 250)) and 10 < len(live) < 25, got
        assert rotated and rotated == list(range(rotated[0], 50)) and len(rotated) < 25, got
        assert [r["n"] for r in journal.read(d, limit=5)] == [245, 246, 247, 248, 249]
    finally:
        d.close()


def test_a_line_exactly_at_the_bound_is_kept_whole(clone, monkeypatch):
    clone.mail_root.mkdir(mode=0o700)
    line = (json.dumps({"at": "2026-12-02T00:00:00Z", "event": "probe", "n": 0}) + "\n").encode()
    (clone.mail_root / journal.NAME).write_bytes(line * 10)
    monkeypatch.setattr(journal, "READ_BOUND", 3 * len(line))  # the cut falls on a line's start
    d = Dir.open_path(str(clone.mail_root))
    try:
        assert len(journal.read(d)) == 3
    finally:
        d.close()


def test_status_on_a_journal_rotation_never_cut_shows_its_latest_events(clone):
    """A 40 MB live journal (rotation never ran): status shows the send made last, as it would
    from a normal journal."""
    proc = run_cli("send", "--to", str(clone.web), "--wait=0", "first", cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    big = clone.mail_root / journal.NAME
    chunk = (json.dumps({"at": "2026-12-01T00:00:00Z", "event": "probe", "pad": "x" * 200}) + "\n").encode() * 4096
    with open(big, "ab") as f:
        while f.tell() < 40 * 1024 * 1024:
            f.write(chunk)
    # appended after the padding, without the rotation a send would run: the newest line
    with open(big, "ab") as f:
        f.write((json.dumps({"at": "2026-12-02T00:00:00Z", "event": "sent", "id": "20261202T000000Z-last",
                             "box": "b", "sender": str(clone.main)}) + "\n").encode())
    proc = run_cli("status", "--clone", "--json", cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    events = json.loads(proc.stdout)["journal"]
    assert events[-1]["id"] == "20261202T000000Z-last"
