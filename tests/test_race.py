"""Exactly-once consumption under contention, measured with separate OS processes.

The seed (step 4): a claim scheme passed 500 rounds with 16 threads in one process
and gave multiple winners in 46 of 800 rounds with 16 processes. So every racer
here is its own process (multiprocessing, 'fork' for the big run, 'spawn' for the
show-path run), and the racers are 16 sessions that were each shown the same
messages and then all run their Stop consumption at once, released by a barrier.

Sizes: CI=true runs the CI size (2,000 rounds); otherwise a local size (200).
KORUS_RACE_ROUNDS overrides. A measurement line is printed for each run (-s).

The detector itself is tested: the same harness with a deliberately broken consume
(claims that always win, receipts written without exclusivity) must see double
winners, and with claims always winning but the real receipt it must see none.
"""

import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import time

import pytest

from helpers import PYTHON, launch_dir, no_limits, run_cli
from git_korus_mail import stamps
from git_korus_mail.core import keys
from git_korus_mail.store import message, publish
from git_korus_mail.store.files import MailRoot

import invariants

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
WORKERS = 16
ROUNDS = int(os.environ.get("KORUS_RACE_ROUNDS") or (2000 if CI else 200))
MSGS_PER_ROUND = int(os.environ.get("KORUS_RACE_MSGS") or 1)
SHOW_ROUNDS = 60 if CI else 25
BROKEN_ROUNDS = 30
CHAOS_ROUNDS = 25 if CI else 8
CHAOS_SESSIONS = 6
CHAOS_WAVE = 4
BARRIER_TIMEOUT = 60

# slow tier, main Python only (docs/TESTING.md): interleavings of the kernel's rename/link/flock, same on every CPython
pytestmark = pytest.mark.slow


# -- the racers: separate processes -------------------------------------------------------
def _apply_mode(mode):
    """Deliberately broken variants, applied inside a racer process only.

    "no-claim": every claim is won at once (as if the exclusion primitive did not
      exclude); the real exclusive receipt stays, and a pause right before it makes
      every racer reach it together.
    "broken": the same, and the receipt is written with O_TRUNC instead of exclusively:
      the check-then-write the seed measured giving several winners."""
    if mode == "real":
        return
    from git_korus_mail.store import claims, fsafe

    claims.acquire = lambda tmp_dir, claiming_dir, msg_id, owner: ("won", None)
    orig_staged = fsafe.Dir.create_staged
    orig_excl = fsafe.Dir.create_exclusive

    def is_receipt(d):
        return os.path.basename(d.path) == "receipts"

    def overwrite(d, name, data):
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600, dir_fd=d.fd)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def staged(self, name, data, staging, tag, sync=True, **kw):
        if not is_receipt(self):
            return orig_staged(self, name, data, staging, tag, sync=sync, **kw)
        time.sleep(0.003)
        if mode == "broken":
            return overwrite(self, name, data)
        return orig_staged(self, name, data, staging, tag, sync=sync, **kw)

    def excl(self, name, data, sync=True):  # in case the receipt is created in place again
        if not is_receipt(self):
            return orig_excl(self, name, data, sync=sync)
        time.sleep(0.003)
        if mode == "broken":
            return overwrite(self, name, data)
        return orig_excl(self, name, data, sync=sync)

    fsafe.Dir.create_staged = staged
    fsafe.Dir.create_exclusive = excl


def _racer(session, cwd, mode, barrier, conn):
    """One session in its own process: on each command, wait at the barrier, then run the
    real Drain for that event ("show": SessionStart and, after it, the marker commit;
    "stop": consume what this session was shown). Reports every moves.consume result."""
    from git_korus_mail import crash
    from git_korus_mail.core import drain
    from git_korus_mail.store import claims
    from git_korus_mail.store import moves  # a Box takes consume from Moves (on first use)
    assert crash._AT is None
    results = []
    orig = moves.consume

    def recording(self, msg_id, sess, observation, launch=None):
        r = orig(self, msg_id, sess, observation, launch=launch)
        results.append((msg_id, r))
        return r

    moves.consume = recording
    lost = [0]
    orig_acquire = claims.acquire

    def acquire(tmp_dir, claiming_dir, msg_id, owner):
        r = orig_acquire(tmp_dir, claiming_dir, msg_id, owner)
        if r[0] != "won":
            lost[0] += 1  # another racer held the claim at that instant: real overlap
        return r

    claims.acquire = acquire
    # every racer runs under the launch conftest names (this test's pytest process), as commands/drain.py would
    from git_korus_mail.store.launch import Launch
    launch = Launch.of_process("claude", int(os.environ["CLAUDE_PID"]))
    _apply_mode(mode)
    conn.send(("ready", os.getpid()))
    while True:
        cmd = conn.recv()
        if cmd == "exit":
            break
        try:
            barrier.wait(BARRIER_TIMEOUT)
            if cmd == "show":
                out = drain.run(drain.DrainFacts("show", session, cwd, label="SessionStart", opening=True, launch=launch))
                out.commit()  # what commands/drain.py does after writing and flushing the output
                conn.send(("ok", out.context or ""))
            elif cmd == "noop":
                conn.send(("ok", None))
            else:
                out = drain.run(drain.DrainFacts("consume", session, cwd, label="Stop", launch=launch))
                conn.send(("ok", (list(results), out.notice, lost[0])))
                results.clear()
                lost[0] = 0
        except BaseException as exc:  # noqa: BLE001 - reported to the test, which fails
            import traceback
            conn.send(("error", traceback.format_exc() + repr(exc)))
    conn.close()


