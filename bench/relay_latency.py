"""Send -> arrival across two clones through the relay (docs/RELAY.md), against the same send
within one clone. A NATS server of its own on loopback, two clones of one origin in a temp dir.

    .venv/bin/python bench/relay_latency.py [rounds]

For each round: the time from the start of `git korus-mail send` to the message's file in
the recipient's inbox (polled every 1 ms), across (laptop -> vm:web) and locally (vm's api ->
web). The relay polls its outbox every 20 ms (relay/link.py POLL)."""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import hermetic  # noqa: E402
from relayworld import two_machines  # noqa: E402


def arrival(cmd, cwd, inbox, outbox=None):
    """(start of send -> in the inbox, in the outbox -> in the inbox), in seconds."""
    before = set(os.listdir(inbox)) if inbox.is_dir() else set()
    t0 = time.perf_counter()
    queued = None
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        if outbox is not None and queued is None and outbox.is_dir() and os.listdir(outbox):
            queued = time.perf_counter()
        now = set(os.listdir(inbox)) if inbox.is_dir() else set()
        if now - before:
            t = time.perf_counter()
            break
        time.sleep(0.0005)
    proc.wait()
    return t - t0, (t - queued if queued is not None else None)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    base = Path(tempfile.mkdtemp(prefix="korus-relay-bench-"))
    home = base / "home"
    home.mkdir()
    os.environ.update(hermetic.hermetic_env(home, "Bench", "bench@example.invalid"))
    hermetic.write_gitconfig(home)
    with two_machines(base, linked=True) as world:
        laptop, vm = world.laptop, world.vm
        for name, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
            subprocess.run(["git", "config", f"korus-mail.{name}", value], cwd=vm.api, check=True)
        py = [sys.executable, "-m", "git_korus_mail", "send"]
        inbox = vm.box(vm.web) / "inbox"
        across, leg, here = [], [], []
        outbox = laptop.relay / "outbox"
        for i in range(rounds):
            whole, relay_leg = arrival(py + ["--no-wake", "--to", "vm:web", "--", f"across {i}"], laptop.web, inbox,
                                       outbox)
            across.append(whole)
            if relay_leg is not None:
                leg.append(relay_leg)
            here.append(arrival(py + ["--no-wake", "--to", "web", "--", f"local {i}"], vm.api, inbox)[0])
        for label, xs in (("send start -> remote inbox (relay, loopback server)", across),
                          ("outbox -> remote inbox (the relay's own leg)", leg),
                          ("send start -> inbox, same clone", here)):
            xs = sorted(x * 1000 for x in xs)
            print(f"{label}: median {statistics.median(xs):.0f} ms, p90 {xs[int(len(xs) * 0.9) - 1]:.0f} ms, "
                  f"min {xs[0]:.0f} ms, n={len(xs)}")
        diff = statistics.median(across) * 1000 - statistics.median(here) * 1000
        print(f"relay overhead (median across - median local): {diff:.0f} ms")


if __name__ == "__main__":
    main()
