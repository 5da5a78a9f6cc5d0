"""Claude Code's own reported PostToolUse hook times (its debug log: `Hooks: PostToolUse:Bash
[<command>] finished with status 0 (<n>ms)`), for the stub before its fast path, the stub with
it, and a no-op sh hook: the real CLI, offline against tests/e2e's mock API, runs alternating.

    export KORUS_E2E_CLAUDE=$(bash tests/e2e/install-claude.sh)
    .venv/bin/python bench/claude_hooks.py [--rounds 3] [--calls 12]

Each run is one `claude -p` session making `--calls` Bash tool calls in a worktree of a real
clone; only the PostToolUse hook differs between the three (SessionStart, UserPromptSubmit and
Stop run the installed stub in all of them, so the launch is stamped as it would be). Prints
the median, p90 and count of the reported times for each, and the ratios of the medians.

`--fresh`: each run in a new worktree that never got mail (its box has no inbox/; docs/HOOKS.md,
"A box without an inbox"), where "before" is what every such tool call cost until then.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))
import hermetic  # noqa: E402
from driver import Claude  # noqa: E402
from mockapi import MockAPI, bash, text  # noqa: E402

FAST_BLOCK = re.compile(r"\n# The fast path \(docs/HOOKS.md.*?\n    esac\nfi\n", re.S)
REPORTED = re.compile(r"Hooks: PostToolUse:Bash \[(.*?)\] finished with status 0 \((\d+)ms\)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=12)
    ap.add_argument("--fresh", action="store_true", help="each run in a new worktree that never got mail")
    args = ap.parse_args(argv)
    claude_bin = os.environ.get("KORUS_E2E_CLAUDE")
    if not claude_bin:
        raise SystemExit("set KORUS_E2E_CLAUDE (bash tests/e2e/install-claude.sh prints it)")
    tool = str(Path(sys.prefix) / "bin" / "git-korus-mail")
    from git_korus_mail.clients.claude import settings as claude
    from git_korus_mail.clients.claude import stub as claude_stub
    from git_korus_mail.core import keys
    base = Path(tempfile.mkdtemp(prefix="korus-claude-hooks-")).resolve()
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
    web = hermetic.add_worktree(main_wt, base / "web", "web", git)
    common = main_wt / ".git"
    hooks = common / "mail" / "hooks"
    hooks.mkdir(parents=True)
    after = hooks / "claude-hook"
    after.write_text(claude_stub.render_stub(tool))
    before = hooks / "claude-hook-before"
    before.write_text(FAST_BLOCK.sub("\n", after.read_text(), count=1))
    noop = hooks / "noop-hook"
    noop.write_text("#!/bin/sh\nexit 0\n")
    for p in (after, before, noop):
        p.chmod(0o700)
    assert "fast/" not in before.read_text() and "fast/" in after.read_text()
    subprocess.run([tool, "send", "--to", str(web), "--", "mail to show first"], cwd=main_wt, check=True,
                   capture_output=True, env=env)
    inbox = common / "mail" / "box" / keys.key_for(str(web)).name / "inbox"
    configs = {"before": before, "after": after, "noop": noop}
    times = {name: [] for name in configs}
    config_dir = base / "claude-config"
    for r in range(args.rounds):
        for name, ptu in configs.items():
            cmd = {ev: claude.hook_command(str(after), ev) for ev in ("SessionStart", "UserPromptSubmit", "Stop")}
            settings = {"hooks": {ev: [{"hooks": [{"type": "command", "command": c}]}] for ev, c in cmd.items()}}
            settings["hooks"]["PostToolUse"] = [{"matcher": "*", "hooks": [
                {"type": "command", "command": claude.hook_command(str(ptu), "PostToolUse")}]}]
            wt = web
            if args.fresh:
                wt = hermetic.add_worktree(main_wt, base / f"fresh-{name}-{r}", f"fresh-{name}-{r}", git)
            (wt / ".claude").mkdir(exist_ok=True)
            (wt / ".claude" / "settings.local.json").write_text(json.dumps(settings))
            then = time.time_ns() - 10 * 1_000_000_000
            os.utime(inbox, ns=(then, then))  # its last change (the last run's Stop) is old: stamps at once
            debug = base / f"debug-{name}-{r}.txt"
            script = [bash("true") for _ in range(args.calls)] + [text("done")]
            with MockAPI(script) as api:
                run = Claude(claude_bin, api, config_dir=config_dir, skip_permissions=True).run(
                    "go", cwd=wt, args=["--debug-file", str(debug)])
            if run.rc != 0:
                raise SystemExit(f"claude -p failed ({name}): {run.describe()}")
            got = [int(ms) for c, ms in REPORTED.findall(debug.read_text()) if str(ptu) in c]
            if len(got) != args.calls:
                raise SystemExit(f"{name}: {len(got)} PostToolUse reports, expected {args.calls}")
            times[name] += got
    print(f"Claude Code {subprocess.run([claude_bin, '--version'], capture_output=True, text=True).stdout.strip()}, "
          f"{args.rounds} rounds x {args.calls} tool calls" + (", each run in a worktree that never got mail"
                                                                if args.fresh else ""))
    med = {}
    for name, xs in times.items():
        xs.sort()
        med[name] = statistics.median(xs)
        print(f"  PostToolUse {name:6s}: median {med[name]:.0f} ms, p90 {xs[int(0.9 * (len(xs) - 1))]} ms, n={len(xs)}")
    print(f"  ratios of the medians: before/noop {med['before'] / med['noop']:.2f}x, "
          f"after/noop {med['after'] / med['noop']:.2f}x, after/before {med['after'] / med['before']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
