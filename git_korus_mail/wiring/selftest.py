"""Install's self-test of a stub (prove, do not infer): run our command for a session's opening
event once as the client would, `/bin/sh -c` with a synthetic payload on stdin, and check its
answer. The event, what the payload carries, which variables are dropped and how the answer
is checked are the client's (clients/<client>/)."""

import json
import os
import subprocess

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Callable, Collection, Optional

VERIFY_TIMEOUT = 30
GIT_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")  # the stub finds its clone from cwd


def run_opening(command: str, cwd: str, event: str, transcript: "Optional[str]", drop: "Collection[str]",
                check_answer: "Callable[[str, str], Optional[str]]", silent: str,
                stderr_tail: bool = False) -> "Optional[str]":
    """None when `command` answers a synthetic `event` (a new session's) in `cwd` with hook JSON
    that carries no fault, else what went wrong. `transcript`: the payload's transcript_path;
    `drop`: the environment variables the hook must not see; `check_answer(event, stdout)`: the
    client's check; `silent`: the problem when it prints nothing; `stderr_tail`: name the last
    line of its stderr when it fails."""
    payload = {"session_id": f"korus-verify-{os.urandom(6).hex()}", "transcript_path": transcript, "cwd": cwd,
               "hook_event_name": event, "source": "startup"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["KORUS_MAIL_VERIFY"] = "1"
    shell = "/bin/sh"  # what the clients run hook commands with (dash on Debian), not bash
    try:
        proc = subprocess.run([shell, "-c", command], cwd=cwd, input=json.dumps(payload).encode(),
                              capture_output=True, env=env, timeout=VERIFY_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"the stub did not answer within {VERIFY_TIMEOUT} s"
    except OSError as exc:
        return f"cannot run the stub: {exc.strerror}"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines() if stderr_tail else []
        return f"the stub exited {proc.returncode}{': ' + err[-1] if err else ''}"
    answer = proc.stdout.decode("utf-8", "replace")
    problem = check_answer(event, answer)
    if problem is None and not answer.strip():
        problem = silent
    return problem
