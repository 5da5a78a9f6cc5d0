"""The person at the keyboard is told, in one line, which mail the model was shown.

Claude Code shows a hook's systemMessage to the user only (docs/HOOKS.md, "The user line").
The line names sender, kind, count and abbreviated ids; every sender field in it is hostile
and escaped; it is capped; and the mail still enters the model's context once per event.
"""

import json

from helpers import context_of, hook, run_cli
from test_hostile import forbidden, make_msg, write_msg

SESSION = "5f0c3f4e-1111-4c4c-9d9d-0000000000aa"


def send(clone, body, cwd, kind=None):
    args = ["send", "--to=../web"] + ([f"--kind={kind}"] if kind else []) + ["--json", "-"]
    proc = run_cli(*args, cwd=cwd, input=body.encode())
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    return result["id"]


def test_one_message_is_named_by_sender_kind_and_id(clone):
    mid = send(clone, "please take the handoff", clone.main, kind="handoff")
    answer, _ = hook("SessionStart", clone.web, SESSION)
    # the id's last 8 characters are its random hex (message.new_id)
    assert answer["systemMessage"] == (f"korus-mail: 1 message from ../api (handoff, id …{mid[-8:]}) "
                                       f"shown to the model")
    ctx = context_of(answer)
    assert ctx.count("| please take the handoff") == 1   # the mail enters the context once
    assert "shown to the model" not in ctx               # the line is the person's, not the model's


def test_nothing_new_says_nothing_and_a_later_show_names_only_the_new_mail(clone):
    send(clone, "first", clone.main)
    hook("SessionStart", clone.web, SESSION)
    assert hook("UserPromptSubmit", clone.web, SESSION)[0] is None
    second = send(clone, "second", clone.main)
    answer, _ = hook("PostToolUse", clone.web, SESSION)
    assert answer["systemMessage"] == f"korus-mail: 1 message from ../api (note, id …{second[-8:]}) shown to the model"
    assert context_of(answer).count("| second") == 1 and "| first" not in context_of(answer)


def test_several_senders_are_counted_each_with_kinds_and_ids(clone):
    other = clone.add_worktree("cli")
    ids = [send(clone, f"from api {i}", clone.main, kind="handoff" if i == 0 else None) for i in range(5)]
    cli_id = send(clone, "from cli", other)
    answer, _ = hook("SessionStart", clone.web, SESSION)
    line = answer["systemMessage"]
    assert line.startswith("korus-mail: 6 messages shown to the model: 5 from ../api (1 handoff, 4 note; ids ")
    assert f"…{ids[0][-8:]}, …{ids[1][-8:]}, …{ids[2][-8:]} +2)" in line
    assert line.endswith(f", 1 from ../cli (note, id …{cli_id[-8:]})")
    assert "\n" not in line


def test_a_hostile_sender_path_is_escaped_and_the_line_capped(clone):
    evil = "/tmp/\x1b]52;c;cHduZWQ=\x07\u202eevil\nkorus-mail: forged line " + "x" * 2000
    for i in range(4):
        write_msg(clone, make_msg(clone, f"body {i}", **{"from": {"path": evil + str(i), "branch": None,
                                                                  "session": None}}))
    answer, proc = hook("SessionStart", clone.web, SESSION)
    line = answer["systemMessage"]
    assert not [c for c in line if forbidden(c)] and "\n" not in line, line
    assert "\\u001b]52" in line and "\\u202e" in line and "\\u000a" in line
    assert len(line) <= 240
    assert line.startswith("korus-mail: 4 messages shown to the model: 1 from /tmp/")
    assert line.endswith("…") or "1 from 1 more sender" in line


def test_deferred_mail_is_said_to_wait(clone):
    for i in range(4):
        send(clone, f"big {i}\n" + "\n".join("y" * 100 for _ in range(40)), clone.main)
    answer, _ = hook("SessionStart", clone.web, SESSION)
    line = answer["systemMessage"]
    assert line.startswith("korus-mail: 2 messages from ../api") and line.endswith(
        "shown to the model; 2 more wait for the next event"), line


def test_stop_and_the_empty_box_carry_no_line(clone):
    answer, _ = hook("SessionStart", clone.web, SESSION)
    assert "systemMessage" not in answer
    send(clone, "one", clone.main)
    hook("UserPromptSubmit", clone.web, SESSION)
    answer, _ = hook("Stop", clone.web, SESSION)
    assert answer is None


def test_the_abbreviated_id_in_the_line_is_what_read_takes(clone):
    mid = send(clone, "read me by my short id", clone.main)
    send(clone, "another", clone.main)
    answer, _ = hook("SessionStart", clone.web, SESSION)
    short = f"…{mid[-8:]}"
    assert short in answer["systemMessage"]
    for typed in (short, mid[-8:]):
        proc = run_cli("read", typed, cwd=clone.web)
        assert proc.returncode == 0 and "read me by my short id" in proc.stdout and mid in proc.stdout, proc.stderr
