"""Claude Code's own reported hook times for whole turns (its debug log: `Hooks: <Event>...
finished with status 0 (<n>ms)`): UserPromptSubmit + N PostToolUse + Stop, for the installed
stub, the stub whose fast path answers tool calls only (the template before issue 26's turn
shortcut: `fast_events` of PostToolUse alone), and a no-op sh hook. The real CLI, offline against
tests/e2e's mock API, one live stream-json session per configuration and round, alternating.

    export KORUS_E2E_CLAUDE=$(bash tests/e2e/install-claude.sh)
    .venv/bin/python bench/claude_turn.py [--rounds 3] [--turns 6] [--calls 4]

Each session runs `--turns` prompts in a worktree that never got mail, each making `--calls` Bash
tool calls; the first turn is left out (a launch's first prompt runs the drain, which stamps it).
Prints the median of each event's reported times and of each turn's sum, and the ratios of the
turn medians against the no-op hook (issue 26's goal: the stub's turn at most 1.2x).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))
import hermetic  # noqa: E402
from driver import Claude  # noqa: E402
from mockapi import MockAPI, bash, text  # noqa: E402

EVENTS = ("UserPromptSubmit", "PostToolUse", "Stop")
REPORTED = re.compile(r"Hooks: (UserPromptSubmit|PostToolUse|Stop)\S* \[(.*?)\] finished with status 0 \((\d+)ms\)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--calls", type=int, default=4)
    args = ap.parse_args(argv)
    claude_bin = os.environ.get("KORUS_E2E_CLAUDE")
    if not claude_bin:
        raise SystemExit("set KORUS_E2E_CLAUDE (bash tests/e2e/install-claude.sh prints it)")
    tool = str(Path(sys.prefix) / "bin" / "git-korus-mail")
    from git_korus_mail.clients.claude import settings as claude
    from git_korus_mail.clients.claude import stub as claude_stub
    base = Path(tempfile.mkdtemp(prefix="korus-claude-turn-")).resolve()
    home = base / "home"
    home.mkdir()
    hermetic.write_gitconfig(home)
    env = {k: v for k, v in os.environ.items() if k not in hermetic.SCRUB}
    env.update(hermetic.hermetic_env(home, "Bench", "bench@example.invalid"))
    env.pop("CLAUDE_PID", None)
    os.environ.clear()
    os.environ.update(env)

    def git(*a, cwd):
        subprocess.run(["git", *a], cwd=cwd, check=True, capture_output=True)
    main_wt = base / "api"
    main_wt.mkdir()
    hermetic.init_repo(main_wt, git)
    hooks = main_wt / ".git" / "mail" / "hooks"
    hooks.mkdir(parents=True)
    stub = hooks / "claude-hook"
    stub.write_text(claude_stub.render_stub(tool))
    tools_only = hooks / "claude-hook-tools-only"
    tools_only.write_text(re.sub(r"\nfast_events='[^']*'\n", "\nfast_events='PostToolUse'\n", stub.read_text(), count=1))
    noop = hooks / "noop-hook"
    noop.write_text("#!/bin/sh\nexit 0\n")
    for p in (stub, tools_only, noop):
        p.chmod(0o700)
    assert "fast_events='PostToolUse UserPromptSubmit Stop'" in stub.read_text()
    configs = {"stub": stub, "tools-only": tools_only, "noop": noop}
    per_event = {name: {ev: [] for ev in EVENTS} for name in configs}
    turns = {name: [] for name in configs}
    config_dir = base / "claude-config"
    for r in range(args.rounds):
        for name, hook in configs.items():
            # SessionStart runs the installed stub in all of them (the launch is opened as it would be)
            cmd = {ev: claude.hook_command(str(hook), ev) for ev in ("UserPromptSubmit", "Stop")}
            cmd["SessionStart"] = claude.hook_command(str(stub), "SessionStart")
            settings = {"hooks": {ev: [{"hooks": [{"type": "command", "command": c}]}] for ev, c in cmd.items()}}
            settings["hooks"]["PostToolUse"] = [{"matcher": "*", "hooks": [
                {"type": "command", "command": claude.hook_command(str(hook), "PostToolUse")}]}]
            wt = hermetic.add_worktree(main_wt, base / f"wt-{name}-{r}", f"wt-{name}-{r}", git)
            (wt / ".claude").mkdir(exist_ok=True)
            (wt / ".claude" / "settings.local.json").write_text(json.dumps(settings))
            debug = base / f"debug-{name}-{r}.txt"
            script = []
            for _ in range(args.turns):
                script += [bash("true") for _ in range(args.calls)] + [text("done")]
            with MockAPI(script) as api:
                with Claude(claude_bin, api, config_dir=config_dir, skip_permissions=True).stream(
                        cwd=wt, args=["--debug-file", str(debug)]) as s:
                    for _ in range(args.turns):
                        s.send("go")
                        s.read_result()
            got = [(ev, int(ms)) for ev, c, ms in REPORTED.findall(debug.read_text()) if str(hook) in c]
            # turns: from one UserPromptSubmit to the next; the first left out
            cur = None
            seen = 0
            for ev, ms in got:
                if ev == "UserPromptSubmit":
                    seen += 1
                    if cur is not None and seen > 2:
                        turns[name].append(cur)
                    cur = 0
                if seen >= 2:
                    per_event[name][ev].append(ms)
                if cur is not None:
                    cur += ms
            if cur is not None and seen >= 2:
                turns[name].append(cur)
            if seen != args.turns:
                raise SystemExit(f"{name}: {seen} UserPromptSubmit reports, expected {args.turns}")
    ver = subprocess.run([claude_bin, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"Claude Code {ver}, {args.rounds} rounds x {args.turns} turns (first left out) x {args.calls} tool calls")
    med = {}
    for name in configs:
        parts = ", ".join(f"{ev} {statistics.median(per_event[name][ev]):.0f}" for ev in EVENTS)
        med[name] = statistics.median(turns[name])
        print(f"  {name:10s}: turn median {med[name]:.0f} ms (n={len(turns[name])}); per event medians: {parts} ms")
    print(f"  ratios of the turn medians: stub/noop {med['stub'] / med['noop']:.2f}x, "
          f"tools-only/noop {med['tools-only'] / med['noop']:.2f}x, stub/tools-only {med['stub'] / med['tools-only']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
