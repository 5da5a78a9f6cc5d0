"""How the commands grow with the store (issue 26, "Scale"): each measure paired against the
same command in a small store, interleaved in one run; medians and the ratio big / small.

    .venv/bin/python bench/scale.py [--runs 15] [--only seen,worktrees,journal] [--out FILE]

- seen: a box with 20,000 messages consumed (seen/ and receipts/, made by the product's own
  moves.consume) against a box with none: the drain (UserPromptSubmit of a fresh session,
  PostToolUse), a `send` into it, `inbox` in it.
- worktrees: a clone of 100 worktrees against one of 2, a session (SessionStart) live in each:
  `list`, `who`, `send --to all`, a drain (UserPromptSubmit, PostToolUse) in one of them.
- journal: a journal.jsonl of 1 GB. The first `send` rotates it (timed once); then, with the
  1 GB half in journal.1.jsonl: `send`, a drain, `status`, against a clone with a small journal.
(1,000 queued messages: `bench/run.py --only 2`, row 2.)

What a drain costs must grow with what it shows, not with history; a ratio near 1 says it
does not grow. Whole-process wall times, ms; the machine is shared, so read the ratios.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures import BODY, World, fill_box, forget_session, payload  # noqa: E402
from harness import Cmd, interleaved, median, p90, tool_paths  # noqa: E402

ROWS = []  # (section, measure, big, small)


def log(text):
    print(f"[scale {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def no_limits(world, main):
    for name, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
        world.git("config", f"korus-mail.{name}", value, cwd=main)


def drain_cmds(world, env, label, cwd, common, key_name):
    """A fresh session's UserPromptSubmit drain, and a PostToolUse drain of one session."""
    fresh = f"scale-{uuid.uuid4().hex[:6]}"

    def ups_stdin(i):
        return payload("UserPromptSubmit", f"{fresh}-{label}-{i}", cwd)

    def forget(i):
        forget_session(common, key_name, f"{fresh}-{label}-{i}")

    ups = Cmd(f"{label} drain UserPromptSubmit", [world.tool, "drain"], cwd, env, stdin=ups_stdin, after=forget)
    post = Cmd(f"{label} drain PostToolUse", [world.tool, "drain"], cwd, env,
               stdin=payload("PostToolUse", f"{fresh}-{label}-post", cwd))
    return [ups, post]


def pair(section, cmds_big, cmds_small, runs, warmup):
    cmds = [c for ab in zip(cmds_big, cmds_small) for c in ab]
    t = interleaved(cmds, runs, warmup)
    for big, small in zip(cmds_big, cmds_small):
        ROWS.append((section, big.label.split(" ", 1)[1], t[big.label], t[small.label]))


def emptier(inbox):
    def empty(i):
        for f in inbox.iterdir() if inbox.is_dir() else ():
            f.unlink()
    return empty


def sent_ok(stdout, stderr, i):
    return None if stdout.startswith(b"queued ") else f"send said {stdout[:200]!r} {stderr[:200]!r}"


# -- 20,000 consumed ------------------------------------------------------------------------
def bench_seen(world, env, runs, warmup, n=20000):
    from git_korus_mail.core import keys
    from git_korus_mail.store.files import MailRoot
    sides = {}
    for side in ("big", "small"):
        common, paths = world.clone(f"seen-{side}", ["web"])
        no_limits(world, paths["main"])
        web_key = keys.key_for(str(paths["web"])).name
        if side == "big":
            log(f"seen: publishing and consuming {n:,} messages (the product's own consume)")
            fill_box(common, paths["web"], n, paths["main"])
            box = MailRoot.open(str(common)).box(web_key)
            t0 = time.time()
            for msg_id in box.inbox_ids()[0]:
                from git_korus_mail.store import moves  # loaded where used
                moves.consume(box, msg_id, "scale-history", {"session": "scale-history", "event": "Stop"})
            log(f"seen: {n:,} consumed in {time.time() - t0:.0f} s; seen/ holds "
                f"{len(os.listdir(Path(common) / 'mail' / 'box' / web_key / 'seen')):,}")
        sides[side] = (common, paths, web_key)
    big, small = [], []
    for side, into in (("big", big), ("small", small)):
        common, paths, web_key = sides[side]
        web, main = paths["web"], paths["main"]
        into.extend(drain_cmds(world, env, side, web, common, web_key))
        inbox = Path(common) / "mail" / "box" / web_key / "inbox"
        into.append(Cmd(f"{side} send into that box", [world.tool, "send", f"--to={web}", "--", BODY], main, env,
                        check=sent_ok, after=emptier(inbox)))
        into.append(Cmd(f"{side} inbox", [world.tool, "inbox"], web, env))
    log("seen: timing")
    pair("20,000 consumed in seen/ vs none", big, small, runs, warmup)


