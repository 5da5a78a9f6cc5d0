"""Row 8: the ask -> answer round trip to a busy recipient (bench/README.md).

A busy recipient is a session between tool calls: its PostToolUse drain runs back to back
(no model time in between), and the drain that shows the question is followed at once by
`reply <id>`, as the model would run it. Measured: from spawning `ask` to its answer's first
line on the asker's stdout (median and p90), beside a plain `send` to the same worktree."""

import re
import subprocess
import threading
import time
import uuid

from fixtures import payload
from harness import ROWS, Row, fail, guarded, log

QID = re.compile(rb"git korus-mail reply (\S+) -- ")


def _drain(world, env, cwd, event, session, extra=b""):
    return subprocess.run([world.tool, "drain"], cwd=str(cwd), env=env, input=payload(event, session, cwd),
                          capture_output=True).stdout


def _round(world, env, main, web, session, n, stages=None):
    # the recipient is at work (a prompt began its turn): ask waits only where a session can answer
    # soon (core/ask.py, nobody_to_answer); a session idle since its Stop would make ask return at once
    _drain(world, env, web, "UserPromptSubmit", session)
    t0 = time.time()
    ask = subprocess.Popen([world.tool, "ask", f"--to={web}", "--timeout=60", "--", f"bench: ready ({n})?"], cwd=str(main),
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # the answer's first line is timed when it reaches the pipe, not after `reply` exits: ask
    # prints it as soon as the answer record is there, while `reply` still publishes its mail
    # (a reader thread in the bench only; the product is never tested with threads)
    got = {}

    def read_first():
        got["line"] = ask.stdout.readline()
        got["at"] = time.time()
    reader = threading.Thread(target=read_first, daemon=True)
    reader.start()
    qid = None
    for _ in range(2000):  # the recipient's tool calls, back to back
        m = QID.search(_drain(world, env, web, "PostToolUse", session).replace(b"\\\"", b"\""))
        if m:
            qid = m.group(1).decode()
            t_shown = time.time()
            break
    if qid is None:
        ask.kill()
        raise RuntimeError("the question was never shown")
    t_reply = time.time()
    subprocess.run([world.tool, "reply", qid, "--", "yes"], cwd=str(web), env=env, capture_output=True, check=True)
    t_replied = time.time()
    reader.join(60)
    first, t1 = got.get("line", b""), got.get("at", time.time())
    rest, err = ask.communicate(timeout=60)
    if ask.returncode != 0 or not first.startswith(b"status answered"):
        raise RuntimeError(f"ask said {first!r} {rest[:200]!r} {err[:200]!r} (exit {ask.returncode})")
    _drain(world, env, web, "Stop", session)  # the recipient's run ends: the question is consumed
    if stages is not None:
        from git_korus_mail.store.message import id_time
        built = id_time(qid)
        for into, dt in zip(stages, (built - t0, t_shown - built, t1 - t_reply, t_replied - t_reply)):
            into.append(dt)
    return t1 - t0


STAGES = ["ask spawned → question built (ask's start)", "built → a drain has shown it (drains back to back)",
          "`reply` spawned → the answer on ask's stdout", "`reply`'s whole process (for comparison)"]


@guarded("8. ask round trip")
def bench_ask(world, conds, prof):
    common, paths = world.clone("ask", ["web"])
    main, web = paths["main"], paths["web"]
    for name, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
        world.git("config", f"korus-mail.{name}", value, cwd=main)  # the round trip is measured, not the limits
    session = f"bench-ask-{uuid.uuid4().hex[:8]}"
    rounds = max(3, prof["runs_send"] // 3)
    for cname, env in conds:
        env = dict(env, CLAUDE_PID=str(__import__("os").getpid()))  # the drains' launch: this process
        log(f"8. ask -> answer round trip [{cname}], {rounds} rounds")
        _drain(world, env, web, "SessionStart", session)
        trips, sends = [], []
        stages = [[] for _ in STAGES]
        for i in range(rounds + 2):
            t = _round(world, env, main, web, session, f"{cname} {i}", stages if i >= 2 else None)
            s0 = time.perf_counter()
            out = subprocess.run([world.tool, "send", f"--to={web}", "--", f"bench note {cname} {i}"], cwd=str(main), env=env,
                                 capture_output=True)
            s = time.perf_counter() - s0
            _drain(world, env, web, "PostToolUse", session)
            _drain(world, env, web, "Stop", session)
            if out.returncode != 0:
                fail("8. ask round trip", f"send failed: {out.stderr[:200]!r}")
                return
            if i >= 2:  # two warm-up rounds
                trips.append(t)
                sends.append(s)
        from harness import median
        split = "; ".join(f"{name} {median(xs) * 1000:.0f} ms" for name, xs in zip(STAGES, stages))
        ROWS.append(Row("8", "ask → answer on stdout, busy recipient (drains back to back, reply at once)",
                        "`send --to <worktree>`", cname, trips, sends, note=f"medians: {split}"))
