"""`git worktree move` with the real Claude Code CLI: the moved worktree's session reads the
mail queued before the move, and the sender's `status` follows it to the new box (issue 9)."""

from __future__ import annotations

import json
import subprocess

import pytest

from mockapi import text
from test_scenarios import Box, _uid, assert_delivered, cli, mail, runners  # noqa: F401 (fixtures)

pytestmark = pytest.mark.e2e


def test_a_moved_worktrees_session_reads_the_mail_queued_before_the_move(mail, mockapi, runners):  # noqa: F811
    needle = f"MOVED-{_uid()} the schema changed"
    msg_id = mail.send(mail.clone.main, "b", needle)
    moved = mail.clone.base / "b-moved"
    subprocess.run(["git", "worktree", "move", str(mail.b), str(moved)], cwd=mail.clone.main, check=True,
                   capture_output=True)
    mockapi.set_script([text("read my mail")])
    run = runners("one").run("anything new?", cwd=moved).check()
    assert_delivered(mockapi, run.session_id, needle)
    box = Box(mail.root, moved)
    assert box.ids("seen") == [msg_id] and box.receipts()[msg_id]["session"] == run.session_id
    assert Box(mail.root, mail.b).ids("inbox") == []
    fate = {r["id"]: r["fate"] for r in json.loads(cli("status", "--json", cwd=mail.clone.main).stdout)["sent"]}
    assert fate[msg_id]["state"] == "consumed" and fate[msg_id]["session"] == run.session_id, fate
    assert fate[msg_id]["moved_to"] == [box.dir.name], fate
