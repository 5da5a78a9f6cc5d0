"""Many senders publishing into one box at once, as separate processes.

16 sender processes ('spawn') each send 200 messages into the same box: 3,200
messages. Each sender runs the real send code path in-process, in a loop
(`cli.main(["send", ...])`: argument parsing, destination resolution, publish,
the sent/ record, the journal), which costs a few ms a message instead of a
process start. A second test runs 16 real `git-korus-mail send` processes at once.

A sender SIGKILLed at any named step of publication leaves no partial message in
any inbox: see tests/test_crash.py::test_killed_at_step[send:*] and
::test_killed_sender_leaves_no_partial_message_in_any_inbox. The last test here
kills concurrent real senders at random instants (inside writes too).
"""

import contextlib
import io
import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import time

import pytest

from helpers import PYTHON, no_limits
from git_korus_mail.core import keys
from git_korus_mail.store.message import parse

import invariants

SENDERS = 16
PER_SENDER = 200
TIMEOUT = 300

# slow tier, main Python only (docs/TESTING.md): interleavings of the kernel's rename/link/flock, same on every CPython
pytestmark = pytest.mark.slow


def _sender(idx, main_path, web_path, per, barrier, conn):
    """One sender process: `per` sends through the real send code path (`cli.main`, in-process),
    started together with the others at the barrier. Reports (via conn) the ids, in order."""
    os.chdir(main_path)
    from git_korus_mail import cli
    ids = []
    try:
        barrier.wait(TIMEOUT)
        for k in range(per):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = cli.main(["send", "--to", web_path, "--json", "--", f"sender {idx:02d} message {k:04d}"])
            assert rc == 0, buf.getvalue()
            ids.append(json.loads(buf.getvalue())["results"][0]["id"])
        conn.send(("ok", ids))
    except BaseException:  # noqa: BLE001 - reported to the test
        import traceback
        conn.send(("error", traceback.format_exc()))


def test_16_processes_send_3200_messages_into_one_box(clone):
    no_limits(clone)  # a flood on purpose: the store is measured, not the limits
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(SENDERS + 1)
    procs, conns = [], []
    t0 = time.time()
    for i in range(SENDERS):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_sender, args=(i, str(clone.main), str(clone.web), PER_SENDER, barrier, child),
                        daemon=True)
        p.start()
        child.close()
        procs.append(p)
        conns.append(parent)
    barrier.wait(TIMEOUT)
    t1 = time.time()
    sent = {}
    try:
        for i, c in enumerate(conns):
            assert c.poll(TIMEOUT), f"sender {i} did not finish"
            tag, payload = c.recv()
            assert tag == "ok", f"sender {i} failed:\n{payload}"
            sent[i] = payload
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    t2 = time.time()
    pids = {p.pid for p in procs}
    assert len(pids) == SENDERS and os.getpid() not in pids

    all_ids = [i for ids in sent.values() for i in ids]
    total = SENDERS * PER_SENDER
    assert len(all_ids) == total
    assert len(set(all_ids)) == total, "duplicate message ids"
    box = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    inbox = sorted(os.listdir(box / "inbox"))
    assert len(inbox) == total
    assert {n[:-5] for n in inbox} == set(all_ids)
    bodies = set()
    for name in inbox:
        msg = parse((box / "inbox" / name).read_bytes(), expected_id=name[:-5])
        bodies.add(msg["body"])
    assert bodies == {f"sender {i:02d} message {k:04d}" for i in range(SENDERS) for k in range(PER_SENDER)}
    # each sender's own ids are in send order (they sort by time)
    for ids in sent.values():
        assert ids == sorted(ids)
    assert os.listdir(clone.mail_root / "tmp") == [], "staging files left behind"
    s = invariants.check(clone.mail_root)
    assert len([r for r in s.journal if r["event"] == "sent"]) == total
    own_box = clone.mail_root / "box" / keys.key_for(str(clone.main)).name
    assert len(os.listdir(own_box / "sent")) == total
    print(f"\n[send] {SENDERS} processes x {PER_SENDER} messages through cli.main "
          f"in {t2 - t1:.1f}s (+{t1 - t0:.1f}s process start)")


