"""What one `drain` adds to sys.modules: the hot path's imports read in a fresh interpreter, as
a hook runs it (the hot path imports nothing heavy: the vocabulary, typing, re, json, pygit2)."""

import json
import subprocess
import sys

CODE = ("import sys; before = set(sys.modules); from git_korus_mail.cli import main; rc = main(['drain']); "
        "sys.stderr.write(' '.join(sorted(set(sys.modules) - before)))")


def drain_modules(cwd, event: str, session: str, **fields) -> "tuple[subprocess.CompletedProcess, set]":
    """(the finished drain, the modules it added) for one `event` of `session` in `cwd`; the
    drain must succeed. `fields`: more payload fields (source, prompt, ...)."""
    payload = json.dumps({"session_id": session, "transcript_path": "", "cwd": str(cwd),
                          "hook_event_name": event, **fields})
    proc = subprocess.run([sys.executable, "-c", CODE], input=payload, capture_output=True, text=True, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc, set(proc.stderr.split())
