"""Drains reading while senders publish: legitimate mail is never quarantined.

During publication a message has two links for a moment: its staging file in tmp/
and its inbox entry. A drain that reads it then sees st_nlink == 2. That must not
read as a foreign hard link (the attack the drain quarantines). 8 sender processes
publish into one box while 4 drain processes run show / marker / Stop cycles, for
KORUS_PUBLISH_RACE_SECONDS (60 with CI=true, 10 locally; the old code lost mail at 10): not one message may be
quarantined, and every message sent is either consumed (a receipt) or still queued.

Every racer is its own process ('spawn'); the drains run the real Drain in-process
in a loop, which costs a few ms an event instead of a process start. Each sender is
held up to PREEMPT between its link and its unlink, as a busy machine deschedules it:
the window the red team hit with real processes, made wide enough to hit every run.
"""

import multiprocessing as mp
import os
import time

import pytest

from git_korus_mail.core import keys

import invariants
from helpers import no_limits

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SECONDS = float(os.environ.get("KORUS_PUBLISH_RACE_SECONDS") or (60 if CI else 10))
SENDERS = 8
DRAINS = 4
TIMEOUT = SECONDS + 120
PAUSE = 0.05
PREEMPT = 0.004  # seconds, at most, a sender is held between its link and its unlink



def _sender(idx, main_path, web_path, seconds, barrier, conn):
    """Publish through the store, as `send` does, until the deadline; report the ids."""
    try:
        import random
        from git_korus_mail import crash
        from git_korus_mail.store import message
        from git_korus_mail.store.files import MailRoot

        def preempted(step):  # a sender descheduled between its link and its unlink, as on a busy machine
            if step == "send:linked":
                time.sleep(random.random() * PREEMPT)
        crash.point = preempted
        common = keys.locate(main_path).common_dir
        key = keys.key_for(web_path)
        root = MailRoot.open(common, create=True)
        box = root.box(key.name, create=True, path=key.path)
        sender = {"path": main_path, "branch": "main", "session": None}
        ids = []
        barrier.wait(TIMEOUT)
        until = time.time() + seconds
        while time.time() < until:
            msg = message.build(f"sender {idx} message {len(ids)}", key.path, key.name, sender)
            from git_korus_mail.store import publish  # loaded where used
            publish.publish(box, msg, message.encode(msg))
            ids.append(msg["id"])
            time.sleep(PAUSE)  # the drains keep up, so most reads meet fresh mail
        conn.send(("ok", ids))
    except BaseException:  # noqa: BLE001 - reported to the test
        import traceback
        conn.send(("error", traceback.format_exc()))


def _drainer(idx, web_path, seconds, barrier, conn):
    """Show, write the markers, consume at Stop, over and over, as one session."""
    try:
        from git_korus_mail.core import drain
        from git_korus_mail.store.launch import Launch
        session = f"0000000{idx}-race-4000-8000-000000000000"
        me = Launch.of_process("claude", os.getpid())  # this process plays the client, so Stop consumes
        events = 0
        barrier.wait(TIMEOUT)
        until = time.time() + seconds
        while time.time() < until:
            out = drain.run(drain.DrainFacts("show", session, web_path, label="UserPromptSubmit", launch=me))
            out.commit()
            drain.run(drain.DrainFacts("consume", session, web_path, label="Stop", launch=me)).commit()
            events += 2
        conn.send(("ok", events))
    except BaseException:  # noqa: BLE001 - reported to the test
        import traceback
        conn.send(("error", traceback.format_exc()))


def _one_box(clone):
    from git_korus_mail.store import message
    from git_korus_mail.store.files import MailRoot
    key = keys.key_for(str(clone.web))
    root = MailRoot.open(str(clone.common_dir), create=True)
    box = root.box(key.name, create=True, path=key.path)
    msg = message.build("hello", key.path, key.name, {"path": str(clone.main)})
    return root, box, msg


def test_staging_file_is_named_by_the_id(clone):
    """The on-disk staging name, pinned: tmp/msg.<id>, nothing random after it."""
    from git_korus_mail import crash
    root, box, msg = _one_box(clone)
    orig = crash.point
    seen = []
    crash.point = lambda step: seen.append((step, sorted(os.listdir(clone.mail_root / "tmp"))))
    try:
        from git_korus_mail.store import publish  # loaded where used
        publish.publish(box, msg, b"{}")
    finally:
        crash.point = orig
    assert seen[0] == ("send:tmp-written", ["msg." + msg["id"]])