class Racers:
    """WORKERS racer processes, each a different session, driven round by round."""

    def __init__(self, cwd, mode="real", method="fork", n=WORKERS):
        ctx = mp.get_context(method)
        self.sessions = [f"race-{i:02d}-{os.urandom(3).hex()}" for i in range(n)]
        self.barrier = ctx.Barrier(n + 1)
        self.procs, self.conns = [], []
        for s in self.sessions:
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_racer, args=(s, str(cwd), mode, self.barrier, child), daemon=True)
            p.start()
            child.close()
            self.procs.append(p)
            self.conns.append(parent)
        pids = set()
        for c in self.conns:
            tag, pid = self._recv(c)
            assert tag == "ready"
            pids.add(pid)
        assert len(pids) == n and os.getpid() not in pids, "racers must be separate processes"

    @staticmethod
    def _recv(conn):
        if not conn.poll(BARRIER_TIMEOUT):
            raise AssertionError("a racer did not answer")
        return conn.recv()

    def run(self, cmd):
        """All racers run `cmd` at once; returns {session: payload}."""
        for c in self.conns:
            c.send(cmd)
        self.barrier.wait(BARRIER_TIMEOUT)
        out = {}
        for s, c in zip(self.sessions, self.conns):
            tag, payload = self._recv(c)
            if tag != "ok":
                raise AssertionError(f"racer {s} failed:\n{payload}")
            out[s] = payload
        return out

    def close(self):
        for c in self.conns:
            try:
                c.send("exit")
            except OSError:
                pass
        for p in self.procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()


class Store:
    """The main process's handle on the recipient box: publishes, plants markers, inspects."""

    def __init__(self, clone):
        self.clone = clone
        run_cli("send", "--to", str(clone.web), "--", "first message, via the CLI", cwd=clone.main, check=True)
        self.key = keys.key_for(str(clone.web))
        self.root = MailRoot.open(str(clone.common_dir), create=True)
        self.box = self.root.box(self.key.name, create=True, path=self.key.path)
        self.dir = clone.mail_root / "box" / self.key.name
        sender = keys.key_for(str(clone.main))
        self.sender = {"path": sender.path, "branch": "main", "session": None}

    def publish(self, body):
        msg = message.build(body, self.key.path, self.key.name, self.sender)
        publish.publish(self.box, msg, message.encode(msg))
        self.root.journal("sent", id=msg["id"], box=self.key.name, sender=self.sender["path"], kind="note")
        return msg["id"]

    def mark_shown(self, session, msg_id):
        """A display marker, as `Shown.commit` writes it (for the big run, where showing each
        message to 16 sessions through the renderer would only slow the race down)."""
        d = self.dir / "shown" / launch_dir(session)
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        obs = {"session": session, "launch": launch_dir(session).split("@")[1], "event": "SessionStart", "at": stamps.utc_stamp(time.time()),
               "chars": 100, "truncated": False, "body_chars": 10}
        (d / msg_id).write_text(json.dumps(obs, sort_keys=True))

    def where(self, msg_id):
        return [s for s in ("inbox", "seen", "expired") if (self.dir / s / (msg_id + ".json")).exists()]

    def receipt(self, msg_id):
        p = self.dir / "receipts" / (msg_id + ".json")
        return json.loads(p.read_bytes()) if p.exists() else None


