"""Paired A/B of the hook stub's fast path between this tree's template and an older commit's.

    .venv/bin/python bench/stub_ab.py --base main --runs 300

Why beside run.py's row 9: a stub's fast path costs a millisecond or two, and wall time on these
shared machines moves by more than the difference being looked for. Here every round runs each
command once, alternating, as Claude Code runs a hook (`/bin/sh -c "'<stub>' PostToolUse"`), and
reads each process's wall time and CPU time (user + system of it and its children, from wait4);
the table gives the medians and the median of each round's own ratio.

Two launches, each with its stamp as the drain writes it (docs/HOOKS.md, "The fast path"):
- **after mail**: a worktree whose inbox holds one message this launch was shown;
- **no inbox**: a worktree that never got mail (its box has no inbox/).
Both stubs are rendered for the same helper into the clone's `<mail>/hooks/`, the base one from
`git show <base>:hooks/hook.sh` (or, before it, `hooks/claude-hook.sh`). Baselines: a no-op sh hook (a script that exits 0) and a
hook whose command is `sh -c true`.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402 - the bench's test world
from harness import REPO, tool_paths  # noqa: E402


def run(argv, cwd, env, stdin):
    """(wall ms, CPU ms, exit status, stdout) of one process and its children."""
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.dup2(r, 0)
            os.dup2(out_w, 1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            for fd in (r, w, out_r, out_w, devnull):
                os.close(fd)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(r)
    os.close(out_w)
    try:
        os.write(w, stdin)
    except BrokenPipeError:
        pass  # the fast path leaves the payload unread
    os.close(w)
    chunks = []
    while True:
        b = os.read(out_r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(out_r)
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, status, b"".join(chunks)


def _med(times, i):
    return statistics.median(t[i] for t in times)


def _ratio(a, b, i):
    """The median of each round's own ratio (a round whose baseline read 0 CPU ms is left out)."""
    return statistics.median(x[i] / y[i] for x, y in zip(a, b) if y[i] > 0)


def table_cells(times, pairs):
    """A table row's cells: each command's medians (wall / CPU, in the order of `times`), then the
    median of each round's own ratio for each (a, b) of `pairs`."""
    cells = [f"{_med(t, 0):.2f} / {_med(t, 1):.2f}" for t in times.values()]
    return cells + [f"{_ratio(times[a], times[b], 0):.2f}× / {_ratio(times[a], times[b], 1):.2f}×" for a, b in pairs]


def summed_turn(event, stub, wt, session, events):
    """One turn through `stub`: each of `events` run by `event(stub, wt, session, ev)`, which gives
    ((wall ms, CPU ms), what the hook said). The turn's (wall, CPU), summed, and what each said."""
    wall = cpu = 0.0
    said = []
    for ev in events:
        (w, c), out = event(stub, wt, session, ev)
        wall, cpu = wall + w, cpu + c
        said.append(out)
    return (wall, cpu), said


def paired_times(cmds, runs, one, wt, what):
    """`runs` rounds, each running `one(stub, wt, session)` once for every (stub, session) of `cmds`
    in turn (interleaved, so a change of load meets all alike): {name: [(wall, CPU), ...]}. Each
    call also returns what its hooks said, which must be nothing (a turn with nothing new)."""
    times = {k: [] for k in cmds}
    for _ in range(runs):
        for k, (stub, session) in cmds.items():
            t, said = one(stub, wt, session)
            if any(said if isinstance(said, list) else [said]):
                raise SystemExit(f"{what}: {k} said {said}")
            times[k].append(t)
    return times


def install_hooks(tmp, common, new_name, new_text, other_name, other_text):
    """The three hooks a paired stub bench times, each mode 0700: this tree's stub and the one it
    is held against (`<common>/mail/hooks/<name>`, where an installed stub lives), and a no-op sh
    hook beside them (in `tmp`)."""
    hooks = common / "mail" / "hooks"
    hooks.mkdir(parents=True)
    new = hooks / new_name
    new.write_text(new_text)
    other = hooks / other_name
    other.write_text(other_text)
    noop = tmp / "noop-hook"
    noop.write_text("#!/bin/sh\nexit 0\n")
    for f in (new, other, noop):
        f.chmod(0o700)
    return new, other, noop


