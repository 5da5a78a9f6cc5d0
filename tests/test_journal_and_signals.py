"""The journal's bound under concurrent writers, and Ctrl-C's exit status."""

import json
import os
import signal
import subprocess
import sys
import time

from helpers import PYTHON, run_cli

WRITER = """
import sys
from git_korus_mail.store import journal
from git_korus_mail.store.fsafe import Dir
journal.MAX_BYTES = 4000          # small, so that rotation happens many times in the test
root = Dir.open_path(sys.argv[1])
for i in range(int(sys.argv[3])):
    journal.append(root, "sent", id=f"{sys.argv[2]}-{i}", box="b" * 40)
"""


def test_journal_rotates_under_concurrent_writers_and_every_line_stays_whole(tmp_path):
    root = tmp_path / "mail"
    root.mkdir(mode=0o700)
    procs = [subprocess.Popen([PYTHON, "-c", WRITER, str(root), f"w{n}", "300"]) for n in range(6)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    live = root / "journal.jsonl"
    rotated = root / "journal.1.jsonl"
    assert rotated.exists(), "never rotated"
    for f in (live, rotated):
        # bounded: at most the limit plus the lines racing the rotation (each < 200 bytes)
        assert f.stat().st_size <= 4000 + 6 * 200, f
        for line in f.read_text().splitlines():
            rec = json.loads(line)  # a torn or interleaved line would not parse
            assert rec["event"] == "sent" and rec["at"].endswith("Z")
    assert oct(live.stat().st_mode & 0o777) == "0o600"


def test_ctrl_c_exits_130_and_queues_nothing(clone):
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "git_korus_mail", "send", "--to", "../web", "-"],
                            cwd=clone.main, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    time.sleep(1.0)  # blocked reading the body from stdin
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert b"Traceback" not in err
    listing = json.loads(run_cli("list", "--json", cwd=clone.main, check=True).stdout)
    assert all(r["counts"]["inbox"] == 0 for r in listing["boxes"])
