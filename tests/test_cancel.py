"""Cancel against consume: of the two, on one message, exactly one happens.

Each racer is its own process (multiprocessing, fork), released together by a barrier:
one consumes the message as a Stop would, the other cancels it as its sender would. The
store decides both under the message's claim; the disk, read from outside, must show the
message in exactly one of seen/ and cancelled/, and the invariants must hold."""

import multiprocessing as mp
import os

import pytest

import invariants
from helpers import no_limits, run_cli
from install_fixtures import box_dir

ROUNDS = 12


def _racer(common, box_name, msg_id, role, barrier, conn):
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(common)
    box = root.box(box_name)
    barrier.wait(30)
    if role == "consume":
        from git_korus_mail.store import moves  # loaded where used
        result = moves.consume(box, msg_id, "s-reader", {"at": "2026-01-01T00:00:00.000000Z", "event": "test"})
    else:
        from git_korus_mail.store import moves  # loaded where used
        result = moves.cancel(box, msg_id, by="the sender")
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


@pytest.mark.slow  # slow tier (docs/TESTING.md): many rounds of a race over the kernel's link/rename, same on every CPython
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
    from git_korus_mail.store import moves  # loaded where used
    assert moves.cancel(root.box(box.name), name[:-5], by="test") == "cancelled"
    from git_korus_mail.store import moves  # loaded where used
    assert moves.cancel(root.box(box.name), name[:-5], by="test") == "gone"  # once
    import json
    status = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    assert [m["fate"]["state"] for m in status["sent"]] == ["cancelled"]
    from helpers import context_of, hook
    answer, _ = hook("SessionStart", clone.web, "s-web")
    assert "withdrawn" not in (context_of(answer) or "")
    invariants.check(clone.mail_root)


# -- the commands themselves: a real drain Stop against a real `cancel`, as separate processes --
# Both start, import everything they will use, say they are ready, then wait at a gate (a file
# the test creates), so that their claims really race; after the gate each runs the real cli.
_GATED = ("import os, sys, time\n"
          "from git_korus_mail import cli\n"
          "from git_korus_mail.commands import cancel, drain  # noqa: F401 - imported before the gate\n"
          "from git_korus_mail.core import clone, retract  # noqa: F401\n"
          "import docopt  # noqa: F401\n"
          "gate = sys.argv[1]\n"
          "open(gate + '.ready.' + str(os.getpid()), 'w').close()\n"
          "while not os.path.exists(gate):\n"
          "    time.sleep(0.0002)\n"
          "sys.exit(cli.main(sys.argv[2:]))\n")
CLI_ROUNDS = 8
PER_ROUND = 3
SESSION = "s-race-web"


def _gated(gate, args, cwd, stdin=None):
    import subprocess
    import sys
    return subprocess.Popen([sys.executable, "-c", _GATED, str(gate), *args], cwd=cwd, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE), stdin


@pytest.mark.slow  # slow tier (docs/TESTING.md): many rounds of a race over the kernel's link/rename, same on every CPython
def test_a_real_stop_and_real_cancels_race_and_each_message_ends_cancelled_or_consumed(clone, tmp_path):
    import json
    import time

    import hermetic
    from helpers import hook
    no_limits(clone)  # 24 messages of one sender in seconds: the race is measured, not the rate
    box = box_dir(clone, clone.web)
    tally = {"consumed": 0, "cancelled": 0}
    sent = []
    for rnd in range(CLI_ROUNDS):
        ids = []
        for i in range(PER_ROUND):
            proc = run_cli("send", "--to", str(clone.web), "--json", "--", f"round {rnd} message {i}",
                           cwd=clone.main, check=True)
            ids.append(json.loads(proc.stdout)["results"][0]["id"])
        sent += ids
        answer, _ = hook("SessionStart", clone.web, SESSION)  # the session is shown all of them
        gate = tmp_path / f"gate-{rnd}"
        stop = hermetic.payload("Stop", SESSION, clone.web)
        racers = [_gated(gate, ["drain"], clone.web, json.dumps(stop))]
        racers += [_gated(gate, ["cancel", m], clone.main) for m in ids]
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob(f"gate-{rnd}.ready.*"))) < len(racers):
            assert time.monotonic() < deadline, "racers never got ready"
            time.sleep(0.01)
        gate.touch()
        outs = [p.communicate(stdin, timeout=60) + (p.returncode,) for p, stdin in racers]
        assert outs[0][2] == 0, outs[0]
        for m, (out, err, rc) in zip(ids, outs[1:]):
            in_seen = (box / "seen" / f"{m}.json").exists()
            in_cancelled = (box / "cancelled" / f"{m}.json").exists()
            receipt = (box / "receipts" / f"{m}.json").exists()
            assert in_seen != in_cancelled, (m, in_seen, in_cancelled, out, err)  # never both, never neither
            assert receipt == in_seen and not (box / "inbox" / f"{m}.json").exists()
            if in_cancelled:
                assert rc == 0 and out.startswith(f"cancelled {m} to "), (out, err)
                assert "a model was shown it already" in out  # the SessionStart showed it
            else:
                assert rc == 1 and ("was consumed already, by session " + SESSION in err
                                    or "holds the claim" in err), err
            tally["consumed" if in_seen else "cancelled"] += 1
    print(f"cancel-versus-Stop: {tally} over {CLI_ROUNDS} rounds of {PER_ROUND}")
    s = invariants.check(clone.mail_root)
    assert s[box.name]["inbox"] == set()
    assert len(s[box.name]["seen"]) + len(s[box.name]["cancelled"]) == len(sent)
    status = json.loads(run_cli("status", "--json", "--all", cwd=clone.main, check=True).stdout)
    fates = {m["id"]: m["fate"]["state"] for m in status["sent"]}
    assert fates == {m: ("consumed" if m in s[box.name]["seen"] else "cancelled") for m in sent}
