"""Commands called in-process with their own typed arguments: no docopt dict, no subprocess.

Real processes stay for concurrency and hooks (test_race, test_drain, ...); here the
question is only what a command does with its arguments, and what it prints.
"""

import dataclasses
import io

import pytest
from git_korus_mail.commands.argv import parse as argv_parse

from git_korus_mail import cli
from git_korus_mail.commands.args import Args
from git_korus_mail.core.clone import Clone
from git_korus_mail.commands import params as cli_params, send, status
from git_korus_mail.errors import UsageError


@pytest.fixture
def in_main(clone, monkeypatch):
    monkeypatch.chdir(clone.main)
    return Clone()


@pytest.mark.parametrize("args, says", [
    (send.SendArgs(to=(".",) * 9, body="hi"), "9 destinations; at most 8"),
    (send.SendArgs(to=(".",), body="hi", kind="Bad/Kind"), "--kind 'Bad/Kind'"),
    (send.SendArgs(to=(".",), body="hi", kind="question"), "--kind question: written only by `ask` and `reply`"),
    (send.SendArgs(to=(".",), body="hi", kind="answer"), "--kind answer: written only by"),
    (send.SendArgs(to=(".",), body="hi", ttl_minutes=0), "--ttl 0: out of range"),
    (send.SendArgs(to=(".",), body="hi", ttl_minutes=5256001), "--ttl 5256001: out of range"),
    (send.SendArgs(to=(".",), body="hi", session="not a session"), "--session 'not a session'"),
])
def test_send_argument_errors_queue_nothing(clone, in_main, args, says):
    out = io.StringIO()
    with pytest.raises(UsageError, match=says.replace("(", r"\(")):
        send.run(in_main, args, out)
    assert out.getvalue() == ""
    assert not clone.mail_root.exists()  # refused before anything was made


def test_send_ttl_as_typed_is_checked_before_it_becomes_minutes():
    assert send.parse_ttl(None) is None and send.parse_ttl("90") == 90
    with pytest.raises(UsageError, match="--ttl 'abc': minutes as a whole number"):
        send.parse_ttl("abc")


def test_send_then_status_formatting(clone, in_main):
    out = io.StringIO()
    assert send.run(in_main, send.SendArgs(to=("../web",), body="schema changed", kind="handoff"), out) == 0
    line, verdict = out.getvalue().splitlines(True)
    assert line.startswith("queued ") and line.endswith(" -> ../web (web)\n"), line
    assert verdict.startswith("  queued, as of ") and "nothing is wired to show it" in verdict, verdict  # no install here
    msg_id = line.split()[1]

    text = io.StringIO()
    assert status.run(in_main, status.StatusArgs(), text) == 0
    lines = text.getvalue().splitlines()
    head, _, as_of = lines[0].partition("  (as of 20")
    assert head.startswith("status of ") and str(clone.main).endswith(head[10:].lstrip("…")), lines
    assert as_of.endswith("Z)") and len(lines[0]) <= 100, lines
    assert lines[1] == f"  mail root {clone.mail_root}"
    assert lines[2].endswith(" · delivery on")
    assert lines[3] == "  consumed, expired and cancelled mail is kept 30 days, then pruned"  # the default retention
    assert any(x.startswith("sent from this worktree: 1, newest first  (as of 20") for x in lines), lines
    sent = [x for x in lines if x.startswith(f"  {msg_id}  to ../web  ")]
    assert sent == [f"  {msg_id}  to ../web  queued"], lines
    assert any(" sent " in x and f"{msg_id} to web" in x for x in lines), lines  # the journal's line
    assert all(len(x) < 100 for x in lines), lines


def test_status_json_counts_what_all_would_show(clone, in_main):
    for i in range(3):
        send.run(in_main, send.SendArgs(to=("../web",), body=f"m{i}"), io.StringIO())
    import json
    text = io.StringIO()
    status.run(in_main, status.StatusArgs(json=True), text)
    data = json.loads(text.getvalue())
    assert data["sent_total"] == 3 and len(data["sent"]) == 3


# One argv per usage line of each command: cli must turn each into typed arguments.
ARGVS = [
    ["send", "--to=.", "--to=../web", "--kind=alert", "--ttl=5", "--session=s1", "--create", "--json", "hi"],
    ["send", "--all-worktrees", "-"],
    ["list", "--all", "--json"], ["status"], ["inbox", "--all", "--json"], ["read", "2026", "--raw"], ["log", "--follow", "--since=2h", "--json"],
    ["cancel", "20260101T000000Z-0123456789abcdef"], ["forward", "abcd", "--to=web"], ["remote", "add", "nats://127.0.0.1:4222", "--label=vm"],
    ["off"], ["on"], ["install", "--scope=user", "--force"], ["uninstall", "--purge", "--yes"],
    ["doctor", "--json"], ["who", "--json"], ["release", "20260101T000000Z-0123456789abcdef"], ["completion", "zsh"],
    ["ask", "--to=../web", "--timeout=30", "--json", "--", "ready?"], ["reply", "20260101T000000Z-0123456789abcdef", "yes"],
    ["reserve", "src/db", "docs/*.md", "--ttl=30", "--note=schema", "--block"],
]


def parsed(argv):
    """docopt's dict as cli.py gets it (commands/argv.parse: the usage's program is `git`)."""
    args = argv_parse(cli.COMMANDS[argv[0]], argv)
    assert isinstance(args, dict), (argv, args)
    return args


def test_every_command_gets_typed_arguments_not_the_dict():
    covered = set()
    for argv in ARGVS:
        module, params = cli_params.typed(argv[0], parsed(argv))
        covered.add(argv[0])
        # a frozen dataclass, or (send, ask, reply: no dataclasses import in a tool call) commands/args.Args
        assert dataclasses.is_dataclass(params) or isinstance(params, Args), argv
        assert not isinstance(params, dict), argv
        assert module.__name__.startswith("git_korus_mail.commands."), module
        names = ([f.name for f in dataclasses.fields(params)] if dataclasses.is_dataclass(params)
                 else list(params.FIELDS))
        for name in names:
            value = getattr(params, name)
            assert not isinstance(value, (dict, list)), (argv, name, value)
            with pytest.raises(AttributeError):  # frozen, as a dataclass(frozen=True) is
                setattr(params, name, value)
    assert covered == set(cli.COMMANDS)  # a new command needs a line above


def test_typed_arguments_carry_what_was_typed():
    a = parsed(ARGVS[0])
    _module, params = cli_params.typed("send", a)
    assert params == send.SendArgs(to=(".", "../web"), all_worktrees=False, body="hi", kind="alert",
                                   ttl_minutes=5, session="s1", create=True, json=True)
    _module, params = cli_params.typed("off", parsed(["off"]))
    assert params.off is True