def _cli_send(cwd, to, body):
    return subprocess.Popen([PYTHON, "-m", "git_korus_mail", "send", "--to", to, "--json", "--", body],
                            cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_16_real_cli_senders_at_once(clone):
    """The real command, 16 processes at once, into two boxes."""
    ops = clone.add_worktree("ops")
    ids = []
    for wave in range(1):
        procs = [_cli_send(clone.main, str(clone.web if i % 2 else ops), f"wave {wave} sender {i}")
                 for i in range(SENDERS)]
        for p in procs:
            out, err = p.communicate(timeout=TIMEOUT)
            assert p.returncode == 0, err
            ids.append(json.loads(out)["results"][0]["id"])
    assert len(set(ids)) == SENDERS
    s = invariants.check(clone.mail_root)
    assert invariants.ids(s, "inbox") == set(ids)
    assert os.listdir(clone.mail_root / "tmp") == []


def test_senders_killed_at_random_leave_no_partial_message(clone):
    """16 real senders at once, half of them SIGKILLed at random instants (inside writes too).
    Every inbox holds only complete messages; a torn staging file may stay in tmp/ but is never
    linked anywhere; a clean drain then delivers exactly the messages that were published."""
    no_limits(clone)  # a flood on purpose: the store is measured, not the limits
    rng = random.Random(int(os.environ.get("KORUS_CHAOS_SEED") or time.time()))
    t = time.time()
    p = _cli_send(clone.main, str(clone.web), "probe")
    p.communicate()
    span = time.time() - t
    killed = 0
    for wave in range(6):
        # two waves, and more while no kill has landed: a fast machine's senders can all finish
        # before the first planned instant, so a later wave plans earlier ones
        if wave >= 2 and killed:
            break
        low, high = (0.5, 1.5) if wave < 2 else (0.05, 0.5)
        procs = [_cli_send(clone.main, str(clone.web), f"wave {wave} sender {i}") for i in range(SENDERS)]
        start = time.time()
        plan = sorted((rng.uniform(low, high) * span * SENDERS / (os.cpu_count() or 1) / 2, i)
                      for i in range(SENDERS) if rng.random() < 0.5)
        for when, i in plan:
            delay = start + when - time.time()
            if delay > 0:
                time.sleep(delay)
            if procs[i].poll() is None:
                procs[i].send_signal(signal.SIGKILL)
                killed += 1
        for q in procs:
            _out, err = q.communicate(timeout=TIMEOUT)
            assert q.returncode in (0, -signal.SIGKILL), err
    assert killed > 0
    s = invariants.check(clone.mail_root, torn_tmp_ok=True, half_published_ok=True)
    queued = invariants.ids(s, "inbox")
    s_before = s
    # deliver: linked-but-unfinished publications are completed by a reader once the grace is over
    from test_crash import clean
    for _ in range(10):
        clean("SessionStart", clone.web, "sess-after-kills", nograce=True)
        clean("Stop", clone.web, "sess-after-kills")
        if not os.listdir(clone.mail_root / "box" / keys.key_for(str(clone.web)).name / "inbox"):
            break
    s = invariants.check(clone.mail_root, torn_tmp_ok=True)
    assert invariants.ids(s, "seen") == queued, "a queued message was not delivered"
    assert not invariants.ids(s, "inbox")
    leftovers = [n for n in os.listdir(clone.mail_root / "tmp")]
    assert all(os.stat(clone.mail_root / "tmp" / n).st_nlink == 1 for n in leftovers)
    print(f"\n[send-kill] {killed} senders killed; {len(queued)} published "
          f"({len(s_before.half_published)} half-published); tmp leftovers: {len(leftovers)} "
          f"({sum(1 for d in s.debris if d[0] == 'torn-tmp')} torn)")