class Tally:
    def __init__(self):
        self.winners = {}   # id -> [sessions that got "consumed"]
        self.results = {}   # id -> {result: count}
        self.rounds = 0
        self.double_rounds = 0
        self.zero_rounds = 0
        self.contended_rounds = 0
        self.claims_lost = 0

    def add(self, round_ids, answers):
        self.rounds += 1
        lost = sum(a[2] for a in answers.values())
        self.claims_lost += lost
        self.contended_rounds += lost > 0
        for sess, (results, _notice, _lost) in answers.items():
            for msg_id, r in results:
                self.results.setdefault(msg_id, {}).setdefault(r, 0)
                self.results[msg_id][r] += 1
                if r == "consumed":
                    self.winners.setdefault(msg_id, []).append(sess)
        counts = [len(self.winners.get(i, [])) for i in round_ids]
        self.double_rounds += any(n > 1 for n in counts)
        self.zero_rounds += any(n == 0 for n in counts)
        return counts

    def line(self, name, elapsed):
        doubles = sum(1 for w in self.winners.values() if len(w) > 1)
        held = sum(r.get("held", 0) for r in self.results.values())
        return (f"[race:{name}] {self.rounds} rounds x {WORKERS} processes in {elapsed:.1f}s: "
                f"{self.double_rounds} rounds with >1 consumer ({doubles} messages), "
                f"{self.zero_rounds} rounds with 0 consumers, {held} 'held' refusals; "
                f"{self.contended_rounds} rounds contended (a racer found the claim taken; "
                f"{self.claims_lost} lost claims in all)")


def _race(clone, mode, rounds, msgs_per_round=1, method="fork", via_show=False, strict=True):
    no_limits(clone)  # many messages from one sender in seconds: the race, not the rate, is measured
    st = Store(clone)
    racers = Racers(clone.web, mode=mode, method=method)
    tally = Tally()
    t0 = time.time()
    try:
        if via_show:
            racers.run("show")  # the CLI-sent first message, shown to all 16 through the real path
        else:
            for sess in racers.sessions:
                for i in st.box.inbox_ids()[0]:
                    st.mark_shown(sess, i)
        for _ in range(rounds):
            ids = [st.publish(f"round {tally.rounds} message {k}") for k in range(msgs_per_round)]
            if via_show:
                shown = racers.run("show")
                for sess, ctx in shown.items():
                    for i in ids:
                        assert i in ctx, f"{sess} was not shown {i}"
                        assert (st.dir / "shown" / launch_dir(sess) / i).exists(), "no marker after the commit"
            else:
                for sess in racers.sessions:
                    for i in ids:
                        st.mark_shown(sess, i)
            counts = tally.add(ids, racers.run("stop"))
            for i, n in zip(ids, counts):
                rec = st.receipt(i)
                if n == 0:
                    # a false refusal is allowed, and must leave the message queued, unconsumed
                    assert st.where(i) == ["inbox"] and rec is None, (i, st.where(i), rec)
                elif strict:
                    assert n == 1, f"{i}: {n} consumers: {tally.winners[i]}"
                    assert st.where(i) == ["seen"], (i, st.where(i))
                    assert rec is not None and rec["session"] == tally.winners[i][0], (rec, tally.winners[i])
        # every session once more: whatever a refusal left queued (and still marked) is consumed now
        for sess, (results, _notice, _lost) in racers.run("stop").items():
            for msg_id, r in results:
                if r == "consumed":
                    tally.winners.setdefault(msg_id, []).append(sess)
    finally:
        racers.close()
    elapsed = time.time() - t0
    print("\n" + tally.line(mode + ("/show" if via_show else ""), elapsed))
    return st, tally


def _assert_exactly_once(st, tally, clone):
    s = invariants.check(clone.mail_root)
    info = s[st.key.name]
    assert not info["inbox"], f"left queued after the final Stop: {sorted(info['inbox'])}"
    raced = set(tally.winners) | set(tally.results)
    assert raced <= info["seen"], "lost: " + ", ".join(sorted(raced - info["seen"]))
    for msg_id in raced:
        assert len(tally.winners.get(msg_id, [])) == 1, f"{msg_id}: consumers {tally.winners.get(msg_id)}"
        assert info["receipts"][msg_id]["session"] == tally.winners[msg_id][0]
        assert len(s.consumed_journal.get(msg_id, [])) == 1
    return s


# -- the race -----------------------------------------------------------------------------------
def test_race_stop_consumption_16_processes(clone):
    """16 sessions, each shown every message, run Stop at once, ROUNDS times."""
    st, tally = _race(clone, "real", ROUNDS, msgs_per_round=MSGS_PER_ROUND)
    assert tally.rounds == ROUNDS
    assert tally.double_rounds == 0
    _assert_exactly_once(st, tally, clone)


