"""The wake-up tier, measured with the real Claude Code CLI against the e2e mock API.

    .venv/bin/python bench/wake.py [--trials 12] [--pairs 10] [--out bench/WAKE.md]

1. Latency: an idle `--input-format stream-json` session in worktree b of a clone armed with
   `install --urgent`; `git korus-mail send` from worktree a; the time from the send's start
   (the process is spawned) to the arrival of the session's next request at the mock, whose
   system context must carry the message. A launch may be woken 6 times in 10 minutes, so a
   new session starts every 5 trials. Reported: median, p90, max.
2. `claude -p "prompt"` with and without the tier: two clones, one installed plainly, one with
   --urgent, run alternately (A B A B ...), whole-process wall time; median, p90 and the ratio.

Needs the pinned CLI (`bash tests/e2e/install-claude.sh`, or KORUS_E2E_CLAUDE). Loopback only.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))
import hermetic  # noqa: E402
from driver import Claude  # noqa: E402
from mockapi import MockAPI, text  # noqa: E402

TOOL = str(Path(sys.executable).parent / "git-korus-mail")


def claude_bin():
    env = os.environ.get("KORUS_E2E_CLAUDE")
    if env:
        return env
    cached = Path.home() / ".cache" / "korus-mail-e2e" / "node_modules" / ".bin" / "claude"
    if cached.exists():
        return str(cached)
    sys.exit("no claude CLI: export KORUS_E2E_CLAUDE=$(bash tests/e2e/install-claude.sh)")


class World:
    def __init__(self, base):
        self.base = base
        self.home = base / "home"
        self.home.mkdir()
        hermetic.write_gitconfig(self.home)
        env = {k: v for k, v in os.environ.items() if k not in hermetic.SCRUB}
        env.update(hermetic.hermetic_env(self.home, "Bench", "bench@example.invalid"))
        env.pop("CLAUDE_PID", None)
        # bytecode cached, as after a normal install (bench/run.py's `cached`): with
        # PYTHONDONTWRITEBYTECODE set and an editable install, every send, hook and watcher would
        # compile the package from source (hundreds of ms under load), which no user pays
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
        env["PATH"] = str(Path(TOOL).parent) + os.pathsep + env.get("PATH", "")
        self.env = env

    def run(self, *args, cwd, extra=None):
        p = subprocess.run(list(args), cwd=cwd, env=dict(self.env, **(extra or {})), capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"{args}: rc {p.returncode}\n{p.stdout}\n{p.stderr}")
        return p.stdout

    def clone(self, name, urgent, tool=TOOL, extra=None):
        top = self.base / name
        top.mkdir()
        main = top / "main"
        hermetic.init_repo(main, lambda *a, cwd: self.run("git", *a, cwd=cwd))
        a = hermetic.add_worktree(main, top / "a", "a", lambda *x, cwd: self.run("git", *x, cwd=cwd))
        b = hermetic.add_worktree(main, top / "b", "b", lambda *x, cwd: self.run("git", *x, cwd=cwd))
        self.run(tool, "install", *(["--urgent"] if urgent else []), cwd=main, extra=extra)
        # the trials send faster than the receiver's default rate limit (8 per 30 s from one sender)
        self.run("git", "config", "korus-mail.rate", "1000/30", cwd=main)
        common = Path(self.run("git", "rev-parse", "--path-format=absolute", "--git-common-dir", cwd=main).strip())
        return common / "mail", a, b


def armed(mail_root):
    return any(not n.name.endswith(".wakes") and not n.name.startswith(".") for n in mail_root.glob("box/*/watch/*"))


def wait_until(pred, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.01)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _woken_at(mail_root, msg_id):
    """When a watcher decided to wake for `msg_id` (its wakes record's time), or None."""
    import json
    for f in mail_root.glob("box/*/watch/*.wakes"):
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if msg_id in rec.get("woken", []) and rec.get("times"):
            return max(rec["times"])
    return None


def _shown_at(mail_root, msg_id):
    """When a drain showed `msg_id` (its journal line), or None."""
    import json
    from git_korus_mail.stamps import parse_stamp
    for name in ("journal.1.jsonl", "journal.jsonl"):
        try:
            lines = (mail_root / name).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            if msg_id in line and '"shown"' in line:
                return parse_stamp(json.loads(line)["at"])
    return None


STAGES = ["send spawned → message built (send's start)",
          "built → the watcher decides (the publish's fsyncs, the watcher's notice and look)",
          "watcher decides → Claude Code logs its exit 2 (the watcher's exit, the stub, Claude Code's notice)",
          "that log → the woken UserPromptSubmit hook starts (Claude Code's rewake)",
          "the woken hook: its start → the drain's show (the stub, Python's start, the drain)",
          "the woken hook: the show → its end (markers, the process's exit, the stub's output)",
          "the hook's end → the request at the mock (Claude Code)"]


class Variant:
    """One version of the product under trial: its git-korus-mail script and environment (this
    tree's, or with --base a commit's package and script), its clone, and what its trials measured."""

    def __init__(self, label, tool, extra):
        self.label, self.tool, self.extra = label, tool, extra
        self.lat, self.queued, self.returned, self.hook_ms = [], [], [], []
        self.stages = [[] for _ in STAGES]
        self.where = None  # (mail root, a, b), made by the first session


def session(world, runner, api, v, n):
    """One stream-json session of variant `v` woken `n` times (a launch may be woken 6 times in
    10 minutes). Per trial: send spawned -> the woken request (v.lat), message built -> request
    (v.queued), send exited -> request (v.returned), and the split (v.stages) from the store's own
    records and Claude Code's debug log of the session."""
    if v.where is None:
        v.where = world.clone(f"wake-{v.label.split()[0]}-{uuid.uuid4().hex[:4]}",
                              urgent=True, tool=v.tool, extra=v.extra)
    mail_root, a, b = v.where
    debug = world.base / f"debug-{uuid.uuid4().hex[:8]}.txt"
    points = []  # per trial: (spawned, built, woken, shown, request)
    with runner.stream(cwd=b, args=["--debug-file", str(debug)], env=v.extra) as s:
        api.set_script([text("ready")])
        s.send("hello")
        s.read_result()
        sid = s.session_id
        for _ in range(n):
            wait_until(lambda: armed(mail_root))
            time.sleep(0.3)  # idle for a moment, as a real recipient is
            needle = f"LAT-{uuid.uuid4().hex[:8]}"
            api.set_script([text("noted")])
            t0 = time.time()
            sent = world.run(v.tool, "send", "--wait=0", "--to", "../b", f"{needle} ping", cwd=a, extra=v.extra)
            t_sent = time.time()
            s.read_result(timeout=30)
            reqs = [r for r in api.agent_requests() if r.session_id == sid and r.time >= t0
                    and any(needle in t for t in r.texts("system"))]
            if not reqs:
                raise SystemExit(f"the woken request did not carry {needle}:\n{api.summary()}")
            v.lat.append(reqs[0].time - t0)
            from git_korus_mail.store.message import id_time
            msg_id = sent.split()[1]
            v.queued.append(reqs[0].time - id_time(msg_id))
            v.returned.append(reqs[0].time - t_sent)
            points.append((t0, id_time(msg_id), _woken_at(mail_root, msg_id), _shown_at(mail_root, msg_id),
                           reqs[0].time))
    hooks = _hook_times(debug)
    v.hook_ms.extend(round((end - start) * 1000) for _x, start, end in hooks)
    _split(points, hooks, v.stages)


UPS = re.compile(r"^(\S+) \[DEBUG\] Hooks: UserPromptSubmit\S* \[[^\]]*\] finished with status \d+ \((\d+)ms\)", re.M)
EXIT2 = re.compile(r"^(\S+) \[ERROR\] \"Hook Stop \(Stop\) error: status code 2", re.M)


def _log_time(stamp):
    from datetime import datetime, timezone
    return datetime.strptime(stamp.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


def _hook_times(debug):
    """Per wake in the session's debug log, in order: (Claude Code logs the watcher's exit 2, the
    woken UserPromptSubmit hook starts, it ends), epoch seconds at the log's millisecond. The
    session's first prompt ("hello") has no wake before it and is left out."""
    try:
        log = debug.read_text(errors="replace")
    except OSError:
        return []
    exits = [_log_time(m.group(1)) for m in EXIT2.finditer(log)]
    hooks = [(_log_time(m.group(1)), int(m.group(2)) / 1000) for m in UPS.finditer(log)][1:]
    return [(x, end - d, end) for x, (end, d) in zip(exits, hooks)]


def _split(points, hooks, stages):
    for n, (t0, built, woke, shown, req) in enumerate(points):
        if woke is None or shown is None:
            continue
        slack = 0.002  # the log's times are cut to the millisecond
        if n < len(hooks) and all(x <= y + slack for x, y in zip((woke, *hooks[n][:2], shown), (*hooks[n][:2], shown, hooks[n][2]))):
            exit_seen, started, ended = hooks[n]
            parts = (built - t0, woke - built, exit_seen - woke, started - exit_seen, shown - started,
                     max(0.0, ended - shown), req - ended)
            for into, dt in zip(stages, parts):
                into.append(dt)


def print_pairs(world, runner, api, pairs):
    _root_p, _a, plain_b = world.clone("plain", urgent=False)
    _root_u, _a2, urgent_b = world.clone("urgent", urgent=True)
    api.set_script([])  # every request: "done"
    for b in (plain_b, urgent_b):  # warm-up
        runner.run("hi", cwd=b, timeout=120).check()
    plain, urgent = [], []
    for _ in range(pairs):
        for b, into in ((plain_b, plain), (urgent_b, urgent)):
            t0 = time.monotonic()
            runner.run("hi", cwd=b, timeout=120).check()
            into.append(time.monotonic() - t0)
    return plain, urgent


def _measures(v, labelled):
    ms = lambda x: f"{x * 1000:.0f} ms"  # noqa: E731
    out = [f"**{v.label}**", ""] if labelled else []
    out += ["| measure | n | median | p90 | max |", "|---|---|---|---|---|"]
    for name, xs in (("send → the idle session's next request (stream-json)", v.lat),
                     ("message queued (its id's time) → that request", v.queued),
                     ("`send` exited → that request", v.returned)):
        out.append(f"| {name} | {len(xs)} | {ms(statistics.median(xs))} | {ms(pct(xs, 90))} | {ms(max(xs))} |")
    return out + [""]


def _stage_table(v, labelled):
    ms = lambda x: f"{x * 1000:.0f} ms"  # noqa: E731
    out = [f"**{v.label}**", ""] if labelled else []
    out += ["| stage | n | median | p90 |", "|---|---|---|---|"]
    out += [f"| {name} | {len(xs)} | {ms(statistics.median(xs))} | {ms(pct(xs, 90))} |"
            for name, xs in zip(STAGES, v.stages) if xs]
    if v.hook_ms:
        out.append(f"| the woken UserPromptSubmit hook, whole (Claude Code's own timing) | {len(v.hook_ms)} | "
                   f"{statistics.median(v.hook_ms):.0f} ms | {pct(v.hook_ms, 90):.0f} ms |")
    return out + [""]


def setting(prefix):
    """A bench's place (a temporary folder), its clones (World), the mock API and the Claude Code
    runner. Claude Code's environment is the hooks' (the stub, the watcher, the woken drain): it
    gets the same bytecode cache as the sends (World), or an inherited PYTHONDONTWRITEBYTECODE=1
    would have every hook compile each module without a fresh .pyc beside it at every event
    (empty: unset for Python)."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    world = World(base)
    api = MockAPI(log_path=str(base / "api.jsonl")).start()
    runner = Claude(claude_bin(), api, base / "claude-config", skip_permissions=True,
                    env={"PATH": world.env["PATH"], "PYTHONDONTWRITEBYTECODE": "",
                         "PYTHONPYCACHEPREFIX": world.env["PYTHONPYCACHEPREFIX"]})
    return base, world, api, runner


def busy(load):
    """`load` busy processes per core, for the trials under load (issue 26's goal: 2)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(int(round(load * len(os.sched_getaffinity(0)))))]


def stop(hogs, runner, api):
    """The busy processes (ours, ended by pid), Claude Code's config folder, the mock API."""
    for p in hogs:
        p.kill()
        p.wait()
    runner.cleanup()
    api.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--out", default=None)
    ap.add_argument("--base", help="also run this commit's package and script (git archive), sessions alternating")
    ap.add_argument("--load", type=float, default=0.0,
                    help="busy processes per core during the trials (issue 26's goal: 2, a load of twice the cores)")
    args = ap.parse_args()
    base, world, api, runner = setting("korus-bench-wake-")
    hogs = busy(args.load)
    loads = []
    try:
        variants = [Variant("this tree", TOOL, {})]
        if args.base:
            sys.path.insert(0, str(REPO / "bench"))
            from run import export_base
            variants.append(Variant(*export_base(args.base, base / "base-export", sys.executable)))
        while any(len(v.lat) < args.trials for v in variants):
            for v in variants:  # alternately, a session (up to 5 wakes) of each
                if len(v.lat) < args.trials:
                    session(world, runner, api, v, min(5, args.trials - len(v.lat)))
        loads.append(os.getloadavg()[0])
        plain, urgent = print_pairs(world, runner, api, args.pairs) if args.pairs else ([], [])
    finally:
        stop(hogs, runner, api)
    ms = lambda x: f"{x * 1000:.0f} ms"  # noqa: E731
    lines = [
        "# The wake-up tier, measured (bench/wake.py)",
        "",
        f"Claude Code {subprocess.run([claude_bin(), '--version'], capture_output=True, text=True).stdout.strip()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
        + (f" During the trials {len(hogs)} busy processes ran (`--load {args.load}`); load average "
           f"{loads[0]:.1f} when they ended." if hogs and loads else ""),
        "",
        *[line for v in variants for line in _measures(v, len(variants) > 1)],
        *([f"| `claude -p` without the tier | {len(plain)} | {ms(statistics.median(plain))} | {ms(pct(plain, 90))} "
           f"| {ms(max(plain))} |",
           f"| `claude -p` with the tier (install --urgent) | {len(urgent)} | {ms(statistics.median(urgent))} "
           f"| {ms(pct(urgent, 90))} | {ms(max(urgent))} |", "",
           f"`-p` ratio (median with / median without): {statistics.median(urgent) / statistics.median(plain):.2f}"]
          if plain else ["", "(`claude -p` pairs not run: --pairs 0)"]),
        "",
        "Where the latency goes, trial by trial (the watcher's decision is its wakes record's time, the",
        "show is the woken drain's journal line, Claude Code's times are its debug log's, to the ms; one",
        "machine's clock):",
        "",
        *[line for v in variants for line in _stage_table(v, len(variants) > 1)],
        "Latency runs from the moment `git korus-mail send` is spawned (its own ~0.1-0.2 s included) to",
        "the request's arrival at the mock, whose system context carries the message text.",
        "",
    ]
    text_out = "\n".join(lines)
    print(text_out)
    if args.out:
        Path(args.out).write_text(text_out)


if __name__ == "__main__":
    main()
