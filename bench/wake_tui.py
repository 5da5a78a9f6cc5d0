"""The wake of an idle Claude Code session in its terminal UI, beside the stream-json wake of
bench/wake.py in the same run (issue 26 asks its wake goals of both).

    KORUS_E2E_CLAUDE=$(bash tests/e2e/install-claude.sh) \
        .venv/bin/python bench/wake_tui.py [--trials 10] [--load 2] [--out FILE]

The terminal UI runs in a real terminal (tmux, one server of its own per session, as
tests/e2e/tmuxpane.py drives Codex and Gemini), against the loopback mock of tests/e2e/mockapi.py,
with Claude Code's first-run, API-key and folder-trust dialogs pre-answered in its config dir as
tests/e2e/driver.py does (`accept_dialogs`): no hook runs before they are answered.

Per trial, in worktree b of a clone armed with `install --urgent`: the session has answered a
prompt and is idle, its Stop watcher armed; `git korus-mail send` is spawned in worktree a; the
time runs to the arrival at the mock of the session's next request whose system context carries
the message. The screen must then show the mock's answer before the next trial (the woken turn
ended, its Stop has armed a new watcher). A launch may be woken 6 times in 10 minutes, so a new
session starts every 5 trials. Sessions alternate: a terminal-UI session, then a stream-json
session (bench/wake.py's `session`, unchanged), so both rows share the machine's load of the
moment and their ratio is paired in time. With --load N, N busy processes per core run during
all trials (issue 26's goal is stated at twice the cores: --load 2).

Needs the pinned CLI and tmux. Loopback only.
"""

import argparse
import os
import re
import shlex
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from driver import accept_dialogs  # noqa: E402
from mockapi import text  # noqa: E402
from tmuxpane import Pane  # noqa: E402
from wake import (STAGES, busy, setting, stop, TOOL, Variant, _hook_times, _log_time, _split, armed, claude_bin,  # noqa: E402
                  pct, session, wait_until)

UPS_END = re.compile(r"\[DEBUG\] Hooks: UserPromptSubmit\S* \[[^\]]*\] finished with status \d+")

PROMPT_READY = "shift+tab"  # the terminal UI's footer once its prompt takes input (test_wake_e2e.py)


def _launcher(world, runner, b, debug):
    """A script that starts the terminal UI with the runner's environment (the mock's URL, the
    config dir, the bench's PATH and bytecode cache): a tmux pane gets the tmux server's
    environment, not ours."""
    env = runner.env({})
    env.pop("TERM", None)  # tmux's own, as a person's terminal gives
    script = world.base / f"launch-{uuid.uuid4().hex[:8]}.sh"
    lines = ["#!/bin/sh"] + [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items()) if k.isidentifier()]
    lines.append(f"exec {shlex.quote(runner.claude_bin)} --debug-file {shlex.quote(str(debug))}")
    script.write_text("\n".join(lines) + "\n")
    accept_dialogs(runner.config_dir, b, env["ANTHROPIC_API_KEY"])
    return script


