"""docopt parsing for cli.py, and the one-line usage errors it prints instead of docopt's dump."""

import sys

EXIT_USAGE = 129   # as git does


def parse(doc, argv):
    from docopt import DocoptExit, docopt

    try:
        return docopt(doc, argv=argv, default_help=False)
    except DocoptExit:
        return usage_error(explain(doc, argv), doc)


def explain(doc, argv):
    """One line saying what was wrong, instead of docopt's dump of unmatched tokens."""
    known = set()
    for word in doc.replace("[", " ").replace("]", " ").replace("(", " ").replace(")", " ").split():
        if word.startswith("--"):
            known.add(word.split("=", 1)[0].rstrip(".,"))
    for a in argv[1:]:
        if a == "--":
            break
        if a.startswith("-") and a != "-" and a.split("=", 1)[0] not in known:
            return f"unknown option '{a.split('=', 1)[0]}' for '{argv[0]}'"
    if "(--to=" in doc and not any(a.startswith("--to") or a == "--all-worktrees" for a in argv):
        return f"'{argv[0]}' needs --to <dest> (or --all-worktrees)"
    if "] --to=" in doc and not any(a.startswith("--to") for a in argv):
        return f"'{argv[0]}' needs --to <dest>"
    return f"'{argv[0]}': missing or unexpected arguments"


def usage_error(line, doc):
    sys.stderr.write(f"git korus-mail: {line}\n\n{doc}")
    return EXIT_USAGE