# -- 100 worktrees ------------------------------------------------------------------------
def bench_worktrees(world, env, runs, warmup, n=100):
    from git_korus_mail.core import keys
    cmds = {}
    for side, count in (("big", n), ("small", 2)):
        log(f"worktrees: a clone of {count} worktrees, a live session in each")
        names = [f"w{i:03d}" for i in range(count - 1)]
        common, paths = world.clone(f"wt-{side}", names)
        no_limits(world, paths["main"])
        for name, path in paths.items():
            subprocess.run([world.tool, "drain"], input=payload("SessionStart", f"live-{side}-{name}", path),
                           cwd=path, env=env, capture_output=True, check=True)
        main, one = paths["main"], paths[names[0]]
        one_key = keys.key_for(str(one)).name
        boxes = Path(common) / "mail" / "box"

        def empty_all(i, boxes=boxes):
            for inbox in boxes.glob("*/inbox"):
                for f in inbox.iterdir():
                    f.unlink()

        cmds[side] = [
            Cmd(f"{side} list", [world.tool, "list"], main, env),
            Cmd(f"{side} who", [world.tool, "who"], main, env),
            Cmd(f"{side} send --to all", [world.tool, "send", "--to=all", "--wait=0", "--", BODY], main, env,
                after=empty_all),
        ] + drain_cmds(world, env, side, one, common, one_key)
    log("worktrees: timing")
    pair(f"{n} worktrees vs 2", cmds["big"], cmds["small"], runs, warmup)


# -- a journal of 1 GB ----------------------------------------------------------------------
def bench_journal(world, env, runs, warmup, size=1 << 30):
    from git_korus_mail.core import keys
    sides = {}
    for side in ("big", "small"):
        common, paths = world.clone(f"journal-{side}", ["web"])
        no_limits(world, paths["main"])
        fill_box(common, paths["web"], 1, paths["main"], journal=True)  # the mail root and a journal
        sides[side] = (common, paths, keys.key_for(str(paths["web"])).name)
    common, paths, _ = sides["big"]
    jpath = Path(common) / "mail" / "journal.jsonl"
    log(f"journal: writing {size >> 20} MiB of journal lines")
    line = (b'{"at": "2026-12-01T00:00:00.000000Z", "box": "web-000000000000000000000000", "event": "sent", '
            b'"id": "20261201T000000.000000Z-p1-0000000000000000", "kind": "note", "sender": "/x/main"}\n')
    chunk = line * ((1 << 20) // len(line))
    with open(jpath, "ab") as f:
        while f.tell() < size:
            f.write(chunk)
    t0 = time.perf_counter()
    p = subprocess.run([world.tool, "send", f"--to={paths['web']}", "--", BODY], cwd=paths["main"], env=env,
                       capture_output=True)
    first = time.perf_counter() - t0
    rotated = Path(common) / "mail" / "journal.1.jsonl"
    log(f"journal: the first send (rc {p.returncode}) took {first * 1000:.0f} ms; journal.1.jsonl is "
        f"{rotated.stat().st_size >> 20 if rotated.exists() else 0} MiB, journal.jsonl "
        f"{jpath.stat().st_size if jpath.exists() else 0} bytes")
    ROWS.append(("journal of 1 GB", "the send that rotates it (once)", [first], [float("nan")]))
    big, small = [], []
    for side, into in (("big", big), ("small", small)):
        common, paths, web_key = sides[side]
        web, main = paths["web"], paths["main"]
        inbox = Path(common) / "mail" / "box" / web_key / "inbox"
        into.append(Cmd(f"{side} send", [world.tool, "send", f"--to={web}", "--", BODY], main, env, check=sent_ok,
                        after=emptier(inbox)))
        into.extend(drain_cmds(world, env, side, web, common, web_key))
        into.append(Cmd(f"{side} status", [world.tool, "status"], main, env))
    log("journal: timing")
    pair("journal.1.jsonl of 1 GB vs a small journal", big, small, max(3, runs // 3), 1)


def render(runs, started, load0):
    from harness import ms
    out = [f"Command: `.venv/bin/python bench/scale.py --runs {runs}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
           f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.", "",
           "| store | measure | big med / p90 | small med / p90 | big ÷ small |", "|---|---|---|---|---|"]
    for section, measure, big, small in ROWS:
        b, s = median(big), median(small)
        ratio = f"**{b / s:.2f}×**" if s == s and s else "—"
        out.append(f"| {section} | {measure} | {ms(b)} / {ms(p90(big))} | {ms(s)} / {ms(p90(small))} | {ratio} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--only", default="seen,worktrees,journal")
    ap.add_argument("--out", default=None)
    ap.add_argument("--smoke", action="store_true", help="tiny stores, 2 runs: does it run at all")
    args = ap.parse_args()
    sizes = {"seen": {"n": 200}, "worktrees": {"n": 5}, "journal": {"size": 8 << 20}} if args.smoke else {}
    if args.smoke:
        args.runs, args.warmup = 2, 0
    tool, py = tool_paths()
    base = Path(tempfile.mkdtemp(prefix="korus-scale-"))
    world = World(base, tool, py)
    env = dict(world.env_cached, CLAUDE_PID=str(os.getpid()))  # the sessions' launch: this process
    started, load0 = time.time(), os.getloadavg()[0]
    try:
        for name in args.only.split(","):
            {"seen": bench_seen, "worktrees": bench_worktrees, "journal": bench_journal}[name](
                world, env, args.runs, args.warmup, **sizes.get(name, {}))
    finally:
        subprocess.run(["rm", "-rf", str(base)])
    text = render(args.runs, started, load0)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
