"""Peak memory of one hook run over a box of huge messages (issue 16: 40 x 8 MiB cost 334 MB).

    python bench/memory.py [count] [MiB]      (defaults: 40 messages of 8 MiB)

Builds a throwaway clone in a temp dir, writes `count` valid message files of about `MiB`
each straight into the inbox (send refuses bodies over 32 KiB; a hostile writer does not), then
runs one SessionStart drain as a child process and prints its peak RSS (ru_maxrss of the child).
"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from helpers import Clone, PYTHON  # noqa: E402

from git_korus_mail.core import keys  # noqa: E402
from git_korus_mail.store import message  # noqa: E402


def main(count=40, mib=8):
    with tempfile.TemporaryDirectory() as base:
        env = dict(os.environ, HOME=base, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x",
                   GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x")
        os.environ.update(env)
        c = Clone(__import__("pathlib").Path(base))
        web = c.add_worktree("web")
        subprocess.run([PYTHON, "-m", "git_korus_mail", "send", "--to", "../web", "seed"], cwd=c.main, check=True,
                       capture_output=True)
        inbox = c.mail_root / "box" / keys.key_for(str(web)).name / "inbox"
        body = "x" * (mib * 1024 * 1024 - 1024)
        for i in range(count):
            m = message.build(body, str(web), "k", {"path": str(c.main)}, now=time.time() - 10 + i * 1e-3)
            (inbox / (m["id"] + ".json")).write_bytes(message.encode(m))
        payload = json.dumps({"session_id": "s1", "transcript_path": "", "cwd": str(web),
                              "hook_event_name": "SessionStart", "source": "startup"})
        peak, out = drain_peak(web, payload)
        shown = out.count(" begin]")
        print(f"{count} messages of {mib} MiB: one SessionStart drain peaked at {peak / 1024:.1f} MB RSS "
              f"(it showed {shown} messages)")


def drain_peak(cwd, payload):
    """(peak RSS in KiB, stdout) of one drain process, from wait4's rusage of that very child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as inp:
        inp.write(payload.encode())
        inp.seek(0)
        proc = subprocess.Popen([PYTHON, "-m", "git_korus_mail", "drain"], cwd=cwd, stdin=inp, stdout=out,
                                stderr=subprocess.DEVNULL)
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
        assert proc.returncode == 0, proc.returncode
        out.seek(0)
        return usage.ru_maxrss, out.read().decode()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
