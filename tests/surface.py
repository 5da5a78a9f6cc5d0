"""The command surface, read from the one place it is written: the docopt usage blocks in
git_korus_mail/cli.py (COMMANDS, DRAIN_USAGE, and the top-level USAGE).

The man page, the three completion scripts, docs/CONTRACT.md and the README each restate
this surface; tests/test_surface.py and tests/test_completions.py check them against what
this module derives. The usage is parsed with docopt's own parser, so what counts as an
option, an argument or a fixed word is exactly what the command line accepts.

Values: a completion offers fixed values for some options (`--scope local`, `--to all`).
Those values are the words in backticks in the option's description in the usage block,
e.g. "--scope=<scope>   `local` (...) or `user` (...)".
"""

import re
from collections import namedtuple

from docopt import Argument, Command as DocoptCommand, Option
from docopt import formal_usage, parse_docstring_sections, parse_options, parse_pattern

from git_korus_mail import cli

# name: the subcommand (None for the top level: `git korus-mail --version`)
# lines: its usage lines as written, with the dashed program name
# options: {"--to": takes an argument (bool)}, long and short
# placeholders: {"--to": "<dest>"}, the argument's name as the usage writes it
# values: {"--kind": ("note", ...)} fixed values a completion may offer, per option
# arguments: ("<body>",); choices: fixed words such as ("bash", "zsh", "fish")
# end_of_options: whether the usage has `[--]`
Command = namedtuple("Command", "name lines options placeholders values arguments choices end_of_options")

PROG = "git korus-mail"


def usage_docs():
    """{subcommand or None: its usage block}, straight from the cli module."""
    docs = {None: cli.USAGE, "drain": cli.DRAIN_USAGE}
    docs.update(cli.COMMANDS)
    return docs


def _usage_lines(doc):
    """Each usage line as one line: a line that does not start with the program name continues
    the one above (the usage blocks wrap at 100 columns, as git's do)."""
    body = parse_docstring_sections(doc).usage_body
    lines = []
    for raw in body.splitlines():
        line = " ".join(raw.split())
        if not line or line.lower() == "usage:":
            continue
        line = re.sub(r"^usage: ", "", line)
        if line.startswith(PROG + " "):
            lines.append(line)
        else:
            assert lines, f"usage block starts without the program name: {raw!r}"
            lines[-1] += " " + line
    return lines


def _option_values(doc):
    """{option: backticked words of its description} from the options: section."""
    values = {}
    current = None
    section = doc.split("\noptions:\n", 1)[1] if "\noptions:\n" in doc else ""
    for raw in section.splitlines():
        m = re.match(r"^  (\S+?)(?:=\S+)?(?:\s{2,}(.*))?$", raw)
        if m:                       # an option's (or an argument's) first line
            current = m.group(1) if m.group(1).startswith("-") else None
            text = m.group(2) or ""
        elif raw.startswith("   ") and current:
            text = raw
        else:
            current = None
            continue
        if current:
            values.setdefault(current, [])
            values[current] += re.findall(r"`([^`]+)`", text)
    return {opt: tuple(v) for opt, v in values.items() if v}


def _command(name, doc):
    lines = _usage_lines(doc)
    defined = parse_options(doc)
    leaves = parse_pattern(formal_usage(parse_docstring_sections(doc).usage_body), defined).flat()
    options, arguments, words = {}, [], []
    for leaf in leaves:
        if isinstance(leaf, Option):
            for spelling in (leaf.longer, leaf.short):
                if spelling:
                    options[spelling] = leaf.argcount > 0
        elif isinstance(leaf, DocoptCommand):       # a fixed word (docopt's Command is an Argument)
            if leaf.name not in words:
                words.append(leaf.name)
        elif isinstance(leaf, Argument):
            if leaf.name not in arguments:
                arguments.append(leaf.name)
    assert words[:1] == ["korus-mail"], (name, words)  # docopt's program is `git`
    if name is not None:
        words = words[1:]
    head = "korus-mail" if name is None else name
    assert words[:1] == [head], (name, words)
    if name is None:
        # the generic `<command> [<args>...]` line is the dispatcher, not a command's surface
        lines = [ln for ln in lines if "<command>" not in ln]
        arguments = []
    choices = tuple(w for w in words[1:] if w != "--")
    values = _option_values(doc)
    assert set(values) <= set(options), f"{name}: values for options it lacks: {values}"
    placeholders = dict(re.findall(r"(--[a-z-]+)=(<[a-z-]+>)", " ".join(lines)))
    assert set(placeholders) == {o for o, arg in options.items() if arg}, name
    return Command(name, tuple(lines), options, placeholders, values, tuple(arguments), choices,
                   "--" in words)


def commands():
    """{subcommand or None: Command}, in the order the cli lists them."""
    return {name: _command(name, doc) for name, doc in usage_docs().items()}


def subcommands():
    """The commands in the order the top-level usage lists them (`off / on` is two)."""
    listing = cli.USAGE.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    names = []
    for line in listing.splitlines():
        names += re.match(r"^  (\w+(?: / \w+)*)\s", line).group(1).split(" / ")
    return names


def all_options():
    """Every option spelling any usage block has."""
    return {opt for cmd in commands().values() for opt in cmd.options}
