"""git korus-mail benchmarks: one command, one table.

    .venv/bin/python bench/run.py            # full run, writes bench/RESULTS.md
    .venv/bin/python bench/run.py --quick    # smoke run, few repetitions, prints only
    .venv/bin/python bench/run.py --check    # every benchmark for ~2 iterations; exit 1 if one failed to run

Every measure is whole-process wall time of a real process against real git
repositories (git init + linked worktrees) in a temp dir, warmed up, then timed
many times alternating with its baseline (A B A B ...) in the same run, and
reported as median / p90 and as the ratio of the medians: these machines are
noisy, a ratio from one interleaved run is what survives the noise.

The baseline interpreter is the one that runs the tool: the interpreter named by
the console script's shebang (the venv's python), never a `python3` found on PATH
(a version-manager shim there costs ~100 ms, and a base interpreter's
site-packages may carry .pth files that import at every start).

See bench/README.md for what each row means.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # this process imports the package and bench/; leave no .pyc in the repository

from fixtures import SCRUB, World  # noqa: E402 - after the line above
from harness import FAILURES, REPO, log, tool_paths  # noqa: E402
from importprofile import bench_imports  # noqa: E402
from report import machine, render  # noqa: E402
from rows_ask import bench_ask  # noqa: E402
from fastrow import bench_fast  # noqa: E402
from rows import (bench_breakdown, bench_claims, bench_empty, bench_list, bench_queued,  # noqa: E402
                  bench_send, bench_stub)

PROFILES = {
    #           warm-up, runs (drain/pairs), runs (send), runs (list/status), importtime runs, claim rounds
    "full":  dict(warmup=10, runs=200, runs_send=100, runs_queued=100, runs_list=15, runs_import=25, rounds=2000,
                  queued=(1000, 10000), list_worktrees=50, list_messages=10000),
    "quick": dict(warmup=3, runs=20, runs_send=10, runs_queued=15, runs_list=3, runs_import=5, rounds=100,
                  queued=(1000, 10000), list_worktrees=50, list_messages=10000),
    "check": dict(warmup=1, runs=2, runs_send=2, runs_queued=2, runs_list=1, runs_import=1, rounds=3,
                  queued=(20, 200), list_worktrees=5, list_messages=200),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="smoke run: few repetitions; prints, writes nothing")
    g.add_argument("--check", action="store_true",
                   help="run every benchmark for ~2 iterations on small data; exit 1 if any failed to run")
    ap.add_argument("--out", help="write the Markdown here (default: bench/RESULTS.md for a full run only)")
    ap.add_argument("--bytecode", choices=("auto", "cached", "as-is", "both"), default="auto",
                    help="interpreter condition(s) for rows 1-3 and 6: 'cached' (bytecode cached, as installed), "
                         "'as-is' (environment as inherited); auto = both when PYTHONDONTWRITEBYTECODE is set "
                         "(the inherited environment may then compile the package at every start), else cached")
    ap.add_argument("--only", help="comma-separated benchmark numbers to run (e.g. 1,6)")
    ap.add_argument("--tmp", help="base directory for the temp repos (its filesystem matters)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--base", help="row 8: also run this commit's package and script, interleaved (git archive)")
    args = ap.parse_args(argv)
    mode = "quick" if args.quick else "check" if args.check else "full"
    prof = PROFILES[mode]
    only = set(args.only.split(",")) if args.only else {"1", "2", "3", "4", "5", "6", "7", "8", "9"}

    for var in SCRUB:  # our own process too: fill_box uses the product's discovery
        os.environ.pop(var, None)
    tool, py = tool_paths()
    started = time.time()
    base = Path(tempfile.mkdtemp(prefix="korus-bench-", dir=args.tmp)).resolve()
    world = World(base, tool, py)
    choice = args.bytecode
    if choice == "auto":
        choice = "both" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "cached"
    conds = []
    if choice in ("cached", "both"):
        conds.append(("cached", world.env_cached))
    if choice in ("as-is", "both"):
        conds.append(("as-is", world.env_inherited))
    log(f"profile {mode}; temp dir {base}; tool {tool}; interpreter {py}; conditions {[c for c, _ in conds]}")
    mach = machine(world, base)
    if args.base:
        import rows_ask
        rows_ask.VARIANTS[:] = [("this tree", tool, {}), export_base(args.base, base / "base-export", py)]
    try:
        if "1" in only:
            bench_empty(world, conds, prof)
        if "2" in only:
            bench_queued(world, conds, prof)
        if "3" in only:
            bench_send(world, conds, prof)
        if "4" in only:
            bench_claims(world, prof)
        if "5" in only:
            bench_list(world, conds[0], prof)
        if "6" in only:
            bench_breakdown(world, conds, prof)
            bench_imports(world, conds, prof)
        if "7" in only:
            bench_stub(world, conds, prof)
        if "8" in only:
            bench_ask(world, conds, prof)
        if "9" in only:
            bench_fast(world, conds, prof)
    finally:
        if args.keep:
            log(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    text = render(mode, world, base, conds, mach, started, time.time() - started)
    sys.stdout.write(text)
    out = args.out or (str(REPO / "bench" / "RESULTS.md") if mode == "full" and not args.only else None)
    if out:
        Path(out).write_text(text)
        log(f"wrote {out}")
    if FAILURES:
        log(f"{len(FAILURES)} failure(s)")
        return 1
    return 0


def export_base(commit, into, py):
    """(label, script, environment) of `commit`: its package, hook template and script exported
    with git archive, the script's #! pointed at this venv's interpreter, the package first on
    PYTHONPATH (the same interpreter and libraries as this tree's)."""
    import subprocess
    into.mkdir()
    archive = subprocess.run(["git", "archive", commit, "git_korus_mail", "hooks", "scripts/git-korus-mail"],
                             cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    script = into / "scripts" / "git-korus-mail"
    lines = script.read_text().split("\n")
    script.write_text("\n".join([f"#!{py}"] + lines[1:]))
    script.chmod(0o755)
    rev = subprocess.run(["git", "rev-parse", "--short", commit], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.strip()
    return f"base {rev}", str(script), {"PYTHONPATH": str(into)}


if __name__ == "__main__":
    sys.exit(main())
