"""The wake-up tier with the real Claude Code CLI (install --urgent): an idle session is woken by
new mail, whose text the woken turn's first request carries; `claude -p` does not hang; a
closed session has no watcher and gets its mail at resume; a launch never has two watchers;
the wake budget and --no-wake hold. The send-to-request latency over many trials is measured
in bench/wake.py, not asserted here."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
import uuid

import pytest
from mockapi import bash, text
from test_scenarios import (SS_PREFIX, UPS_PREFIX, Mail, cli, context_blocks, runners,  # noqa: F401 - a fixture
                            session_requests, user_notices)

pytestmark = pytest.mark.e2e


def _uid() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
def urgent(clone) -> Mail:
    m = Mail(clone)
    proc = cli("install", "--urgent", cwd=clone.main)
    assert "the wake-up tier is armed" in proc.stdout, proc.stdout
    # the twenty-turn test sends more than the receiver's default rate (8 per 30 s) on purpose
    subprocess.run(["git", "config", "korus-mail.rate", "100/30"], cwd=clone.main, check=True)
    return m


def watch_dir(mail: Mail):
    d = mail.box_b.dir
    return d / "watch" if d is not None else None


def armed(mail: Mail) -> list[str]:
    d = watch_dir(mail)
    if d is None or not d.is_dir():
        return []
    return [n for n in os.listdir(d) if not n.endswith(".wakes") and not n.startswith(".")]


def watcher_pids(launch: int | None = None, mail: Mail | None = None) -> list[int]:
    """Live `git-korus-mail drain --watch` processes (the watchers), from /proc; with `launch`,
    those of that Claude Code process only (their CLAUDE_PID); with `mail`, those working in
    that test's clone only (their cwd): other tests run beside this one under pytest-xdist."""
    out = []
    under = os.path.realpath(mail.b).rsplit(os.sep, 1)[0] + os.sep if mail is not None else None
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{d}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and b"drain" in argv and b"--watch" in argv:
            if under is not None:
                try:
                    if not (os.readlink(f"/proc/{d}/cwd") + os.sep).startswith(under):
                        continue
                except OSError:
                    continue
            if launch is not None:
                try:
                    with open(f"/proc/{d}/environ", "rb") as f:
                        if f"CLAUDE_PID={launch}".encode() not in f.read().split(b"\0"):
                            continue
                except OSError:
                    continue
            out.append(int(d))
    return out


