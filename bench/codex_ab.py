"""Paired A/B of Codex's hook events with nothing new through its stub (docs/HOOKS.md, "Codex's
key: the payload's head"), against a no-op sh hook and against the same stub with its fast path
off (every event starts Python, as before issue 26's Codex part).

    .venv/bin/python bench/codex_ab.py --runs 40 [--calls 4] [--output 4096]

Codex runs a hook as its own child with the payload on a pipe, and the drain proves the launch as
the nearest `codex` process holding the session's rollout open (clients/codex/launch.py). So this
bench re-runs itself under a copy of its Python interpreter named `codex`, holds a rollout file
open, and runs each event's hook as its own child (no shell between: its parent is this
`codex`, as under Codex; dash's `sh -c` would stay between and name itself as the launch), writing a compact payload with session_id first, as Codex 0.171.0 writes it, its
PostToolUse carrying `--output` bytes of tool output. Every round runs each hook once, alternating;
wall and CPU (user + system of the process and its children, from wait4); the table gives the
medians and the median of each round's own ratio. Two worktrees: one whose inbox exists (mail
came and was consumed), one that never got mail (no inbox/).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402 - the bench's test world
from harness import tool_paths  # noqa: E402
from stub_ab import install_hooks, paired_times, run, summed_turn, table_cells  # noqa: E402

SESSION = "019a2f00-0000-7000-8000-0000bench{:03d}"


def as_codex():
    """Re-run this script under a copy of the interpreter named `codex` (what launch.py proves)."""
    if os.path.basename(os.path.realpath("/proc/self/exe")) == "codex":
        return
    bindir = Path(tempfile.mkdtemp(prefix="korus-codex-ab-bin-"))
    codex = bindir / "codex"
    shutil.copy(os.path.realpath(sys.executable), codex)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), KORUS_CODEX_AB_BIN=str(bindir))
    os.execve(str(codex), [str(codex), os.path.abspath(__file__)] + sys.argv[1:], env)


def payload(event, session, cwd, transcript, output):
    p = {"session_id": session, "turn_id": "t1", "transcript_path": str(transcript), "cwd": str(cwd),
         "hook_event_name": event, "model": "m", "permission_mode": "default"}
    if event == "UserPromptSubmit":
        p["prompt"] = "go on"
    if event == "PostToolUse":
        p.update(tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="c1", tool_response="x" * output)
    if event == "Stop":
        p.update(stop_hook_active=False, last_assistant_message="done")
    return json.dumps(p, separators=(",", ":")).encode() + b"\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40, help="rounds per scenario (default 40)")
    ap.add_argument("--calls", type=int, default=4, help="tool calls per turn (default 4)")
    ap.add_argument("--output", type=int, default=4096, help="bytes of tool output in a PostToolUse payload")
    args = ap.parse_args(argv)
    if "KORUS_CODEX_AB_TOOL" not in os.environ:
        os.environ["KORUS_CODEX_AB_TOOL"], os.environ["KORUS_CODEX_AB_PY"] = tool_paths()  # the venv's
    as_codex()
    tool, py = os.environ["KORUS_CODEX_AB_TOOL"], os.environ["KORUS_CODEX_AB_PY"]
    from git_korus_mail.clients.codex import stub as codex_stub
    tmp = Path(tempfile.mkdtemp(prefix="korus-codex-ab-"))
    try:
        world = fixtures.World(tmp, tool, py)
        common, paths = world.clone("ab", ["web", "api"])
        text = codex_stub.render_stub(tool)
        # codex-hook-python: the same template, no fast-path events: every event runs the drain
        new, off, noop = install_hooks(tmp, common, "codex-hook", text, "codex-hook-python",
                                       re.sub(r"\nfast_events='[^']*'\n", "\nfast_events=''\n", text, count=1))
        env = {k: v for k, v in world.env_cached.items() if not k.startswith(("CLAUDE", "CODEX"))}
        subprocess.run([tool, "send", "--to", str(paths["web"]), "--", "one message"], cwd=paths["main"], env=env,
                       check=True, capture_output=True)
        held = []

        def event(stub, wt, session, ev):
            transcript = tmp / f"rollout-{session}.jsonl"
            if not transcript.exists():
                transcript.write_text("")
                held.append(open(transcript))  # this `codex` holds it open while the session lives
            # the hook as Codex starts it: its own child, no shell between (measured: the stub's
            # parent is `codex`, tests/e2e/test_codex_unread_payload_e2e.py); dash's `sh -c` would
            # stay between as the parent, and its pid would then be the key's launch
            w, c, status, out = run([str(stub), ev], wt, env,
                                    payload(ev, session, wt, transcript, args.output))
            if status != 0:
                raise SystemExit(f"{stub.name} {ev}: exit status {status}")
            return (w, c), out.strip()

        def turn(stub, wt, session):
            return summed_turn(event, stub, wt, session, ["UserPromptSubmit"] + ["PostToolUse"] * args.calls + ["Stop"])

        print(f"{args.runs} rounds per scenario, interleaved; PostToolUse payloads carry {args.output} bytes of "
              f"tool output; ms median (wall / CPU); ratios: median of each round's own ratio (wall / CPU); "
              f"a turn: UserPromptSubmit + {args.calls} PostToolUse + Stop, summed", flush=True)
        print("| scenario | codex stub | stub, fast path off | no-op sh hook | stub÷no-op | off÷no-op | stub÷off |")
        print("|---|---|---|---|---|---|---|")
        n = 0
        for name, wt in (("inbox (mail came, consumed)", paths["web"]), ("no inbox (never got mail)", paths["api"])):
            n += 1
            cmds = {"new": (new, SESSION.format(n * 10)), "off": (off, SESSION.format(n * 10 + 1)),
                    "noop": (noop, SESSION.format(n * 10 + 2))}
            for stub, session in cmds.values():
                event(stub, wt, session, "SessionStart")
                turn(stub, wt, session)
            time.sleep(3)  # past MARGIN since the last consume: the next prompt stamps
            for stub, session in cmds.values():
                turn(stub, wt, session)
            if os.environ.get("KORUS_CODEX_AB_DEBUG"):  # which stamps the drain wrote (bench/RESULTS.md: none yet)
                fast = common / "mail" / "fast"
                print(sorted(os.listdir(fast)) if fast.exists() else None, file=sys.stderr)
            for label, one in (("PostToolUse", lambda s, w, x: event(s, w, x, "PostToolUse")),
                               ("a turn", turn)):
                times = paired_times(cmds, args.runs, one, wt, name)
                cells = table_cells(times, (("new", "noop"), ("off", "noop"), ("new", "off")))
                print(f"| {label}, {name} | " + " | ".join(cells) + " |", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if os.environ.get("KORUS_CODEX_AB_BIN"):
            shutil.rmtree(os.environ["KORUS_CODEX_AB_BIN"], ignore_errors=True)


if __name__ == "__main__":
    main()
