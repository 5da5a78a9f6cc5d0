"""`who` with real Claude Code sessions under two config roots (issue 13).

One session is the terminal UI in a pty (config root "one", worktree a), the other a live
stream-json session (config root "two", worktree b), both wired by `git korus-mail install`.
The names and ids the test expects are read from Claude Code's own registry files and from
its stream output, not from the product. Then: the stream session works a turn (working), the
terminal session is `/clear`ed (its new id is listed, the old one closed), the stream session
is killed with SIGKILL (gone), a session name addresses its worktree plus that session, and
a `-p` run that ended is closed and keeps its name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mockapi import text
from test_scenarios import cli, mail, runners  # noqa: F401 - fixtures

pytestmark = pytest.mark.e2e


def who(mail) -> dict:  # noqa: F811
    return json.loads(cli("who", "--json", cwd=mail.clone.main).stdout)


def rows(mail, session: str) -> list:  # noqa: F811
    return [r for r in who(mail)["sessions"] if r["session"] == session]


def registry_entry(config_dir: str, pid: int) -> dict:
    return json.loads((Path(config_dir) / "sessions" / f"{pid}.json").read_text())


def test_who_lists_sessions_of_two_config_roots_and_follows_clear_and_kill(mail, mockapi, runners):  # noqa: F811
    one, two = runners("one"), runners("two")
    mockapi.set_script([])
    term = one.terminal(cwd=mail.a)
    stream = two.stream(cwd=mail.b)
    term.wait_until(lambda: "shift+tab" in term.screen_text(), 60, "the terminal UI's prompt")
    for proc, cfg in ((term, one.config_dir), (stream, two.config_dir)):
        entry = Path(cfg) / "sessions" / f"{proc.pid}.json"
        proc.wait_until(entry.exists, 30, "its registry entry")
    t_entry, s_entry = registry_entry(one.config_dir, term.pid), registry_entry(two.config_dir, stream.pid)
    t_sid, s_sid = t_entry["sessionId"], s_entry["sessionId"]
    term.wait_until(lambda: rows(mail, t_sid) and rows(mail, s_sid), 30, "both sessions in who")

    data = who(mail)
    got = {r["session"]: r for r in data["sessions"]}
    assert (got[t_sid]["name"], got[t_sid]["config_root"], got[t_sid]["surface"], got[t_sid]["worktree"]) == \
        (t_entry["name"], one.config_dir, "terminal", os.path.realpath(mail.a))
    assert (got[s_sid]["name"], got[s_sid]["config_root"], got[s_sid]["surface"], got[s_sid]["worktree"]) == \
        (s_entry["name"], two.config_dir, "sdk", os.path.realpath(mail.b))
    assert got[t_sid]["state"] == got[s_sid]["state"] == "idle"
    text_out = cli("who", cwd=mail.clone.main).stdout
    assert t_entry["name"] in text_out and s_entry["name"] in text_out and "-p/SDK" in text_out

    # a turn in progress: working
    mockapi.set_script([text("slow answer", delay=8)])
    stream.send("think a while")
    stream.wait_until(lambda: rows(mail, s_sid)[0]["state"] == "working", 30, "the stream session working")
    stream.read_result()
    # the sign of life who falls back on when tool calls leave no hook event: the transcript
    from git_korus_mail import clients
    assert clients.last_activity("claude", two.config_dir, os.path.realpath(mail.b), s_sid) is not None

    # /clear in the terminal: the new id is listed (idle), the old one closed
    term.type("/clear")
    term.wait_for_text("/clear", 10)
    term.type("\r")
    term.wait_until(lambda: registry_entry(one.config_dir, term.pid)["sessionId"] != t_sid, 30,
                    "a new session id in Claude Code's registry")
    new_sid = registry_entry(one.config_dir, term.pid)["sessionId"]
    term.wait_until(lambda: rows(mail, new_sid) and rows(mail, t_sid)[0]["state"] == "closed", 30,
                    "the new id in who, the old one closed")
    cleared = rows(mail, new_sid)[0]
    assert (cleared["state"], cleared["name"], cleared["config_root"]) == ("idle", t_entry["name"], one.config_dir)

    # a session name addresses its worktree plus that very session
    out = json.loads(cli("send", "--json", "--to", t_entry["name"], "--", "by name", cwd=mail.b).stdout)
    (res,) = out["results"]
    assert res["ok"] and (res["path"], res["session"]) == (os.path.realpath(mail.a), new_sid), out

    # SIGKILL: no SessionEnd runs, the registry keeps its file, and who says gone
    assert stream.kill() == -9
    assert (Path(two.config_dir) / "sessions" / f"{stream.pid}.json").exists()
    assert rows(mail, s_sid)[0]["state"] == "gone"
    term.kill()

    # a -p run that ended: closed, and named (its SessionEnd read the registry before exit)
    mockapi.set_script([text("quick")])
    p_sid = two.run("hi", cwd=mail.b).check().session_id
    (ended,) = rows(mail, p_sid)
    assert (ended["state"], ended["surface"], ended["config_root"]) == ("closed", "sdk", two.config_dir)
    assert ended["name"] and ended["name"].startswith("b-"), ended
