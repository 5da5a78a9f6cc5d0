"""Row 9: the hook stub's fast path (docs/HOOKS.md, "The fast path"), as Claude Code runs it:
`/bin/sh -c "'<stub>' PostToolUse"` for a launch whose stamp says nothing is new, paired with
a no-op sh hook and with the same stub when it must start the drain. Then the same in a worktree
that never got mail (its box has no inbox/: the stamp says so), paired with the no-op hook,
`sh -c true`, and the stub starting the drain there (what every such tool call cost before)."""

import os
import subprocess
import time

from fixtures import payload
from harness import ROWS, Cmd, Failure, Row, guarded, interleaved, log


def _quiet(stdout, stderr, i):
    return f"the fast path answered {stdout[:200]!r}" if stdout.strip() else None


@guarded("9. stub fast path")
def bench_fast(world, conds, prof):
    from git_korus_mail.clients.claude import settings as claude
    from git_korus_mail.clients.claude import stub as claude_stub
    from git_korus_mail.core import keys
    common, paths = world.clone("fast", ["web", "api"])
    web = paths["web"]
    hooks = common / "mail" / "hooks"
    hooks.mkdir(parents=True)
    stub = hooks / "claude-hook"
    stub.write_text(claude_stub.render_stub(world.tool))
    stub.chmod(0o700)
    noop = world.base / "noop-hook"
    noop.write_text("#!/bin/sh\nexit 0\n")
    noop.chmod(0o700)
    cname, env = conds[0]
    session = "bench-fast"
    fast_env = dict(env, CLAUDE_CODE_SESSION_ID=session)  # CLAUDE_PID: this process (fixtures.World)
    run = subprocess.run([world.tool, "send", "--to", str(web), "--", "warm-up mail"], cwd=paths["main"],
                         env=env, capture_output=True)
    if run.returncode != 0:
        raise Failure(f"send: {run.stderr.decode(errors='replace')[-300:]}")
    ups = ["/bin/sh", "-c", claude.hook_command(str(stub), "UserPromptSubmit")]
    subprocess.run(ups, input=payload("UserPromptSubmit", session, web), cwd=web, env=fast_env,
                   capture_output=True, check=True)  # shows the mail: nothing is new after it
    inbox = common / "mail" / "box" / keys.key_for(str(web)).name / "inbox"
    then = time.time_ns() - 10 * 1_000_000_000
    os.utime(inbox, ns=(then, then))  # the mail came in a while ago (a stamp waits MARGIN seconds)
    pl = payload("PostToolUse", session, web)
    ptu = ["/bin/sh", "-c", claude.hook_command(str(stub), "PostToolUse")]
    subprocess.run(ptu, input=pl, cwd=web, env=fast_env, capture_output=True, check=True)  # stamps
    if not os.path.lexists(common / "mail" / "fast" / f"{session}@{os.getpid()}"):
        raise Failure("the drain wrote no fast-path stamp")
    f = Cmd("fast", ptu, web, fast_env, pl, _quiet)
    n = Cmd("noop", ["/bin/sh", "-c", claude.hook_command(str(noop), "PostToolUse")], web, env, pl)
    d = Cmd("drain", ptu, web, env, pl, _quiet)  # no session in the environment: no fast path
    log(f"9. stub fast path PostToolUse [{cname}]")
    t = interleaved([f, n, d], prof["runs"], prof["warmup"])
    ROWS.append(Row("9", "stub fast path PostToolUse, nothing new", "no-op sh hook", cname,
                    t["fast"], t["noop"], "≤ 1.5×", 1.5))
    ROWS.append(Row("9", "stub starting the drain PostToolUse, nothing new", "no-op sh hook", cname,
                    t["drain"], t["noop"]))

    # a worktree that never got mail: no inbox/, so the stamp is the "no inbox" kind
    api, fresh = paths["api"], "bench-fresh"
    fresh_env = dict(env, CLAUDE_CODE_SESSION_ID=fresh)
    subprocess.run(ups, input=payload("UserPromptSubmit", fresh, api), cwd=api, env=fresh_env,
                   capture_output=True, check=True)  # the prompt's show finds no inbox and stamps that
    if (common / "mail" / "box" / keys.key_for(str(api)).name / "inbox").exists():
        raise Failure("the worktree that never got mail has an inbox")
    if not os.path.lexists(common / "mail" / "fast" / f"{fresh}@{os.getpid()}"):
        raise Failure("the drain wrote no fast-path stamp for a box without an inbox")
    pl = payload("PostToolUse", fresh, api)
    f = Cmd("fresh", ptu, api, fresh_env, pl, _quiet)
    n = Cmd("noop", ["/bin/sh", "-c", claude.hook_command(str(noop), "PostToolUse")], api, env, pl)
    hk = Cmd("hook-true", ["/bin/sh", "-c", "sh -c true"], api, env, pl)  # a hook whose command is `sh -c true`
    tr = Cmd("true", ["/bin/sh", "-c", "true"], api, env, pl)  # one shell, a builtin: below any hook's floor
    d = Cmd("drain", ptu, api, env, pl, _quiet)  # no session in the environment: the drain, as before
    log(f"9. stub fast path PostToolUse, a worktree that never got mail [{cname}]")
    t = interleaved([f, n, hk, tr, d], prof["runs"], prof["warmup"])
    ROWS.append(Row("9", "stub fast path PostToolUse, nothing new, never got mail (no inbox/)", "no-op sh hook",
                    cname, t["fresh"], t["noop"], "≤ 1.5×", 1.5))
    ROWS.append(Row("9", "stub fast path PostToolUse, nothing new, never got mail (no inbox/)",
                    "hook command `sh -c true`", cname, t["fresh"], t["hook-true"], "≤ 1.5×", 1.5))
    ROWS.append(Row("9", "stub fast path PostToolUse, nothing new, never got mail (no inbox/)",
                    "`/bin/sh -c true` (one process)", cname, t["fresh"], t["true"]))
    ROWS.append(Row("9", "stub starting the drain PostToolUse, never got mail (before: no stamp)",
                    "hook command `sh -c true`", cname, t["drain"], t["hook-true"]))