def test_race_after_the_real_show_path_spawned(clone):
    """Smaller: markers come from the real show path (Drain SessionStart + commit, as the hook
    runs it) in each racer, started with 'spawn'; three messages per round."""
    st, tally = _race(clone, "real", SHOW_ROUNDS, msgs_per_round=3, method="spawn", via_show=True)
    assert tally.double_rounds == 0
    _assert_exactly_once(st, tally, clone)


def test_detector_sees_double_winners_when_consume_is_broken(clone):
    """The detector must be able to fail: claims that always win and a receipt written with
    O_TRUNC (check-then-write) give several consumers for one message."""
    st, tally = _race(clone, "broken", BROKEN_ROUNDS, strict=False)
    doubles = sum(1 for w in tally.winners.values() if len(w) > 1)
    assert tally.double_rounds >= 1 and doubles >= 1, tally.line("broken", 0)
    with pytest.raises(AssertionError):
        _assert_exactly_once(st, tally, clone)


def test_receipt_alone_keeps_consumption_exactly_once(clone):
    """The store's claim: exactly-once rests on the receipt, whatever the claims did. With every
    claim won at once and all 16 racers reaching the receipt together, still one consumer."""
    st, tally = _race(clone, "no-claim", BROKEN_ROUNDS * 2)
    assert tally.double_rounds == 0
    _assert_exactly_once(st, tally, clone)


def test_false_refusal_leaves_the_message_queued(clone):
    """The refusal path the race rarely reaches, made deterministic: a live process holds the
    claim longer than a Stop's patience. That Stop cedes (and says so), the message stays queued
    with the session's marker kept; once the holder is dead, the next Stop consumes it once."""
    from git_korus_mail.store import claims
    st = Store(clone)
    [msg_id] = st.box.inbox_ids()[0]
    st.mark_shown("sess-refused", msg_id)
    holder = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"])
    try:
        owner = claims.me("consume", "sess-holder")
        owner["pid"] = holder.pid
        for _ in range(100):  # its start time, once /proc has it
            owner["start"] = claims.proc_start_time(holder.pid)
            if owner["start"] is not None:
                break
            time.sleep(0.01)
        (st.dir / "claiming").mkdir(mode=0o700, exist_ok=True)
        (st.dir / "claiming" / (msg_id + ".claim")).write_text(json.dumps(owner))
        proc = subprocess.run([PYTHON, "-m", "git_korus_mail", "drain"], cwd=str(clone.web), capture_output=True,
                              text=True, input=_payload("Stop", "sess-refused", clone.web))
        assert proc.returncode == 0, proc.stderr
        assert f"claimed by live process {holder.pid}" in proc.stdout
        assert st.where(msg_id) == ["inbox"] and st.receipt(msg_id) is None
        assert (st.dir / "shown" / launch_dir("sess-refused") / msg_id).exists(), "the refusal dropped the marker"
    finally:
        holder.kill()
        holder.wait()
    proc = subprocess.run([PYTHON, "-m", "git_korus_mail", "drain"], cwd=str(clone.web), capture_output=True,
                          text=True, input=_payload("Stop", "sess-refused", clone.web))
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr
    assert st.where(msg_id) == ["seen"] and st.receipt(msg_id)["session"] == "sess-refused"
    invariants.check(clone.mail_root)


# -- chaos: real drain processes, SIGKILLed at random -------------------------------------------
def _payload(event, session, cwd):
    return json.dumps({"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event,
                       **({"source": "startup"} if event == "SessionStart" else {})})