def tui_session(world, runner, api, v, n):
    """One terminal-UI session of variant `v` woken `n` times; the same measures as wake.session."""
    if v.where is None:
        v.where = world.clone(f"tui-{uuid.uuid4().hex[:4]}", urgent=True, tool=v.tool, extra=v.extra)
    mail_root, a, b = v.where
    debug = world.base / f"debug-tui-{uuid.uuid4().hex[:8]}.txt"
    script = _launcher(world, runner, b, debug)
    sock = f"korus-bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    pane = Pane.start(sock, f"sh {shlex.quote(str(script))}", cwd=b)
    points = []
    try:
        pane.wait_for(PROMPT_READY, 60)
        api.set_script([text("READY-ANSWER")])
        pane.keys("hello")
        time.sleep(0.3)  # the UI takes a pasted line and its Enter as one paste when they come together
        pane.keys("Enter")
        pane.wait_for("READY-ANSWER", 60)
        from git_korus_mail.store.message import id_time
        from wake import _shown_at, _woken_at
        for _ in range(n):
            wait_until(lambda: armed(mail_root), 30)
            time.sleep(0.3)  # idle for a moment, as a real recipient is (wake.session does the same)
            needle = f"LAT-{uuid.uuid4().hex[:8]}"
            answer = f"WOKE-{needle[4:]}"
            api.set_script([text(answer)])
            t0 = time.time()
            sent = world.run(v.tool, "send", "--wait=0", "--to", "../b", f"{needle} ping", cwd=a, extra=v.extra)
            t_sent = time.time()
            deadline = time.monotonic() + 30
            reqs = []
            while not reqs:
                if time.monotonic() > deadline:
                    raise SystemExit(pane.why(f"no request carried {needle} within 30 s") + "\n" + api.summary())
                reqs = [r for r in api.agent_requests() if r.time >= t0 and any(needle in t for t in r.texts("system"))]
                time.sleep(0.005)
            pane.wait_for(answer, 60)  # the woken turn ended; its Stop arms the next watcher
            msg_id = sent.split()[1]
            v.lat.append(reqs[0].time - t0)
            v.queued.append(reqs[0].time - id_time(msg_id))
            v.returned.append(reqs[0].time - t_sent)
            points.append((t0, id_time(msg_id), _woken_at(mail_root, msg_id), _shown_at(mail_root, msg_id),
                           reqs[0].time))
    finally:
        pane.kill()  # the server's SIGHUP ends the UI; its watcher ends with its launch
        # tmux 3.3a leaves a killed server's socket file behind: ours, removed by its name
        Path(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", sock).unlink(missing_ok=True)
    hooks = _hook_times(debug)
    v.hook_ms.extend(round((end - start) * 1000) for _x, start, end in hooks)
    _split(points, hooks, v.stages)


def _client_steps(debug):
    """Per woken turn in a session's debug log: Claude Code's steps from the woken
    UserPromptSubmit hook's end to its request (seconds): to its "[engine] turn N start" line,
    from there to its "Git remote URL" line (the terminal UI logs one at every turn; stream-json
    none), and from the hook's end to its "[API REQUEST]" line. The session's first prompt is
    left out, as wake._hook_times does."""
    out = {"the hook's end → Claude Code's turn start": [], "turn start → its \"Git remote URL\" line": [],
           "the hook's end → its \"[API REQUEST]\" line": []}
    try:
        log = debug.read_text(errors="replace").splitlines()
    except OSError:
        return out
    ends = [i for i, line in enumerate(log) if UPS_END.search(line)][1:]
    for i in ends:
        end, start, git, req = _log_time(log[i].split()[0]), None, None, None
        for line in log[i + 1:i + 100]:
            stamp = line.split()[0] if line[:2] == "20" else None
            if stamp and start is None and "[engine] turn" in line and line.endswith("start"):
                start = _log_time(stamp)
            if stamp and git is None and "Git remote URL" in line:
                git = _log_time(stamp)
            if stamp and "[API REQUEST]" in line:
                req = _log_time(stamp)
                break
        keys = list(out)
        if start is not None:
            out[keys[0]].append(start - end)
            if git is not None:
                out[keys[1]].append(git - start)
        if req is not None:
            out[keys[2]].append(req - end)
    return out


def _row(name, xs):
    return f"| {name} | {len(xs)} | {statistics.median(xs) * 1000:.0f} ms | {pct(xs, 90) * 1000:.0f} ms | {max(xs) * 1000:.0f} ms |"


def report(tui, stream, args, hogs, load_end, base):
    ms = lambda x: f"{x * 1000:.0f} ms"  # noqa: E731
    version = subprocess.run([claude_bin(), "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"Claude Code {version}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        + (f"both clones with the remote origin {args.remote} (a network namespace of loopback alone); "
           if args.remote else "")
        + (f"{len(hogs)} busy processes during the trials (`--load {args.load}`), load average {load_end:.1f} "
           "when they ended." if hogs else f"no added load, load average {load_end:.1f} at the end of the trials."),
        "",
        "| measure | n | median | p90 | max |",
        "|---|---|---|---|---|",
        _row("terminal UI (tmux): send spawned → the idle session's next request", tui.lat),
        _row("stream-json (bench/wake.py's session): send spawned → that request", stream.lat),
        _row("terminal UI: `send` exited → that request", tui.returned),
        _row("stream-json: `send` exited → that request", stream.returned),
        "",
        f"Ratio terminal UI ÷ stream-json, same run: median {statistics.median(tui.lat) / statistics.median(stream.lat):.2f}, "
        f"p90 {pct(tui.lat, 90) / pct(stream.lat, 90):.2f}.",
        "",
        "Where it goes (stages as bench/wake.py defines them; the watcher's wakes record, the drain's",
        "journal line and Claude Code's debug log, one clock):",
        "",
        "| stage | terminal UI n | median | p90 | stream-json n | median | p90 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t, s in zip(STAGES, tui.stages, stream.stages):
        cell = lambda xs: f"{len(xs)} | {ms(statistics.median(xs))} | {ms(pct(xs, 90))}" if xs else "0 | – | –"  # noqa: E731
        lines.append(f"| {name} | {cell(t)} | {cell(s)} |")
    for label, v in (("terminal UI", tui), ("stream-json", stream)):
        if v.hook_ms:
            lines.append(f"| the woken UserPromptSubmit hook, whole (Claude Code's timing), {label} | "
                         f"{len(v.hook_ms)} | {statistics.median(v.hook_ms):.0f} ms | {pct(v.hook_ms, 90):.0f} ms | | | |")
    lines += ["", "Claude Code's last stage, from its debug log (the woken hook's end → the request):", "",
              "| step | terminal UI n | median | p90 | stream-json n | median | p90 |", "|---|---|---|---|---|---|---|"]
    steps = {}
    for label, pattern in (("tui", "debug-tui-*.txt"), ("stream", "debug-[0-9a-f]*.txt")):
        steps[label] = {}
        for debug in sorted(base.glob(pattern)):
            for name, xs in _client_steps(debug).items():
                steps[label].setdefault(name, []).extend(xs)
    cell = lambda xs: f"{len(xs)} | {ms(statistics.median(xs))} | {ms(pct(xs, 90))}" if xs else "0 | – | –"  # noqa: E731
    for name in steps["tui"]:
        lines.append(f"| {name} | {cell(steps['tui'][name])} | {cell(steps['stream'].get(name, []))} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10, help="wakes per interface")
    ap.add_argument("--load", type=float, default=0.0, help="busy processes per core during the trials")
    ap.add_argument("--out", default=None, help="also write the tables here")
    ap.add_argument("--remote", default=None, metavar="URL",
                    help="give both clones an `origin` remote with this URL (stored only: nothing fetches it). The "
                         "terminal UI looks the remote up with a git process at every turn's start and caches only "
                         "a remote it can parse, as most people's repositories have. Only inside a network "
                         "namespace of loopback alone: unshare -n sh -c 'ip link set lo up; ...'")
    args = ap.parse_args()
    if args.remote and sorted(name for _i, name in socket.if_nameindex()) != ["lo"]:
        sys.exit("--remote runs only where loopback is the only network interface (unshare -n, lo up): "
                 "a client that knows a remote must have nothing to reach")
    base, world, api, runner = setting("korus-bench-waketui-")  # the hooks' environment as bench/wake.py's
    tui, stream = Variant("terminal UI", TOOL, {}), Variant("stream-json", TOOL, {})
    if args.remote:
        for v, name in ((tui, "tui"), (stream, "wake-stream-json")):
            v.where = world.clone(f"{name}-{uuid.uuid4().hex[:4]}", urgent=True, tool=v.tool, extra=v.extra)
            world.run("git", "remote", "add", "origin", args.remote, cwd=v.where[1].parent / "main")
    hogs = busy(args.load)
    try:
        while len(tui.lat) < args.trials or len(stream.lat) < args.trials:
            if len(tui.lat) < args.trials:
                tui_session(world, runner, api, tui, min(5, args.trials - len(tui.lat)))
            if len(stream.lat) < args.trials:
                session(world, runner, api, stream, min(5, args.trials - len(stream.lat)))
        load_end = os.getloadavg()[0]
    finally:
        stop(hogs, runner, api)
    out = report(tui, stream, args, hogs, load_end, base)
    print(out)
    if args.out:
        Path(args.out).write_text(out)


if __name__ == "__main__":
    main()
