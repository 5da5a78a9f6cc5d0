"""Hostile bodies through `read` to a real terminal: tmux runs the real command in a pane, and
the pane is captured afterwards (with its attributes, title, clipboard buffers) to show that
no escape was interpreted: no colour, no title change, no OSC 52 clipboard write, no cursor
movement or clearing, no reordering by a bidi override. Each attack arrives as visible text.

The same body written by `read --raw | cat` into a second pane is the control: it shows that
this capture would see each attack work, so its absence under `read` is evidence, not blindness.
`read --raw` with the terminal itself on stdout refuses (issue 21, item 11), names the way to
get the bytes, and leaves the pane as it was.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from helpers import run_cli

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None and os.environ.get("CI", "").lower() != "true",
                                reason="needs tmux (apt-get install tmux; tests/run.sh installs it under CI)")

TITLE = "PWNED-TITLE"
CLIP = "pwned-clipboard"
BODY = (f"before the attacks\n"
        f"\x1b[2J cleared the screen\n"
        f"\x1b[31mRED\x1b[0m and \x1b[1mBOLD\x1b[0m\n"
        f"\x1b]2;{TITLE}\x07 title set\n"
        f"\x1b]52;c;cHduZWQtY2xpcGJvYXJk\x07 clipboard written\n"  # base64 of CLIP
        f"cursor up\x1b[2A\x1b[2K overwrites\n"
        f"bidi \u202eevil.exe\u202c and \u2066isolate\u2069\n"
        f"zero\u200bwidth\ufeff and nul \x00 byte\n"
        f"lone CR: shown\rHIDDEN\n"
        f"after the attacks\n")


def tmux(sock, *args, check=True):
    return subprocess.run([TMUX or "tmux", "-L", sock, "-f", "/dev/null", *args], capture_output=True,
                          text=True, check=check)


def run_in_pane(sock, name, cwd, argv, marker, tail=""):
    """Run argv (followed by `tail`, shell text such as a pipe, when given) in a new 200x60
    window `name`, and wait until `marker` is on the screen."""
    cmd = " ".join(shlex_quote(a) for a in argv) + tail + f"; printf '%s\\n' {marker}; sleep 600"
    tmux(sock, "new-window", "-d", "-n", name, "-c", str(cwd), cmd)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if marker in tmux(sock, "capture-pane", "-p", "-t", f"=k:{name}").stdout:
            return
        time.sleep(0.05)
    raise AssertionError(f"{name}: never printed {marker}:\n" + tmux(sock, "capture-pane", "-p", "-t", f"=k:{name}").stdout)


def shlex_quote(s):
    import shlex
    return shlex.quote(str(s))


@pytest.fixture
def server(tmp_path):
    sock = f"korus-{os.getpid()}-{tmp_path.name}"
    env = {"NO_COLOR": "1"}  # our own output has no colour: any attribute on screen came from the body
    tmux(sock, "-2", "new-session", "-d", "-s", "k", "-x", "200", "-y", "60", "-n", "idle", "sleep 600")
    tmux(sock, "set-option", "-g", "set-clipboard", "on")       # an OSC 52 would land in a tmux buffer
    tmux(sock, "set-option", "-g", "allow-rename", "on")
    for k, v in env.items():
        tmux(sock, "set-environment", "-g", k, v)
    path = tmux(sock, "display-message", "-p", "#{socket_path}").stdout.strip()
    try:
        yield sock
    finally:
        tmux(sock, "kill-server", check=False)
        if path:
            try:
                os.unlink(path)  # the server may leave its socket behind
            except FileNotFoundError:
                pass


def seen(sock, name):
    """(plain text, text with attributes as escapes, pane title) of a window."""
    target = f"=k:{name}"
    plain = tmux(sock, "capture-pane", "-p", "-t", target).stdout
    styled = tmux(sock, "capture-pane", "-p", "-e", "-t", target).stdout
    title = tmux(sock, "display-message", "-p", "-t", target, "#{pane_title}").stdout.strip()
    return plain, styled, title


def buffers(sock):
    return tmux(sock, "list-buffers", "-F", "#{buffer_sample}").stdout


def test_hostile_body_through_read_interprets_nothing_in_a_real_terminal(clone, server):
    proc = run_cli("send", "--to", str(clone.web), "--json", "-", cwd=clone.main, input=BODY.encode(), check=True)
    msg_id = json.loads(proc.stdout)["results"][0]["id"]
    cli = [sys.executable, "-m", "git_korus_mail"]
    env = ["env", f"PYTHONPATH={os.pathsep.join(sys.path)}", "NO_COLOR=1"]

    run_in_pane(server, "read", clone.web, env + cli + ["read", msg_id], "END-OF-READ")
    plain, styled, title = seen(server, "read")
    assert TITLE not in title and CLIP not in buffers(server)
    assert "\x1b" not in styled, "an attribute reached the screen"     # capture -e writes SGR for any
    lines = plain.splitlines()
    assert "         read does not consume: the message stays as it was" in lines[1], plain
    for want in ("| before the attacks",
                 "| \\u001b[2J cleared the screen",
                 "| \\u001b[31mRED\\u001b[0m and \\u001b[1mBOLD\\u001b[0m",
                 f"| \\u001b]2;{TITLE}\\u0007 title set",
                 "| \\u001b]52;c;cHduZWQtY2xpcGJvYXJk\\u0007 clipboard written",
                 "| cursor up\\u001b[2A\\u001b[2K overwrites",
                 "| bidi \\u202eevil.exe\\u202c and \\u2066isolate\\u2069",
                 "| zero\\u200bwidth\\ufeff and nul \\u0000 byte",
                 "| lone CR: shown\\u000dHIDDEN",
                 "| after the attacks"):
        assert want in lines, f"{want!r} not on the screen:\n{plain}"
    assert plain.index("message  " + msg_id) < plain.index("| before the attacks") < plain.index("| after the attacks")

    # the control: the same bytes unescaped (read --raw, through cat) do change this terminal, visibly to us
    run_in_pane(server, "raw", clone.web, env + cli + ["read", msg_id, "--raw"], "END-OF-RAW", tail=" | cat")
    plain, styled, title = seen(server, "raw")
    assert title == TITLE, "the capture cannot see a title change: the check above proves nothing"
    assert CLIP in buffers(server), "the capture cannot see an OSC 52 write"
    assert "\x1b[31m" in styled or "\x1b[1m" in styled, "the capture cannot see colour"
    assert "before the attacks" not in plain, "the raw ESC [2J did not clear the screen"


def test_read_raw_refuses_a_terminal_on_stdout_and_says_how_to_get_the_bytes(clone, server):
    proc = run_cli("send", "--to", str(clone.web), "--json", "-", cwd=clone.main, input=BODY.encode(), check=True)
    msg_id = json.loads(proc.stdout)["results"][0]["id"]
    cli = [sys.executable, "-m", "git_korus_mail"]
    env = ["env", f"PYTHONPATH={os.pathsep.join(sys.path)}", "NO_COLOR=1"]
    run_in_pane(server, "tty", clone.web, env + cli + ["read", msg_id, "--raw"], "END-OF-TTY",
                tail="; printf 'exit=%s\\n' $?")
    plain, styled, title = seen(server, "tty")
    assert TITLE not in title and CLIP not in buffers(server) and "\x1b" not in styled, plain
    lines = [line for line in plain.splitlines() if line.strip()]
    assert lines[0] == (f"git korus-mail: --raw not on a terminal (a body's escapes would act on it); "
                        f"redirect or pipe it: git korus-mail read {msg_id} --raw > body.txt"), plain
    assert lines[1:] == ["exit=1", "END-OF-TTY"], plain
    assert "before the attacks" not in plain and "RED" not in plain
    # the way the line names works: redirected, the bytes are exactly the body as sent
    out = clone.base / "body.txt"
    with open(out, "wb") as f:
        done = subprocess.run(cli + ["read", msg_id, "--raw"], cwd=clone.web, stdout=f, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == BODY.encode()
