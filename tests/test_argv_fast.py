"""send, ask and reply parsed without docopt (commands/argv_fast.py): every dict it makes is the
one docopt makes from the live usage blocks, and what it cannot be sure of goes to docopt."""

import pytest

from git_korus_mail.cli import COMMANDS
from git_korus_mail.commands.argv import parse
from git_korus_mail.commands.argv_fast import quick

PARSED = [  # lines the hand parser must take, each checked against docopt's own dict
    ["send", "--to", "../web", "hello"],
    ["send", "--to=../web", "hello"],
    ["send", "hello", "--to", "../web"],
    ["send", "--to", "a", "--to=b", "--to", "c", "body"],
    ["send", "--to", "web"],
    ["send", "--to", "web", "-"],
    ["send", "--to", "web", "--", "-starts with a dash"],
    ["send", "--to", "web", "--", "--to"],
    ["send", "--to", "web", "--"],
    ["send", "--to", "web", "--", "--"],
    ["send", "--to", "web", ""],
    ["send", "--to", "", "x"],
    ["send", "--to=", "x"],
    ["send", "--to=a=b", "x"],
    ["send", "--to", "web", "--kind", "handoff", "--ttl=60", "--session", "abc-1", "--create",
     "--no-wake", "--wait", "0", "--json", "--repo", "/r", "the body"],
    ["send", "--repo=/r", "--all-worktrees", "--kind=alert", "--ttl", "5", "--no-wake", "--wait=3",
     "--json", "--", "body"],
    ["send", "--all-worktrees", "x"],
    ["ask", "--to", "../web", "ready?"],
    ["ask", "--to=web", "--timeout", "30", "--json", "--repo=/r", "--", "-ready?"],
    ["ask", "--to", "web"],
    ["ask", "ready?", "--to", "web"],
    ["reply", "0f3c9a21", "yes"],
    ["reply", "0f3c9a21", "--json", "--", "-1 is the answer"],
    ["reply", "--repo", "/r", "0f3c9a21"],
    ["reply", "0f3c9a21", "-"],
]

DECLINED = [  # lines left to docopt (it parses them, or says what is wrong)
    ["send", "--t", "web", "x"],               # abbreviation
    ["send", "--to", "web", "a", "b"],         # one argument too many
    ["send", "--to"],                          # value missing
    ["send", "--to", "--json", "x"],           # a value that looks like an option
    ["send", "-h"],
    ["send", "--to", "web", "--kind", "a", "--kind", "b", "x"],
    ["send", "--json=yes", "--to", "web", "x"],
    ["send", "--all-worktrees", "--to", "web", "x"],
    ["send", "--all-worktrees", "--session", "s", "x"],
    ["send", "--all-worktrees", "--create", "x"],
    ["send", "x"],                             # no destination
    ["send", "--to", "web", "-x"],             # a short option
    ["send", "--bogus", "--to", "web", "x"],
    ["ask", "q?"],
    ["ask", "--to", "a", "--to", "b", "q?"],
    ["ask", "--again=0f3c9a21"],               # ask --again (issue 25): docopt's, a person's command
    ["ask", "--again", "0f3c9a21", "--timeout", "30"],
    ["ask", "--to", "web", "--again", "0f3c9a21"],  # the usage forbids both
    ["reply"],
    ["reply", "--", "id", "yes"],
    ["reply", "id", "yes", "extra"],
    ["list"],                                  # not a command parsed here
]


@pytest.mark.parametrize("argv", PARSED, ids=[" ".join(a) for a in PARSED])
def test_hand_parsed_lines_equal_docopt(argv):
    ours = quick(argv[0], argv)
    assert ours is not None, "the hand parser should take this line"
    theirs = parse(COMMANDS[argv[0]], argv)
    assert ours == theirs


@pytest.mark.parametrize("argv", DECLINED, ids=[" ".join(a) for a in DECLINED])
def test_uncertain_lines_go_to_docopt(argv):
    assert quick(argv[0], argv) is None