def _base_stub(base, tmp, tool, claude_stub, wiring_stub):
    """Claude Code's stub as the commit `base` wrote it: from the one template (hooks/hook.sh) when
    it has one, else from its own claude-hook.sh, whose @NAME@ slots are filled as that commit did."""
    def show(path):
        proc = subprocess.run(["git", "-C", str(REPO), "show", f"{base}:{path}"], capture_output=True)
        return proc.stdout if proc.returncode == 0 else None
    template = tmp / "hook-base.sh"
    shared = show("hooks/hook.sh")
    if shared is not None:
        template.write_bytes(shared)
        real = wiring_stub.template_path
        wiring_stub.template_path = lambda name: str(template)  # this process only
        try:
            return claude_stub.render_stub(tool)
        finally:
            wiring_stub.template_path = real
    import json
    from git_korus_mail.core import advice
    from git_korus_mail.shell import sh_quote
    python, dirs = wiring_stub.fast_start(tool)
    slots = {"@HELPER@": sh_quote(tool), "@PYTHON@": sh_quote(python), "@PYPATH@": sh_quote(os.pathsep.join(dirs)),
             "@HELPER_JSON@": sh_quote(json.dumps(tool)[1:-1]),
             "@ADVICE_JSON@": sh_quote(json.dumps(advice.advice(tool, None))[1:-1])}
    text = show("hooks/claude-hook.sh").decode("utf-8")
    for slot, value in slots.items():
        text = text.replace(slot, value)
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the commit whose stub template is the baseline")
    ap.add_argument("--runs", type=int, default=200, help="rounds per scenario (default 200)")
    ap.add_argument("--shell", default="/bin/sh", help="the shell Claude Code runs hooks with (default /bin/sh)")
    args = ap.parse_args(argv)
    tool, py = tool_paths()
    from git_korus_mail.clients.claude import stub as claude_stub
    from git_korus_mail.core import keys
    from git_korus_mail.wiring import stub as wiring_stub
    from git_korus_mail.wiring.hookdoc import hook_command
    tmp = Path(tempfile.mkdtemp(prefix="korus-stub-ab-"))
    try:
        world = fixtures.World(tmp, tool, py)
        common, paths = world.clone("ab", ["web", "api"])
        new, old, noop = install_hooks(tmp, common, "claude-hook", claude_stub.render_stub(tool), "claude-hook-base",
                                       _base_stub(args.base, tmp, tool, claude_stub, wiring_stub))
        env = dict(world.env_cached, CLAUDE_PID=str(os.getpid()))

        def hook(stub, event):
            return [args.shell, "-c", hook_command(str(stub), event)]

        web, api = paths["web"], paths["api"]
        subprocess.run([tool, "send", "--to", str(web), "--", "one message"], cwd=paths["main"], env=env,
                       check=True, capture_output=True)
        scenarios = []
        for name, wt, session in (("after mail", web, "ab-mail"), ("no inbox", api, "ab-fresh")):
            e = dict(env, CLAUDE_CODE_SESSION_ID=session)
            subprocess.run(hook(new, "UserPromptSubmit"), input=fixtures.payload("UserPromptSubmit", session, wt),
                           cwd=wt, env=e, check=True, capture_output=True)
            inbox = common / "mail" / "box" / keys.key_for(str(wt)).name / "inbox"
            if inbox.exists():
                then = time.time_ns() - 10 * 1_000_000_000
                os.utime(inbox, ns=(then, then))  # the mail came in a while ago
            pl = fixtures.payload("PostToolUse", session, wt)
            subprocess.run(hook(new, "PostToolUse"), input=pl, cwd=wt, env=e, check=True, capture_output=True)
            if not os.path.lexists(common / "mail" / "fast" / f"{session}@{os.getpid()}"):
                raise SystemExit(f"{name}: the drain wrote no stamp")
            cmds = {"new stub": (hook(new, "PostToolUse"), e), "base stub": (hook(old, "PostToolUse"), e),
                    "no-op hook": (hook(noop, "PostToolUse"), env),
                    "hook `sh -c true`": ([args.shell, "-c", "sh -c true"], env)}
            scenarios.append((name, wt, pl, cmds))
        print(f"base {args.base}, shell {args.shell}, {args.runs} rounds per scenario, interleaved; "
              f"ms, median (wall / CPU); ratios: median of each round's own ratio (wall / CPU)", flush=True)
        print("| scenario | new stub | base stub | no-op hook | hook `sh -c true` | new÷no-op | new÷`sh -c true` "
              "| new÷base |")
        print("|---|---|---|---|---|---|---|---|")
        for name, wt, pl, cmds in scenarios:
            for _ in range(5):
                for argv_, e in cmds.values():
                    run(argv_, wt, e, pl)
            times = {k: [] for k in cmds}
            for _ in range(args.runs):
                for k, (argv_, e) in cmds.items():
                    wall, cpu, status, out = run(argv_, wt, e, pl)
                    if status != 0 or out.strip():
                        raise SystemExit(f"{name}: {k} exited {status} saying {out[:200]!r}")
                    times[k].append((wall, cpu))
            cells = table_cells(times, [("new stub", b) for b in ("no-op hook", "hook `sh -c true`", "base stub")])
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
