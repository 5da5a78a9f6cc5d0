"""docopt parsing for cli.py, and the one-line usage errors it prints instead of docopt's dump:
each names the argument or option that is unknown, missing or unexpected, as git's do."""

import sys

EXIT_USAGE = 129   # as git does
EXIT_UNKNOWN_COMMAND = 1   # git's for `git sned`: not a usage error of a command, no usage follows
TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Sequence, Set, Tuple, Union

PROGRAM = "korus-mail"     # the usage lines say `git korus-mail <command>`: docopt's program is `git`


def parse(doc: str, argv: "Sequence[str]") -> "Union[Dict[str, Any], int]":
    from docopt import DocoptExit, docopt

    try:
        args: "Dict[str, Any]" = docopt(doc, argv=[PROGRAM] + list(argv), default_help=False)
    except DocoptExit:
        return usage_error(explain(doc, argv), doc)
    args.pop(PROGRAM, None)
    return args


def _shape(doc: str) -> "Tuple[Dict[str, bool], List[Tuple[str, bool]], List[Tuple[Set[str], int]]]":
    """({option: takes a value}, [(argument, required)] of the usage line that has the most
    arguments, [(the options, the argument count) of each usage line]), read from the usage block as docopt reads it."""
    from docopt import formal_usage, parse_docstring_sections, parse_options

    options: "Dict[str, bool]" = {}
    for o in parse_options(doc):
        for spelling in (o.longer, o.short):
            if spelling:
                options[spelling] = o.argcount > 0
    usage = parse_docstring_sections(doc).usage_body
    best: "List[Tuple[str, bool]]" = []
    lines: "List[Tuple[Set[str], int]]" = []
    for line in formal_usage(usage).split(" | "):
        args: "List[Tuple[str, bool]]" = []
        depth = 0
        opts = {w.split("=", 1)[0] for w in line.replace("(", " ").replace(")", " ").replace("[", " ")
                .replace("]", " ").split() if w.startswith("--") and w != "--"}
        for word in line.replace("[", " [ ").replace("]", " ] ").replace("(", " ").replace(")", " ").split():
            if word == "[":
                depth += 1
            elif word == "]":
                depth -= 1
            elif word.startswith("--"):
                if "=" in word:
                    options.setdefault(word.split("=", 1)[0].lstrip("("), True)
            elif "<" in word or "|" in word:
                args.append((word.strip("."), depth == 0))
        lines.append((opts, len(args)))
        if len(args) > len(best):
            best = args
    return options, best, lines


def explain(doc: str, argv: "Sequence[str]") -> str:
    """One line saying what was wrong: the unknown option, the argument missing, the one too many."""
    options, arguments, lines = _shape(doc)
    command, rest = argv[0], list(argv[1:])
    positional: "List[str]" = []
    while rest:
        a = rest.pop(0)
        if a == "--":
            positional += rest
            break
        if a.startswith("-") and a != "-":
            name = a.split("=", 1)[0]
            if name not in options:
                return f"unknown option '{name}' for '{command}'"
            if options[name] and "=" not in a:
                if not rest:
                    return f"option '{name}' of '{command}' needs a value"
                rest.pop(0)
            continue
        positional.append(a)
    if "(--to=" in doc and not any(a.startswith("--to") or a == "--all-worktrees" for a in argv):
        return f"'{command}' needs --to <dest> (or --all-worktrees)"
    if "] --to=" in doc and not any(a.startswith("--to") for a in argv):
        return f"'{command}' needs --to <dest>"
    if len(positional) > len(arguments):
        return f"unexpected argument '{_shown(positional[len(arguments)])}' for '{command}'"
    for (name, _required), value in zip(arguments, positional):
        if "|" in name and value not in name.split("|"):
            return f"'{command}' takes one of {', '.join(name.split('|'))}, not '{_shown(value)}'"
    missing = [name for name, required in arguments[len(positional):] if required]
    if missing:
        return f"'{command}' needs {missing[0]}"
    given = [a.split("=", 1)[0] for a in argv[1:] if a.startswith("--")]
    twice = sorted({a for a in given if given.count(a) > 1 and a != "--to"})
    if twice:
        return f"option '{twice[0]}' of '{command}' given more than once"
    given = sorted(set(given) - {"--"}, key=given.index)
    for i, a in enumerate(given):
        for b in given[i + 1:]:
            if not any(a in opts and b in opts for opts, _n in lines):
                return f"'{a}' and '{b}' of '{command}' exclude each other"
    fit = [n for opts, n in lines if set(given) <= opts]
    if given and fit and max(fit) < len(positional):
        return f"unexpected argument '{_shown(positional[max(fit)])}' for '{command} {given[0]}'"
    return f"'{command}': these options do not go together: {' '.join(_shown(a) for a in argv[1:])}"


def _shown(word: str) -> str:
    from git_korus_mail.core.render import field
    return field(word, 60)


def usage_error(line: str, doc: str) -> int:
    sys.stderr.write(f"git korus-mail: {line}\n\n{doc}")
    return EXIT_USAGE


def unknown_command(word: str, commands: "Iterable[str]") -> int:
    """As git says of `git sned`: one line, then the most similar commands if any are close."""
    import difflib

    names = sorted(set(commands) | {"drain", "help"})
    similar = difflib.get_close_matches(word, names, n=3, cutoff=0.6)
    sys.stderr.write(f"git korus-mail: '{_shown(word)}' is not a korus-mail command. See 'git korus-mail --help'.\n")
    if similar:
        sys.stderr.write("\nThe most similar command is\n" if len(similar) == 1 else
                         "\nThe most similar commands are\n")
        sys.stderr.write("".join(f"\t{s}\n" for s in similar))
    return EXIT_UNKNOWN_COMMAND
