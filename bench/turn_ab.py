"""Paired A/B of a whole turn with nothing new through the hook stub: UserPromptSubmit, `--calls`
PostToolUse and Stop, each run as Claude Code runs a hook (`/bin/sh -c "'<stub>' <Event>"`),
for this tree's stub, an older commit's, and a no-op sh hook.

    .venv/bin/python bench/turn_ab.py --base 1fdb03b --runs 60 [--calls 4]

Every round runs one turn of each, alternating; a turn's wall and CPU time is the sum of its
events' (CPU: user + system of each process and its children, from wait4). The table gives the
medians and the median of each round's own ratio. Two worktrees: one whose inbox exists (mail
came and was consumed) and one that never got mail (no inbox/). Each stub has a session of its
own, warmed up by two turns and a pause (MARGIN), so what is timed is the steady state of a
session whose turns bring nothing new (docs/HOOKS.md, "A turn with nothing new").
"""

import argparse
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
from stub_ab import _base_stub, install_hooks, paired_times, run, summed_turn, table_cells  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the commit whose stub template is the baseline")
    ap.add_argument("--runs", type=int, default=60, help="rounds per scenario (default 60)")
    ap.add_argument("--calls", type=int, default=4, help="tool calls per turn (default 4)")
    ap.add_argument("--shell", default="/bin/sh")
    args = ap.parse_args(argv)
    tool, py = tool_paths()
    from git_korus_mail.clients.claude import stub as claude_stub
    from git_korus_mail.wiring import stub as wiring_stub
    from git_korus_mail.wiring.hookdoc import hook_command
    tmp = Path(tempfile.mkdtemp(prefix="korus-turn-ab-"))
    try:
        world = fixtures.World(tmp, tool, py)
        common, paths = world.clone("ab", ["web", "api"])
        # the base template with the values its commit gave it: its fast path answers tool calls only
        base_text = _base_stub(args.base, tmp, tool, claude_stub, wiring_stub)
        new, old, noop = install_hooks(
            tmp, common, "claude-hook", claude_stub.render_stub(tool), "claude-hook-base",
            re.sub(r"\nfast_events='[^']*'\n", "\nfast_events='PostToolUse'\n", base_text, count=1))
        env = dict(world.env_cached, CLAUDE_PID=str(os.getpid()))
        subprocess.run([tool, "send", "--to", str(paths["web"]), "--", "one message"], cwd=paths["main"], env=env,
                       check=True, capture_output=True)
        events = ["UserPromptSubmit"] + ["PostToolUse"] * args.calls + ["Stop"]

        def event(stub, wt, session, ev):
            w, c, status, out = run([args.shell, "-c", hook_command(str(stub), ev)], wt,
                                    dict(env, CLAUDE_CODE_SESSION_ID=session), fixtures.payload(ev, session, wt))
            if status != 0:
                raise SystemExit(f"{stub.name} {ev}: exit status {status}")
            return (w, c), out.strip()

        def turn(stub, wt, session):
            """(wall ms, CPU ms) of one turn; what each event said (the drain's answers)."""
            return summed_turn(event, stub, wt, session, events)

        print(f"base {args.base}, shell {args.shell}, {args.runs} rounds per scenario, interleaved; a turn: "
              f"UserPromptSubmit + {args.calls} PostToolUse + Stop, ms summed over its events, median (wall / CPU); "
              f"ratios: median of each round's own ratio (wall / CPU)", flush=True)
        print("| scenario | new stub | base stub | no-op hook | new÷no-op | base÷no-op | new÷base |")
        print("|---|---|---|---|---|---|---|")
        for name, wt in (("inbox (mail came, consumed)", paths["web"]), ("no inbox (never got mail)", paths["api"])):
            cmds = {"new": (new, f"new-{wt.name}"), "base": (old, f"base-{wt.name}"), "noop": (noop, f"noop-{wt.name}")}
            for _ in range(2):
                for stub, session in cmds.values():
                    turn(stub, wt, session)
            time.sleep(3)  # past MARGIN since the last consume: the next prompt stamps
            for stub, session in cmds.values():
                turn(stub, wt, session)
            times = paired_times(cmds, args.runs, turn, wt, name)
            cells = table_cells(times, (("new", "noop"), ("base", "noop"), ("new", "base")))
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
