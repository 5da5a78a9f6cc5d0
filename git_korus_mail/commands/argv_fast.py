"""The common spellings of `send`, `ask` and `reply` parsed by hand, into the very dict docopt
would make: what a model types in a tool call should not pay for docopt and `re` (together
more than the whole rest of a `send`: issue 26, bench/RESULTS.md row 3).

Only what is certain is parsed here: each option spelled in full (`--to=x` or `--to x`), once
(`--to` as often as send allows), positional arguments where the usage puts them, `--` before
a body that starts with `-`. Anything else (an abbreviation, a short option, `-h`, an option
that needs a value at the end, a combination the usage forbids, one argument too many) returns
None, and cli.py hands the command line to docopt as before, which parses it or says what is
wrong. tests/test_argv_fast.py holds every dict made here equal to docopt's for the same line.
"""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    Spec = Tuple[Dict[str, Any], Tuple[str, ...], Tuple[str, ...]]

_LIST = object()  # an option given once or more, collected in a list

# command: ({option taking a value: its default as the usage's [default: ...] says}, (flags),
# (positional arguments in order)); the usage blocks are cli.COMMANDS
SPECS: "Dict[str, Spec]" = {
    "send": ({"--repo": None, "--to": _LIST, "--kind": "note", "--ttl": "4320", "--session": None,
              "--wait": None},
             ("--all-worktrees", "--create", "--no-wake", "--json"), ("<body>",)),
    "ask": ({"--repo": None, "--to": None, "--again": None, "--timeout": "110"}, ("--json",), ("<question>",)),
    "reply": ({"--repo": None}, ("--json",), ("<id>", "<body>")),
}


def quick(command: str, argv: "List[str]") -> "Optional[Dict[str, Any]]":
    """docopt's dict for `argv` (argv[0] is the command), or None: then docopt decides."""
    spec = SPECS.get(command)
    if spec is None:
        return None
    values, flags, positionals = spec
    args: "Dict[str, Any]" = {command: True, "--": False}
    given: "Dict[str, Any]" = {}
    found: "List[str]" = []
    rest = list(argv[1:])
    while rest:
        word = rest.pop(0)
        if args["--"] or word == "-" or not word.startswith("-"):
            if len(found) == len(positionals):
                return None  # one too many: docopt names it
            if command == "reply" and not found and args["--"]:
                return None  # <id> after `--`: the usage puts `--` after it
            found.append(word)
            continue
        if word == "--":
            args["--"] = True
            continue
        if not word.startswith("--"):
            return None  # a short option (none of these commands has one)
        name, eq, value = word.partition("=")
        if name in flags:
            if eq or name in given:
                return None
            given[name] = True
        elif name in values:
            if not eq:
                if not rest or rest[0].startswith("-"):
                    return None  # missing, or a value that looks like an option: docopt decides
                value = rest.pop(0)
            if values[name] is _LIST:
                given.setdefault(name, []).append(value)
            elif name in given:
                return None
            else:
                given[name] = value
        else:
            return None  # unknown or abbreviated
    if not _shape_ok(command, given, found):
        return None
    for name, default in values.items():
        args[name] = given.get(name, [] if default is _LIST else default)
    for name in flags:
        args[name] = given.get(name, False)
    for i, name in enumerate(positionals):
        args[name] = found[i] if i < len(found) else None
    return args


def _shape_ok(command: str, given: "Dict[str, Any]", found: "List[str]") -> bool:
    """Whether the options given fit one of the command's usage lines."""
    if command == "send":
        if "--all-worktrees" in given:
            return not any(o in given for o in ("--to", "--session", "--create"))
        return "--to" in given
    if command == "ask":
        return "--to" in given and "--again" not in given  # `ask --again` is docopt's to parse
    return len(found) >= 1  # reply: <id> is required
