"""Row 6, continued: which modules each drain imports, and what they cost (`-X importtime`)."""

import re
import subprocess
import uuid

from fixtures import fill_box, forget_session, payload
from harness import EXTRA, Failure, fail, guarded, log, median
from rows import FORBIDDEN

IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)\s*$")


def parse_importtime(text):
    """[(module, self_us, cumulative_us, level)] in import order."""
    out = []
    for line in text.splitlines():
        m = IMPORT_LINE.match(line)
        if m:
            out.append((m.group(4), int(m.group(1)), int(m.group(2)), len(m.group(3)) // 2))
    return out


def import_profile(world, env, argv, cwd, stdin_for, runs, after=None):
    """Median self / cumulative µs per module over `runs` runs of `python -X importtime ...`."""
    selfs, cums, levels, order = {}, {}, {}, []
    for i in range(runs):
        p = subprocess.run([world.py, "-X", "importtime", *argv], input=stdin_for(i), capture_output=True,
                           cwd=cwd, env=env)
        if p.returncode != 0:
            raise Failure(f"importtime run exit {p.returncode}: {p.stderr.decode()[-300:]}")
        if after is not None:
            after(i)
        for name, s, c, lvl in parse_importtime(p.stderr.decode("utf-8", "replace")):
            if name not in selfs:
                order.append(name)
                selfs[name], cums[name] = [], []
            selfs[name].append(s)
            cums[name].append(c)
            levels[name] = lvl
    return [(n, median(selfs[n]), median(cums[n]), levels[n], len(selfs[n])) for n in order]


@guarded("6. import profile")
def bench_imports(world, conds, prof):
    from git_korus_mail.core import keys
    common, paths = world.clone("imports", ["web", "full"])
    web, full = paths["web"], paths["full"]
    full_key = keys.key_for(str(full)).name
    fill_box(common, full, 1000, paths["main"])
    runs = prof["runs_import"]
    result = {}
    for cname, env in conds:
        log(f"6. import profile [{cname}]")
        # warm the bytecode cache (if any) first, so the profile is of a steady state
        for _ in range(2):
            subprocess.run([world.tool, "drain"], input=payload("UserPromptSubmit", "bench-imp", web),
                           capture_output=True, cwd=web, env=env)
            subprocess.run([world.tool, "drain"], input=payload("UserPromptSubmit", "bench-imp-warm", full),
                           capture_output=True, cwd=full, env=env)
            forget_session(common, full_key, "bench-imp-warm")
        empty = import_profile(world, env, [world.tool, "drain"], web,
                               lambda i: payload("UserPromptSubmit", "bench-imp", web), runs)
        sessions = {}

        def fresh(i, sessions=sessions):
            sessions["s"] = f"bench-impq-{uuid.uuid4().hex}"
            return payload("UserPromptSubmit", sessions["s"], full)

        queued = import_profile(world, env, [world.tool, "drain"], full, fresh, runs,
                                after=lambda i, sessions=sessions: forget_session(common, full_key, sessions["s"]))
        bare = import_profile(world, env, ["-c", "pass"], web, lambda i: b"", runs)
        result[cname] = {"empty": empty, "queued": queued, "bare": bare}
        names = {n for n, *_ in empty}
        present = [f for f in FORBIDDEN if any(n == f or n.startswith(f + ".") for n in names)]
        if present:
            fail("6. hot path imports", f"empty-box drain imported {', '.join(present)} [{cname}]")
    EXTRA["imports"] = result
