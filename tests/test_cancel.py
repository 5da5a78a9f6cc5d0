"""Cancel against consume: of the two, on one message, exactly one happens.

Each racer is its own process (multiprocessing, fork), released together by a barrier:
one consumes the message as a Stop would, the other cancels it as its sender would. The
store decides both under the message's claim; the disk, read from outside, must show the
message in exactly one of seen/ and cancelled/, and the invariants must hold."""

import multiprocessing as mp
import os

import invariants
from helpers import run_cli
from install_fixtures import box_dir

ROUNDS = 12


def _racer(common, box_name, msg_id, role, barrier, conn):
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(common)
    box = root.box(box_name)
    barrier.wait(30)
    if role == "consume":
        result = box.consume(msg_id, "s-reader", {"at": "2026-01-01T00:00:00.000000Z", "event": "test"})
    else:
        result = box.cancel(msg_id, by="the sender")
    conn.send(result)
    conn.close()


def _race(ctx, common, box_name, msg_id):
    barrier = ctx.Barrier(2)
    procs, conns = [], []
    for role in ("consume", "cancel"):
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_racer, args=(common, box_name, msg_id, role, barrier, child))
        p.start()
        procs.append(p)
        conns.append(parent)
    results = [c.recv() for c in conns]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    return dict(zip(("consume", "cancel"), results))


def test_cancel_and_consume_of_one_message_exactly_one_happens(clone):
    for _ in range(ROUNDS):
        run_cli("send", "--to", str(clone.web), "hello", cwd=clone.main, check=True)
    box = box_dir(clone, clone.web)
    ids = sorted(n[:-5] for n in os.listdir(box / "inbox"))
    assert len(ids) == ROUNDS
    ctx = mp.get_context("fork")
    outcomes = []
    for msg_id in ids:
        r = _race(ctx, str(clone.common_dir), box.name, msg_id)
        consumed, cancelled = r["consume"] == "consumed", r["cancel"] == "cancelled"
        assert consumed != cancelled, (msg_id, r)
        # the loser names what happened: too late to cancel, or gone before the consume
        assert r["cancel"] == "consumed" if consumed else r["consume"] == "gone", (msg_id, r)
        in_seen = (box / "seen" / f"{msg_id}.json").exists()
        in_cancelled = (box / "cancelled" / f"{msg_id}.json").exists()
        assert (in_seen, in_cancelled) == (consumed, cancelled), (msg_id, r, in_seen, in_cancelled)
        outcomes.append("consumed" if consumed else "cancelled")
    s = invariants.check(clone.mail_root)
    assert s[box.name]["inbox"] == set()
    assert len(s[box.name]["seen"]) + len(s[box.name]["cancelled"]) == ROUNDS


def test_a_cancelled_message_is_never_shown_and_its_sender_sees_it_cancelled(clone):
    run_cli("send", "--to", str(clone.web), "withdrawn", cwd=clone.main, check=True)
    box = box_dir(clone, clone.web)
    [name] = os.listdir(box / "inbox")
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(str(clone.common_dir))
    assert root.box(box.name).cancel(name[:-5], by="test") == "cancelled"
    assert root.box(box.name).cancel(name[:-5], by="test") == "gone"  # once
    import json
    status = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    assert [m["fate"]["state"] for m in status["sent"]] == ["cancelled"]
    from helpers import context_of, hook
    answer, _ = hook("SessionStart", clone.web, "s-web")
    assert "withdrawn" not in (context_of(answer) or "")
    invariants.check(clone.mail_root)
