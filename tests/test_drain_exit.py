"""The drain's process, and send's, ask's and reply's, end without the interpreter's teardown
(shell.leave): their output and atexit handlers are kept, the freeing of every module is skipped
(the client or the model's tool call waits for the exit: bench/RESULTS.md, "h26wake"). A marker object's __del__ tells the two apart: it runs
at a normal interpreter exit and not after os._exit."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "git-korus-mail"
REPO = str(SCRIPT.parent.parent)

MARKER = """
import atexit, sys
sys.path.insert(0, {repo!r})
class Teardown:
    def __del__(self):
        sys.stdout.write("teardown ran\\n")
        sys.stdout.flush()
kept = Teardown()
atexit.register(lambda: sys.stdout.write("atexit ran\\n"))
"""


def _run(code):
    return subprocess.run([sys.executable, "-c", MARKER.format(repo=REPO) + code], capture_output=True, text=True,
                          timeout=60)


def test_leave_keeps_output_and_atexit_and_skips_the_teardown():
    p = _run("from git_korus_mail.shell import leave\nsys.stdout.write('the answer')\nleave(3)\n")
    assert p.returncode == 3
    # the buffered answer is out, the atexit handler ran (after it), and no teardown followed
    assert p.stdout == "the answeratexit ran\n"


def test_the_script_ends_a_drain_through_leave():
    # a drain that returns at once (an unknown client: usage, 129), run as the script runs
    code = (f"import runpy\nsys.argv = [{str(SCRIPT)!r}, 'drain', '--client=nobody']\n"
            f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n")
    p = _run(code)
    assert p.returncode == 129
    assert "drain: --client 'nobody'" in p.stderr
    assert p.stdout == "atexit ran\n"


def _script(*argv):
    return (f"import runpy\nsys.argv = [{str(SCRIPT)!r}, *{list(argv)!r}]\n"
            f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n")


def test_the_script_ends_send_ask_and_reply_through_leave_and_other_commands_normally():
    for command in ("send", "ask", "reply"):
        p = _run(_script(command, "--help"))
        assert p.returncode == 0, (command, p.stderr)
        assert p.stdout.startswith("Usage:") or "usage" in p.stdout.lower(), (command, p.stdout[:200])
        assert p.stdout.endswith("atexit ran\n") and "teardown ran" not in p.stdout, (command, p.stdout[-200:])
    p = _run(_script("list", "--help"))  # not a model's mail call: the usual exit
    assert p.returncode == 0 and "teardown ran" in p.stdout


def test_a_normal_exit_runs_the_teardown():
    # the marker itself can tell: without leave the teardown prints
    p = _run("sys.exit(3)\n")
    assert p.returncode == 3
    assert "teardown ran" in p.stdout
