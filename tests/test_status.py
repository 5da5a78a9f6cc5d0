"""`status` as a person reads it: one as-of time per block, lines under 100 columns, this
worktree's events unless --clone, a paged sent list, colour only on a tty without NO_COLOR."""

import json
import os
import pty
import re
import subprocess

from helpers import PYTHON, hook, run_cli

MICRO_STAMP = re.compile(r"\d\d:\d\d:\d\d\.\d{6}")
SESSION = "5f0c3f4e-1111-4c4c-9d9d-0000000000bb"


def send(cwd, to, body):
    return run_cli("send", "--to", to, body, cwd=cwd, check=True).stdout.split()[1]


def traffic(clone):
    """api sends to web (consumed) and to cli; cli sends to web; web answers api."""
    cli = clone.add_worktree("cli")
    ids = {"api>web": send(clone.main, "../web", "one"), "api>cli": send(clone.main, "../cli", "two"),
           "cli>web": send(cli, "../web", "three")}
    hook("SessionStart", clone.web, SESSION)
    hook("Stop", clone.web, SESSION)
    ids["web>api"] = send(clone.web, "../api", "four")
    return cli, ids


def test_each_block_says_its_as_of_time_once_and_no_line_carries_a_microsecond_stamp(clone):
    traffic(clone)
    text = run_cli("status", cwd=clone.web, check=True).stdout
    assert not MICRO_STAMP.search(text), text
    heads = [x for x in text.splitlines() if "(as of " in x]
    titles = [h.split("  (as of ")[0] for h in heads]
    # a long path is cut from its start (its end names the worktree), never the as-of time
    assert titles[0].startswith("status of ") and str(clone.web).endswith(titles[0][10:].lstrip("…")), text
    assert titles[1:] == ["this worktree's box", "sent from this worktree: 1, newest first",
        "events of this worktree, latest 7"], text
    assert all(re.search(r"\(as of \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\)$", h) for h in heads), heads
    assert "  last Stop drain " in text and "session 5f0c3f4e\n" in text and SESSION not in text


def test_lines_stay_under_100_columns_and_json_keeps_every_detail(clone):
    deep = clone.add_worktree("a-worktree-with-a-rather-long-name-" + "x" * 40)
    sent_id = send(deep, "../web", "hello")
    box = clone.mail_root / "box"
    [target] = [p for p in box.iterdir() if (p / "inbox" / (sent_id + ".json")).exists()]
    (target / "inbox" / (sent_id + ".json")).write_text('{"v": 1, "id": "' + sent_id + '", "junk": "' + "j" * 300 + '"}')
    hook("SessionStart", clone.web, SESSION)  # quarantines it, with a reason
    text = run_cli("status", "--clone", cwd=deep, check=True).stdout
    long_lines = [x for x in text.splitlines() if len(x) >= 100]
    assert not long_lines, long_lines
    assert "quarantined" in text and sent_id in text
    data = json.loads(run_cli("status", "--json", cwd=deep, check=True).stdout)
    [rec] = data["sent"]
    assert rec["id"] == sent_id and rec["fate"]["state"] == "quarantined" and MICRO_STAMP.search(rec["fate"]["as_of"])


def test_events_are_this_worktrees_unless_clone_asks_for_every_worktree(clone):
    cli, ids = traffic(clone)
    mine = run_cli("status", cwd=clone.main, check=True).stdout.split("events of this worktree")[1]
    assert ids["api>web"] in mine and ids["api>cli"] in mine and ids["web>api"] in mine
    assert ids["cli>web"] not in mine  # mail between two other worktrees is theirs
    data = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    assert data["journal_scope"] == "worktree" and ids["cli>web"] not in json.dumps(data["journal"])
    every = run_cli("status", "--clone", cwd=clone.main, check=True).stdout.split("events of every worktree")[1]
    assert ids["cli>web"] in every and f"[web] {ids['cli>web']} from ../cli" in every, every
    data = json.loads(run_cli("status", "--clone", "--json", cwd=clone.main, check=True).stdout)
    assert data["journal_scope"] == "clone" and ids["cli>web"] in json.dumps(data["journal"])


def test_the_sent_list_shows_the_latest_20_and_all_shows_every_one(clone):
    ids = [send(clone.main, "../web", f"m{i}") for i in range(23)]
    text = run_cli("status", cwd=clone.main, check=True).stdout
    assert "sent from this worktree: 20 of 23, newest first" in text
    assert all(i in text.split("events of")[0] for i in ids[3:]) and ids[0] not in text.split("events of")[0]
    assert "  ... and 3 more messages (--all shows every one)\n" in text
    full = run_cli("status", "--all", cwd=clone.main, check=True).stdout
    assert all(i in full for i in ids) and "more message" not in full


def _in_a_terminal(args, cwd, env):
    """Run the command with its stdout on a pseudo-terminal; returns what it wrote."""
    master, slave = pty.openpty()
    full = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full.update(env)
    proc = subprocess.Popen([PYTHON, "-m", "git_korus_mail", *args], cwd=cwd, stdout=slave,
                            stderr=subprocess.PIPE, env=full)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(30)
    os.close(master)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_and_never_with_no_color(clone):
    send(clone.main, "../web", "one")
    coloured = _in_a_terminal(["status"], clone.main, {"TERM": "xterm"})
    assert "\x1b[" in coloured and "queued" in coloured
    assert "\x1b[" not in _in_a_terminal(["status"], clone.main, {"TERM": "xterm", "NO_COLOR": "1"})
    assert "\x1b" not in run_cli("status", cwd=clone.main, check=True).stdout  # a pipe
    # a coloured line is no wider than its plain text allows
    assert all(len(re.sub(r"\x1b\[[0-9;]*m", "", x)) < 100 for x in coloured.splitlines())


def test_colour_follows_no_color_only_when_set_and_gits_color_settings(clone):
    """no-color.org: only a non-empty NO_COLOR turns colour off. git's `color.ui`, and
    `color.korus-mail` above it, decide as they do for git's own commands (issue 25)."""
    from helpers import git
    send(clone.main, "../web", "one")
    term = {"TERM": "xterm"}
    assert "\x1b[" in _in_a_terminal(["status"], clone.main, dict(term, NO_COLOR=""))
    git("config", "color.ui", "never", cwd=clone.main)
    assert "\x1b[" not in _in_a_terminal(["status"], clone.main, term)
    git("config", "color.korus-mail", "auto", cwd=clone.main)  # the command's own wins over color.ui
    assert "\x1b[" in _in_a_terminal(["status"], clone.main, term)
    assert "\x1b[" not in run_cli("status", cwd=clone.main, check=True).stdout  # auto: not into a pipe
    git("config", "color.korus-mail", "always", cwd=clone.main)
    assert "\x1b[" in run_cli("status", cwd=clone.main, check=True).stdout
    git("config", "color.korus-mail", "false", cwd=clone.main)
    assert "\x1b[" not in _in_a_terminal(["status"], clone.main, term)