def wait_until(pred, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def send(mail: Mail, body: str, *extra: str) -> tuple[str, float]:
    t = time.time()
    return mail.send(mail.a, "../b", body, "--wait=0", *extra), t


def first_request_after(api, sid: str, t: float):
    reqs = [r for r in session_requests(api, sid) if r.time >= t]
    return reqs[0] if reqs else None


def test_idle_stream_session_is_woken_and_its_next_request_carries_the_mail(urgent, mockapi, runners):  # noqa: F811
    acct = runners()
    mockapi.set_script([text("first answer"), text("noted")])
    with acct.stream(cwd=urgent.b) as s:
        s.send("hello")
        s.read_result()
        sid = s.session_id
        wait_until(lambda: armed(urgent), what="the watcher armed at Stop")
        needle = f"WAKE-{_uid()}"
        msg_id, t_send = send(urgent, f"{needle}: the schema changed")
        woken = s.read_result(timeout=20)
        assert woken.get("result") == "noted"
        req = first_request_after(mockapi, sid, t_send)
        assert req is not None and any(needle in t for t in req.texts("system")), mockapi.summary()
        # the mail is in the woken turn's UserPromptSubmit context, framed as the drain frames it
        blocks = context_blocks(mockapi, sid, needle, UPS_PREFIX)
        assert blocks and blocks[0].startswith(UPS_PREFIX + "korus-mail: mail for this worktree"), blocks
        wake = [t for t in req.texts("user") if "korus-mail: new mail" in t]
        assert wake and os.path.realpath(urgent.a) in wake[0] and needle not in wake[0], req.texts("user")
        # the woken turn said only "noted", and its Stop consumed the mail and re-armed a watcher
        wait_until(lambda: urgent.box_b.state()["seen"] == [msg_id], what="the consume at the woken Stop")
        wait_until(lambda: len(armed(urgent)) == 1, what="a watcher re-armed by the woken turn's Stop")
        assert len(watcher_pids(mail=urgent)) == 1
        t0 = time.monotonic()
        rc = s.close()
    # closing the input ends the session at once: its watcher saw that it can no longer wake it
    assert rc == 0 and time.monotonic() - t0 < 10
    wait_until(lambda: not watcher_pids(mail=urgent), timeout=5, what="no watcher left")
    assert urgent.box_b.receipts()[msg_id]["observed"]["event"] == "UserPromptSubmit"


def test_print_mode_does_not_hang_and_a_closed_session_gets_mail_at_resume(urgent, mockapi, runners):  # noqa: F811
    acct = runners()
    mockapi.set_script([text("one shot")])
    run = acct.run("hello", cwd=urgent.b, timeout=60).check()
    assert run.duration < 30, run.describe()  # the watcher's reach is 900 s: it ended at once
    assert not watcher_pids(mail=urgent) and not armed(urgent)
    needle = f"RESUME-{_uid()}"
    msg_id, _ = send(urgent, f"{needle} for a closed session")
    time.sleep(1.0)
    assert urgent.box_b.state()["inbox"] == [msg_id]  # nobody to wake: it waits
    mockapi.set_script([text("resumed")])
    again = acct.run("carry on", cwd=urgent.b, resume=run.session_id).check()
    assert context_blocks(mockapi, again.session_id, needle, SS_PREFIX), mockapi.summary()
    assert urgent.box_b.state()["seen"] == [msg_id]


def test_terminal_ui_is_woken(urgent, mockapi, runners):  # noqa: F811
    acct = runners()
    mockapi.set_script([text("first answer"), text("WOKEN-ANSWER")])
    with acct.terminal(cwd=urgent.b) as t:
        t.wait_until(lambda: "shift+tab" in t.screen_text(), 30, "the terminal UI's prompt")
        t.type("hello")
        time.sleep(0.3)
        t.type("\r")
        t.wait_for_text("first answer", 30)
        wait_until(lambda: armed(urgent), what="the watcher armed at Stop")
        needle = f"TUI-{_uid()}"
        _msg_id, t_send = send(urgent, f"{needle} in the terminal")
        t.wait_for_text("WOKEN-ANSWER", 30)
        reqs = [r for r in mockapi.agent_requests() if r.time >= t_send]
        assert reqs and any(needle in x for x in reqs[0].texts("system")), mockapi.summary()
        assert any(UPS_PREFIX in x and needle in x for x in reqs[0].texts("system"))
        t.kill()


STARTUP = 1.0  # s: a watcher that cannot act ends within its Python start
DELAY_ENV = "KORUS_E2E_WATCH_START_DELAY"  # seconds on every watcher's start: the twenty turns go red


class WatcherSampler:
    """Watcher processes of one Claude Code launch, sampled from /proc every 30 ms in a thread of
    the test (it only reads /proc): how many at each look, and each one's first and last sighting."""

    def __init__(self) -> None:
        import threading
        self.counts: list[int] = []
        self.seen: dict[int, list[float]] = {}  # pid -> [first, last] sighting
        self.launch: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            if self.launch:
                now = time.monotonic()
                live = watcher_pids(self.launch[0])
                for pid in live:
                    self.seen.setdefault(pid, [now, now])[1] = now
                self.counts.append(len(live))
            time.sleep(0.03)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def overlaps(self) -> list[tuple[int, list[float], int, list[float]]]:
        """Pairs of watchers alive at once where neither ended within a Python start: the one
        that finds the claim held, or a newer turn, must end at once (docs/HOOKS.md, "The
        wake-up tier")."""
        out = []
        for a, (a0, a1) in self.seen.items():
            for b, (b0, b1) in self.seen.items():
                if a < b and a0 <= b1 and b0 <= a1 and min(a1 - a0, b1 - b0) >= STARTUP:
                    out.append((a, self.seen[a], b, self.seen[b]))
        return out


def delay_watcher_start(mail: Mail, seconds: float) -> None:
    """Put `seconds` on the start of every watcher of `mail`'s worktrees, after its exec into
    Python: the Stop entry's `<stub> Watch` runs under strace, which delays the return of the
    helper's execve (-P: only that path's). The process shows in /proc as the watcher all along,
    as a watcher slowed by a loaded machine does, and arms late."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed: no delay can be put on the watcher's start")
    probe = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:  # ptrace refused here (a container's seccomp, yama): say so, do not fail
        pytest.skip(f"strace cannot trace here: {probe.stderr.decode(errors='replace').strip()[:200]}")
    stub = (mail.root / "hooks" / "claude-hook").read_text()
    helper = next(shlex.split(line.split("=", 1)[1])[0] for line in stub.splitlines() if line.startswith("helper="))
    assert os.path.isfile(helper), helper
    strace = (f"strace -f -qq -o /dev/null -P {shlex.quote(helper)} -e trace=execve "
              f"-e inject=execve:delay_exit={int(seconds * 1e6)} ")
    for wt in (mail.clone.main, mail.a, mail.b):
        path = wt / ".claude" / "settings.local.json"
        settings = json.loads(path.read_text())
        entries = [h for g in settings["hooks"]["Stop"] for h in g["hooks"] if h["command"].endswith(" Watch")]
        assert len(entries) == 1, settings["hooks"]["Stop"]
        entries[0]["command"] = strace + entries[0]["command"]
        path.write_text(json.dumps(settings, indent=2))


def test_one_watcher_per_launch_over_twenty_turns_and_the_budget_and_no_wake_hold(urgent, mockapi, runners):  # noqa: F811
    """20 turns of a stream-json session: prompts with tool calls, plain prompts and wakes. A
    sampler counts watcher processes all along: never more than one past its start-up. (With the
    stub answering a prompt and a Stop, a turn can end before the last Stop's watcher has even
    started; the next Stop's watcher then starts beside it, and one of the two finds the claim
    held, or a newer turn, and ends at once: docs/HOOKS.md, "The wake-up tier".) With
    KORUS_E2E_WATCH_START_DELAY=3 every watcher starts 3 s late and this test goes red (the next
    test holds that the check sees it)."""
    if os.environ.get(DELAY_ENV):
        delay_watcher_start(urgent, float(os.environ[DELAY_ENV]))
    acct = runners()
    sampler = WatcherSampler()
    wakes = 0
    try:
        with acct.stream(cwd=urgent.b) as s:
            sampler.launch.append(s.pid)  # the claude process: the watchers' CLAUDE_PID
            for turn in range(20):
                kind = ("tool", "prompt", "wake")[turn % 3] if wakes < 6 else ("tool", "prompt")[turn % 2]
                if kind == "wake":
                    wait_until(lambda: armed(urgent), what=f"the watcher before turn {turn}")
                    mockapi.set_script([text(f"noted {turn}")])
                    send(urgent, f"turn {turn} mail")
                    wakes += 1
                elif kind == "tool":
                    mockapi.set_script([bash("echo tool-call", "a tool"), text(f"tool turn {turn}")])
                    s.send(f"turn {turn} with a tool")
                else:
                    mockapi.set_script([text(f"turn {turn}")])
                    s.send(f"turn {turn}")
                s.read_result(timeout=30)
            assert wakes == 6
            # the budget is spent (6 wakes in 10 minutes): more mail waits for the next prompt
            wait_until(lambda: armed(urgent), what="the last watcher")
            needle = f"OVER-{_uid()}"
            send(urgent, f"{needle} over budget")
            no_wake = f"NOWAKE-{_uid()}"
            send(urgent, f"{no_wake} not urgent", "--no-wake")
            with pytest.raises(AssertionError):
                s.read_result(timeout=3)
            mockapi.set_script([text("seen")])
            s.send("anything new?")
            s.read_result(timeout=30)
            sid = s.session_id
            assert context_blocks(mockapi, sid, needle, UPS_PREFIX)
            assert context_blocks(mockapi, sid, no_wake, UPS_PREFIX)
            s.close()
        # the user was told, at the next Stop (a notice for the user only)
        told = [t for ev, t in user_notices(acct, sid) if "wake budget spent" in (t or "")]
        assert told and "did not wake this session" in told[0], user_notices(acct, sid)
    finally:
        sampler.stop()
    # two at once only while one of them ends at once (it found the claim held or a newer turn)
    assert not sampler.overlaps(), sampler.overlaps()
    assert sampler.counts and max(sampler.counts) <= 2, sampler.counts
    assert sum(1 for c in sampler.counts if c == 1) > 10  # the sampler did see watchers


def test_the_overlap_check_sees_watchers_whose_start_is_delayed(urgent, mockapi, runners):  # noqa: F811
    """The twenty-turn test's check can fail, and deterministically: with 3 s put on every
    watcher's start (strace, after the exec: delay_watcher_start), a turn ends before its Stop's
    watcher has armed, the next Stop's watcher starts beside it, and both live past a Python
    start. Six quick turns; the same sampler and check must report the overlap every time."""
    delay_watcher_start(urgent, 3.0)
    acct = runners()
    sampler = WatcherSampler()
    try:
        with acct.stream(cwd=urgent.b) as s:
            sampler.launch.append(s.pid)
            for turn in range(6):
                mockapi.set_script([text(f"turn {turn}")])
                s.send(f"turn {turn}")
                s.read_result(timeout=30)
            wait_until(lambda: armed(urgent), what="a watcher, armed 3 s late")
            s.close()
    finally:
        sampler.stop()
    assert sampler.overlaps(), (sampler.seen, sampler.counts)
    assert max(sampler.counts) >= 2, sampler.counts


def test_a_watcher_that_arms_while_its_session_works_again_ends_at_once(urgent, mockapi, runners):  # noqa: F811
    """The race docs/HOOKS.md names ("The wake-up tier"), made certain: a Stop's watcher is 2 s
    late (delay_watcher_start), the next prompt comes before it has a claim to end, and that
    turn runs a 6 s tool call. The late watcher arms while the session works, sees that it has
    worked since the watcher's start (core/wake.py, `_superseded`), and ends without waking:
    gone within its delay and a Python start, long before that turn's Stop."""
    delay = 2.0
    delay_watcher_start(urgent, delay)
    acct = runners()
    sampler = WatcherSampler()
    try:
        with acct.stream(cwd=urgent.b) as s:
            sampler.launch.append(s.pid)
            mockapi.set_script([text("first")])
            s.send("hello")
            s.read_result(timeout=30)  # its Stop starts the late watcher (async: it may come after the result)
            early: list[int] = []
            wait_until(lambda: early.extend(watcher_pids(s.pid)) or early,
                       what="the first Stop's watcher, still in its delay")
            mockapi.set_script([bash("sleep 6", "a long tool call"), text("after the long call")])
            t_prompt = time.monotonic()
            assert not armed(urgent)  # no claim yet for the prompt to end
            s.send("a long one")
            assert s.read_result(timeout=60).get("result") == "after the long call"
            turn_end = time.monotonic()
            wait_until(lambda: armed(urgent), what="the long turn's own watcher")
            s.close()
    finally:
        sampler.stop()
    assert turn_end - t_prompt >= 6, "the long turn was not long"
    first = early[0]  # the first Stop's watcher, seen before the prompt
    assert first in sampler.seen, (first, sampler.seen)
    f0, f1 = sampler.seen[first]
    assert f1 - f0 < delay + STARTUP + 0.5, (first, sampler.seen, t_prompt, turn_end)