def _spawn_drain(event, session, cwd):
    p = subprocess.Popen([PYTHON, "-m", "git_korus_mail", "drain"], cwd=str(cwd), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(_payload(event, session, cwd).encode())
    p.stdin.close()
    return p


def _finish(procs):
    out = []
    for p in procs:
        stdout, stderr = p.stdout.read(), p.stderr.read()
        p.wait()
        p.stdout.close()
        p.stderr.close()
        out.append((p.returncode, stdout, stderr))
    return out


def test_chaos_concurrent_stop_drains_killed_at_random(clone):
    """Waves of mail, shown to several sessions, then all their Stop drains (real
    `git-korus-mail drain` processes) at once while random ones are SIGKILLed at random
    instants; repeated until the inbox is empty. Then a clean drain repairs, and nothing may be
    lost or consumed twice."""
    no_limits(clone)  # a flood on purpose: the store is measured, not the limits
    rng = random.Random(int(os.environ.get("KORUS_CHAOS_SEED") or time.time()))
    st = Store(clone)
    sessions = [f"chaos-{i}-{os.urandom(3).hex()}" for i in range(CHAOS_SESSIONS)]
    sent = set(st.box.inbox_ids()[0])
    # how long a Stop drain lives, to aim the kills inside it (adapted to the last round)
    t = time.time()
    _finish([_spawn_drain("Stop", "chaos-probe", clone.web)])
    span = max(0.05, time.time() - t) * max(1, len(sessions) / (os.cpu_count() or 1))
    kills = landed = targeted = 0
    claiming = st.dir / "claiming"
    t0 = time.time()
    rounds = 0
    while rounds < CHAOS_ROUNDS or st.box.inbox_ids()[0]:
        assert rounds < CHAOS_ROUNDS + 30, "the inbox does not drain"
        if rounds < CHAOS_ROUNDS:
            for k in range(CHAOS_WAVE):
                sent.add(st.publish(f"chaos round {rounds} message {k}"))
        shows = _finish([_spawn_drain("UserPromptSubmit" if rounds else "SessionStart", s, clone.web)
                         for s in sessions])
        assert all(rc == 0 for rc, _, _ in shows), shows
        start = time.time()
        stops = [_spawn_drain("Stop", s, clone.web) for s in sessions]
        by_pid = {p.pid: i for i, p in enumerate(stops)}
        # Half the drains get a kill at a random moment spread over their likely lifetime. And a
        # watcher kills a claim's holder, now or a moment later, with probability 1/2: the consume
        # work is a few ms at the end of a ~100 ms process, where random instants rarely land.
        plan = sorted(((rng.uniform(0.4, 1.2) * span, i) for i in range(len(stops)) if rng.random() < 0.5))
        ended, judged = {}, set()
        while len(ended) < len(stops):
            now = time.time() - start
            for j, p in enumerate(stops):
                if j not in ended and p.poll() is not None:
                    ended[j] = now
            while plan and plan[0][0] <= now:
                _, i = plan.pop(0)
                kills += 1
                if stops[i].poll() is None:
                    stops[i].send_signal(signal.SIGKILL)
                    landed += 1
            for name in os.listdir(claiming) if claiming.exists() else ():
                if name in judged:
                    continue
                judged.add(name)
                try:
                    pid = json.loads((claiming / name).read_bytes()).get("pid")
                except (OSError, ValueError):
                    continue
                if pid in by_pid and rng.random() < 0.5:
                    time.sleep(rng.choice((0, 0, 0.0005, 0.001)))
                    if stops[by_pid[pid]].poll() is None:
                        stops[by_pid[pid]].send_signal(signal.SIGKILL)
                        targeted += 1
        for rc, _out, err in _finish(stops):
            assert rc in (0, -signal.SIGKILL), err
        if ended:
            span = 0.5 * span + 0.5 * max(t for j, t in ended.items() if stops[j].returncode == 0) \
                if any(p.returncode == 0 for p in stops) else span
        rounds += 1
    # clean: a showing event (its repair breaks dead claims) and a Stop for every session
    for s in sessions:
        for ev in ("SessionStart", "Stop"):
            [(rc, _, err)] = _finish([_spawn_drain(ev, s, clone.web)])
            assert rc == 0, err
    assert run_cli("list", cwd=clone.main).returncode == 0
    elapsed = time.time() - t0
    s = invariants.check(clone.mail_root, killed_debris_ok=True)
    info = s[st.key.name]
    assert sent == info["seen"], f"lost: {sorted(sent - info['seen'])}"
    assert not info["inbox"] and not info["expired"]
    assert set(info["receipts"]) == sent  # exactly one receipt per message (one name per id)
    assert all(r["session"] in sessions for r in info["receipts"].values())
    broken = sum(1 for r in s.journal if r.get("event") == "claim-broken")
    repaired = len(sent) - len(s.consumed_journal)
    print(f"\n[chaos] {rounds} rounds, {len(sent)} messages, {len(sessions)} sessions, {elapsed:.1f}s: "
          f"{kills} random kills planned, {landed} landed on a live drain, {targeted} claim holders "
          f"killed, {broken} dead claims broken, "
          f"{repaired} consumptions finished by repair (no 'consumed' journal line), "
          f"debris: {len(s.debris)} {sorted(set(d[0] for d in s.debris))}")
    assert landed + targeted > 0
