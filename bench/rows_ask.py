"""Row 8: the ask -> answer round trip to a busy recipient (bench/README.md).

A busy recipient is a session between tool calls: its PostToolUse drain runs back to back
(no model time in between), and the drain that shows the question is followed at once by
`reply <id>`, as the model would run it. Measured: from spawning `ask` to its answer's first
line on the asker's stdout (median and p90), beside a plain `send` to the same worktree.

The recipient's hooks run two ways, round by round: `drain` started directly (every tool call
starts Python), and the installed Claude Code stub run as Claude Code runs it (`/bin/sh -c
"'<stub>' <Event>"` with the session and the launch in its environment), whose fast path answers
a tool call with nothing new without Python, as every user's hooks do. With run.py's `--base`,
the same rounds of that commit's package and script run interleaved with this tree's (VARIANTS)."""

import os
import re
import subprocess
import threading
import time
import uuid

from fixtures import payload
from harness import ROWS, Row, fail, guarded, log

QID = re.compile(rb"git korus-mail reply (\S+) -- ")

# (label, the git-korus-mail script, extra environment): run.py adds the base commit's with --base
VARIANTS = []
MODES = ("python drains", "the stub")


class Recipient:
    """How the recipient's hook events run: `drain` directly, or the installed stub."""

    def __init__(self, tool, mode, stub=None):
        self.tool, self.mode, self.stub = tool, mode, stub

    def __call__(self, world, env, cwd, event, session):
        if self.stub is None:
            return subprocess.run([self.tool, "drain"], cwd=str(cwd), env=env, input=payload(event, session, cwd),
                                  capture_output=True).stdout
        from git_korus_mail.clients.claude import settings as claude
        env = dict(env, CLAUDE_CODE_SESSION_ID=session)  # Claude Code names the session in every hook's environment
        return subprocess.run(["/bin/sh", "-c", claude.hook_command(self.stub, event)], cwd=str(cwd), env=env,
                              input=payload(event, session, cwd), capture_output=True).stdout


def _round(world, env, main, web, session, n, stages=None, _drain=None, tool=None):
    # the recipient is at work (a prompt began its turn): ask waits only where a session can answer
    # soon (core/ask.py, nobody_to_answer); a session idle since its Stop would make ask return at once
    _drain(world, env, web, "UserPromptSubmit", session)
    t0 = time.time()
    ask = subprocess.Popen([tool, "ask", f"--to={web}", "--timeout=60", "--", f"bench: ready ({n})?"], cwd=str(main),
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
    subprocess.run([tool, "reply", qid, "--", "yes"], cwd=str(web), env=env, capture_output=True, check=True)
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
    variants = VARIANTS or [("this tree", world.tool, {})]
    rounds = max(3, prof["runs_send"] // 3)
    for cname, cenv in conds:
        setups = []
        for label, tool, extra in variants:
            env = dict(cenv, CLAUDE_PID=str(os.getpid()), **extra)  # the drains' launch: this process
            common, paths = world.clone(f"ask-{len(setups)}-{cname}", ["web"])
            main, web = paths["main"], paths["web"]
            for name, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
                world.git("config", f"korus-mail.{name}", value, cwd=main)  # the round trip is measured, not the limits
            done = subprocess.run([tool, "install"], cwd=str(main), env=env, capture_output=True, text=True)
            if done.returncode != 0:
                fail("8. ask round trip", f"install [{label}]: {done.stderr[:300]}")
                return
            stub = str(common / "mail" / "hooks" / "claude-hook")
            for mode in MODES:
                session = f"bench-ask-{len(setups)}-{uuid.uuid4().hex[:8]}"
                recipient = Recipient(tool, mode, stub if mode == "the stub" else None)
                recipient(world, env, web, "SessionStart", session)
                setups.append((label, mode, tool, env, main, web, session, recipient,
                               {"trips": [], "sends": [], "stages": [[] for _ in STAGES]}))
        log(f"8. ask -> answer round trip [{cname}], {rounds} rounds of {len(setups)} interleaved")
        for i in range(rounds + 2):
            for _label, _mode, tool, env, main, web, session, recipient, got in setups:
                t = _round(world, env, main, web, session, f"{cname} {i}", got["stages"] if i >= 2 else None,
                           _drain=recipient, tool=tool)
                s0 = time.perf_counter()
                out = subprocess.run([tool, "send", f"--to={web}", "--", f"bench note {cname} {i}"], cwd=str(main),
                                     env=env, capture_output=True)
                s = time.perf_counter() - s0
                recipient(world, env, web, "PostToolUse", session)
                recipient(world, env, web, "Stop", session)
                if out.returncode != 0:
                    fail("8. ask round trip", f"send failed: {out.stderr[:200]!r}")
                    return
                if i >= 2:  # two warm-up rounds
                    got["trips"].append(t)
                    got["sends"].append(s)
        from harness import median
        for label, mode, _tool, _env, _main, _web, _session, _recipient, got in setups:
            split = "; ".join(f"{name} {median(xs) * 1000:.0f} ms" for name, xs in zip(STAGES, got["stages"]))
            who = f"{cname}, {label}, {mode}" if VARIANTS else f"{cname}, {mode}"
            ROWS.append(Row("8", "ask → answer on stdout, busy recipient (hooks back to back, reply at once)",
                            "`send --to <worktree>`", who, got["trips"], got["sends"], note=f"medians: {split}"))