def test_a_read_during_publication_that_outlives_the_staging_link_is_not_a_foreign_link(clone):
    """The reader saw two links; by the time it looks for the other one, the sender has
    unlinked its staging file. That is our own publication, not a hard-link attack."""
    from git_korus_mail.store import message
    root, box, msg = _one_box(clone)
    tmp = clone.mail_root / "tmp" / ("msg." + msg["id"])
    tmp.write_bytes(message.encode(msg))
    inbox = clone.mail_root / "box" / box.name / "inbox"
    inbox.mkdir(exist_ok=True)
    os.link(tmp, inbox / (msg["id"] + ".json"))
    _msg, st = box.load(msg["id"])
    assert st.st_nlink == 2
    from git_korus_mail.store import publish  # loaded where used
    assert publish.linked_elsewhere(box, msg["id"], st) == "in-progress"  # staging link still there
    tmp.unlink()  # the sender finishes between the reader's read and its look at tmp/
    from git_korus_mail.store import publish  # loaded where used
    assert publish.linked_elsewhere(box, msg["id"], st) == "publish-finished"


def test_a_foreign_hard_link_is_still_refused(clone, tmp_path):
    from git_korus_mail.store import message
    root, box, msg = _one_box(clone)
    victim = tmp_path / "victim"
    victim.write_bytes(message.encode(msg))
    inbox = clone.mail_root / "box" / box.name / "inbox"
    inbox.mkdir(exist_ok=True)
    os.link(victim, inbox / (msg["id"] + ".json"))
    _msg, st = box.load(msg["id"])
    from git_korus_mail.store import publish  # loaded where used
    assert publish.linked_elsewhere(box, msg["id"], st) is None


# slow tier, main Python only (docs/TESTING.md): interleavings of the kernel's rename/link/flock, same on every CPython
@pytest.mark.slow
def test_drains_racing_publication_quarantine_nothing(clone):
    no_limits(clone)  # a flood on purpose: the store is measured, not the limits
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(SENDERS + DRAINS + 1)
    procs, conns = [], []
    for i in range(SENDERS + DRAINS):
        parent, child = ctx.Pipe()
        if i < SENDERS:
            target, args = _sender, (i, str(clone.main), str(clone.web), SECONDS, barrier, child)
        else:
            target, args = _drainer, (i - SENDERS, str(clone.web), SECONDS, barrier, child)
        p = ctx.Process(target=target, args=args, daemon=True)
        p.start()
        child.close()
        procs.append(p)
        conns.append(parent)
    barrier.wait(TIMEOUT)
    results = []
    try:
        for i, c in enumerate(conns):
            assert c.poll(TIMEOUT), f"racer {i} did not finish"
            tag, payload = c.recv()
            assert tag == "ok", f"racer {i} failed:\n{payload}"
            results.append(payload)
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    sent = [m for ids in results[:SENDERS] for m in ids]
    events = sum(results[SENDERS:])
    box = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    quarantined = sorted(n for n in os.listdir(box / "quarantine") if not n.endswith(".why.json")) \
        if (box / "quarantine").exists() else []
    inbox = {n[:-5] for n in os.listdir(box / "inbox")}
    receipts = {n[:-5] for n in os.listdir(box / "receipts")} if (box / "receipts").exists() else set()
    print(f"\n[publish race] {SENDERS} senders, {DRAINS} drains, {SECONDS:.0f}s: {len(sent)} sent, "
          f"{len(receipts)} consumed, {len(inbox)} queued, {events} drain events, "
          f"{len(quarantined)} quarantined")
    assert quarantined == [], f"{len(quarantined)} of {len(sent)} legitimate messages quarantined"
    assert len(sent) > 0 and events > 0 and receipts, "the load must show and consume mail"
    assert set(sent) == inbox | receipts and not inbox & receipts
    invariants.check(clone.mail_root)


def test_an_older_senders_staging_link_is_not_a_foreign_link_either(clone):
    """Senders before tmp/msg.<id> staged as tmp/msg.<id>.<8 hex>; one may still run during an
    upgrade, and its publication in flight is no attack."""
    from git_korus_mail.store import message
    root, box, msg = _one_box(clone)
    tmp = clone.mail_root / "tmp" / ("msg." + msg["id"] + ".0badcafe")
    tmp.write_bytes(message.encode(msg))
    inbox = clone.mail_root / "box" / box.name / "inbox"
    inbox.mkdir(exist_ok=True)
    os.link(tmp, inbox / (msg["id"] + ".json"))
    _msg, st = box.load(msg["id"])
    from git_korus_mail.store import publish  # loaded where used
    assert publish.linked_elsewhere(box, msg["id"], st) == "in-progress"
