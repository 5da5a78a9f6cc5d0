"""Command line: parse with docopt (one usage block per command) and dispatch. Nothing else.

`drain` is the hook hot path and is dispatched before docopt is imported: it runs
on every agent turn and must not pay for a parser it does not need.
"""

import os
import sys

USAGE = """\
usage: git korus-mail <command> [<args>...]
       git korus-mail --version
       git korus-mail -h | --help

Durable mail between AI coding-agent sessions in the worktrees of one git clone.

commands:
  send        queue a message for other worktrees' sessions
  ask         queue a question for one worktree and wait for its answer
  reply       answer a question, or reply to a message in its thread
  list        every box: worktree, counts, sessions
  who         every session of the clone: worktree, name, state, surface, config root
  status      this worktree's box, the fate of the mail it sent, recent events
  inbox       this worktree's mail, oldest first: sender, state, first line
  read        one message whole, without consuming it
  log         the clone's history, one line an event; --follow as it happens
  reserve     say which paths you are changing (told to other sessions before they edit them)
  cancel      withdraw a message sent from here that nobody has consumed
  forward     move a box's queued mail (one no worktree reads) to a worktree
  off / on    suppress / resume delivery everywhere (queued mail is kept)
  drain       the hook entry point (Claude Code runs it; reads hook JSON on stdin)
  install     wire this clone's worktrees to the drain
  uninstall   remove what install added (queued mail is kept)
  doctor      check wiring, permissions, claims, quarantine and clock
  release     let go of a claim whose owner you know is gone (doctor names them)
  completion  print a shell completion script (bash, zsh, fish)
  remote      mail between clones on several machines: add a NATS link, show it, remove it

`git korus-mail help <command>` shows a command's usage; `git help korus-mail` the manual.
"""

# every command that takes an id takes it by one rule (core/ids.py)
ID_FORMS = """\
<id> is the full id, a prefix only one message has, or its last 6 or more characters,
as the tool prints them (`…0f3c9a21`); an ambiguous <id> lists the ids it names.
"""

COMMANDS = {
    "send": """\
usage:
  git korus-mail send [--repo=<path>] (--to=<dest>)... [--kind=<kind>] [--ttl=<minutes>]
                      [--session=<id>] [--create] [--no-wake] [--wait=<seconds>] [--json] [--]
                      [<body>]
  git korus-mail send [--repo=<path>] --all-worktrees [--kind=<kind>] [--ttl=<minutes>] [--no-wake]
                      [--wait=<seconds>] [--json] [--] [<body>]

Queue <body> (or stdin when it is `-` or left out) for each destination.

options:
  --to=<dest>        a worktree path, `.`, `all` (worktrees with a live session),
                     a worktree name or the label list prints for it (ui or (ui)),
                     a session name as who shows it (or @<name>),
                     or a box key prefix (4+ chars); up to 8
  --all-worktrees    every other worktree of the clone
  --kind=<kind>      display-only label: `note`, `handoff`, `alert`, ...
                     (question, answer, reply: use ask and reply)
                     [default: note]
  --ttl=<minutes>    expire unread after this many minutes, 1 to 5256000 [default: 4320]
  --session=<id>     show only to this session id (a filter; the address stays the path)
  --create           allow a path that is no worktree of this clone
  --no-wake          do not wake an idle recipient (it gets the mail at its next prompt)
  --wait=<seconds>   wait up to this long for the proof of delivery, 0 to 60
                     (default: 2 s, for a wakeable session only)
  --repo=<path>      the clone whose queue to use (for a folder outside any clone)
  --json             machine-readable result
""",
    "ask": """\
usage:
  git korus-mail ask [--repo=<path>] --to=<dest> [--timeout=<seconds>] [--json] [--] [<question>]
  git korus-mail ask [--repo=<path>] --again=<id> [--timeout=<seconds>] [--json]

Queue <question> (or stdin when it is `-` or left out) for one worktree and wait for
the answer: its session answers with `reply`, or else its final message of the run
comes back. With no session there that can answer (one working) or be woken, or once
the session shown it stops running, the question stays queued and ask returns at once.
Exit 0 answered; 2 no answer in time or none can come soon (it arrives later as ordinary
mail); 3 ended unanswered (failed: the session ended or its run failed; stopped: interrupted).
Claude Code's Bash tool kills a command after 120 s by default (600 s at most): to wait
longer, give the tool call a timeout (up to 600000 ms) and a shorter --timeout.

options:
  --to=<dest>            a worktree path, a worktree name or a box key prefix, as for send
  --again=<id>           wait again for the answer to a question asked from here (after a
                         Ctrl-C or a timeout): nothing is queued again
  --timeout=<seconds>    give up waiting after this long, 1 to 604800 [default: 110]
  --repo=<path>          the clone whose queue to use
  --json                 machine-readable result
""",
    "reply": """\
usage:
  git korus-mail reply [--repo=<path>] <id> [--json] [--] [<body>]

Answer the question <id> with <body> (or stdin when it is `-` or left out); a question
is answered once. Any other message gets a reply in its thread, sent to its sender's
worktree.
""" + ID_FORMS + """
options:
  --repo=<path>   the clone whose queue to use
  --json          machine-readable result
""",
    "list": """\
usage:
  git korus-mail list [--repo=<path>] [--all] [--json]

Every box: each worktree of the clone, then any other box.

options:
  --repo=<path>   the clone whose queue to read
  --all           every session of each box (otherwise the latest 5, and how many more)
  --json          machine-readable (always every session)
""",
    "who": """\
usage:
  git korus-mail who [--repo=<path>] [--json]

Every session this clone's hooks have seen, under every config root and surface: its
worktree and branch, session id and name, config root, surface (terminal, -p/SDK, editor)
and state as of a time: working, idle, waiting, not responding, closed or gone.
A worktree with two live sessions is flagged: both are shown its mail, one consumes it.

options:
  --repo=<path>   the clone whose sessions to list
  --json          machine-readable
""",
    "status": """\
usage:
  git korus-mail status [--repo=<path>] [--all] [--clone] [--json]

This worktree's box, the fate of the mail it sent, and its latest journal events.

options:
  --repo=<path>   the clone whose queue to read
  --all           every message sent from here (otherwise the latest 20, and how many more)
  --clone         the latest journal events of every worktree, not only this one's
  --json          machine-readable, every field in full (sent_total counts what --all would show)
""",
    "inbox": """\
usage:
  git korus-mail inbox [--repo=<path>] [--all] [--json]

This worktree's mail, oldest first: id, sender (unverified), kind, sent time and age,
state (queued, shown to whom, consumed by whom, expired, cancelled, dropped, quarantined
and why) and the first line of the body. Nothing is consumed or marked as shown.

options:
  --repo=<path>   the clone whose queue to read
  --all           consumed, expired and cancelled mail too (what the store still keeps)
  --json          machine-readable, every detail
""",
    "read": """\
usage:
  git korus-mail read [--repo=<path>] <id> [--json] [--raw]

One message whole: headers, display markers and receipt, and the body with every control,
bidi and invisible character shown as an escape. It never consumes the message. This
worktree's box is searched first, then the clone's other boxes.
""" + ID_FORMS + """
options:
  --repo=<path>   the clone whose queue to read
  --json          machine-readable, every detail
  --raw           write the body's bytes unchanged, nothing else: to a pipe or file,
                  never a terminal (refused)
""",
    "log": """\
usage:
  git korus-mail log [--repo=<path>] [--follow] [--since=<when>] [--json]

The clone's history as a person follows it, oldest first, one line an event under 100
columns: sent (from, to, kind, first line), asked, shown (to which session, at which hook
event), consumed, expired, cancelled, dropped (which rule), answered (how), quarantined,
off and on. Every field is escaped as `read` escapes a body. It reads the journal and the
store and never changes them.

options:
  --follow          keep printing as things happen, until Ctrl-C or a closed pipe
  --since=<when>    only what happened since: a UTC time (2026-12-02T10:30) or a duration
                    back from now (90s, 30m, 2h, 3d, 1w)
  --repo=<path>     the clone whose history to read
  --json            one JSON object a line, each journal record with what the store adds
""",
    "cancel": """\
usage:
  git korus-mail cancel [--repo=<path>] <id>

Withdraw message <id>, sent from this worktree, that nobody has consumed: it is never
shown or consumed after this. A message already shown is still withdrawn, and you are told
that a model has seen it. Decided under the message's claim, so of a cancel and a
consume exactly one happens. Journaled.
""" + ID_FORMS + """
options:
  --repo=<path>   the clone whose queue to use
""",
    "forward": """\
usage:
  git korus-mail forward [--repo=<path>] <box> --to=<dest> [--json]

Move the queued mail of <box> into the box of <dest>: for a box that no worktree
reads any more, such as a removed worktree's (`list` and `doctor` flag those).
Each message keeps its id, so its sender's `status` still finds it. Nothing is deleted.

options:
  <box>           a box key, a unique key prefix (4+ chars), or the path it was for
  --to=<dest>     a worktree path, `.`, or a worktree name, as for send
  --repo=<path>   the clone whose queue to use
  --json          machine-readable result
""",
    "off": """\
usage:
  git korus-mail off [--repo=<path>]

Suppress delivery in every worktree; queued mail is kept.

options:
  --repo=<path>   the clone whose queue to switch
""",
    "on": """\
usage:
  git korus-mail on [--repo=<path>]

Resume delivery.

options:
  --repo=<path>   the clone whose queue to switch
""",
    "install": """\
usage:
  git korus-mail install [--repo=<path>] [--scope=<scope>] [--client=<client>] [--urgent] [--force]
                         [--trust-codex-config]

Wire a client's hooks to the drain for every worktree of the clone.

options:
  --scope=<scope>    `local` (each worktree's .claude/ or .codex/ settings) or `user`
                     (the client's own config dir, with a repo anchor) [default: local]
  --client=<client>  `claude`, `codex` (also trusts our hooks in Codex's config), `gemini` or `all`
                     [default: claude]
  --trust-codex-config
                     Codex, local scope: wire each worktree's .codex/hooks.json and trust each
                     worktree as a Codex project, which also turns on the repository's own
                     .codex/config.toml (sandbox_mode, mcp_servers commands). Without it, Codex
                     is wired in its user hooks.json and no project is trusted
  --urgent           arm the wake-up tier: new mail wakes an idle session (stays armed)
  --force            rewrite our entries even when they look current
  --repo=<path>      the clone to wire
""",
    "uninstall": """\
usage:
  git korus-mail uninstall [--repo=<path>] [--scope=<scope>] [--purge] [--yes]

Remove exactly what install added; queued mail is kept unless --purge.

options:
  --scope=<scope>   `local` or `user` [default: local]
  --purge           also delete the mail root (asks first; --yes when not on a tty)
  --yes             confirm --purge without asking
  --repo=<path>     the clone to unwire
""",
    "doctor": """\
usage:
  git korus-mail doctor [--repo=<path>] [--json]

Check the wiring, the mail root, claims, quarantine and the clock; exit 0 only when healthy.

options:
  --repo=<path>   the clone to check
  --json          machine-readable
""",
    "release": """\
usage:
  git korus-mail release [--repo=<path>] <id>

Release the claim on message <id>, for a claim whose owner you know is gone: one that
doctor says cannot be proven dead (taken on another host, in another pid namespace,
or with a mangled record). The store never does this by itself. The release is
journaled, and a claim whose owner is running on this machine is refused.
With a question's id, release the wait of the ask that asked it, so asks back to its
worktree are no longer refused; a wait whose ask still runs is refused.
""" + ID_FORMS + """
options:
  --repo=<path>   the clone whose queue to use
""",
    "completion": """\
usage:
  git korus-mail completion (bash|zsh|fish)
  git korus-mail completion [--repo=<path>] --ids=<command>

Print a completion script for the shell. With --ids, the ids that <command> (read, reply,
cancel or release) can take here, newest first, one a line: what the scripts offer. It
only reads.

options:
  --ids=<command>   read, reply, cancel or release
  --repo=<path>     the clone whose ids to list
""",
    "reserve": """\
usage:
  git korus-mail reserve [--repo=<path>] [--ttl=<minutes>] [--note=<text>] [--block] [--json] [--]
                         <pathspec>...
  git korus-mail reserve [--repo=<path>] --list [--json]
  git korus-mail reserve [--repo=<path>] --drop [--force] [--] <pathspec>...

Reserve paths of the repository you are changing: git pathspecs relative to the repository
root (`src/db`, `docs/*.md`, `:(glob)**/*.sql`). Before another session edits a reserved path
its model is told who holds it, why, until when, and how to reach them. From a session's
shell the reservation is that session's, from a terminal the person's. Reservations are
advisory: one that overlaps another's is made, and the overlap is said. A reservation lapses
at its TTL and when its session's client process is gone.

options:
  --ttl=<minutes>   lapse after this many minutes, 1 to 10080 [default: 240]
  --note=<text>     why: told to whoever is about to edit the paths (500 characters at most)
  --block           also refuse the edits where the client lets a hook refuse one (Claude
                    Code); the refusal says how the person lifts it
  --list            every reservation of the clone: who, where, since, until, the note
  --drop            end your reservations made with these pathspecs (or these ids)
  --force           with --drop: end another's reservation too (the person's override)
  --repo=<path>     the clone
  --json            machine-readable
""",
    "remote": """\
usage:
  git korus-mail remote [--repo=<path>] [--json]
  git korus-mail remote add [--repo=<path>] <url> [--label=<name>] [--creds=<file>]
  git korus-mail remote remove [--repo=<path>] [--force]

Carry mail to the clones of this repository on other machines, over a NATS JetStream
server (docs/RELAY.md). `remote add` joins the server's namespace for this repository and
starts this clone's relay (one per clone); `remote` shows the link, its lag and the outbox
(and starts the relay if none runs); `remote remove` stops the relay and undoes all of it.
Then `send --to <label>:<worktree>` mails a worktree of another clone.

options:
  <url>            the server, nats://host:port or tls://host:port
  --label=<name>   this clone's name for the others (default: the host name)
  --creds=<file>   a NATS credentials file (user JWT and nkey seed)
  --force          remove even while mail waits in the outbox (it is never sent)
  --repo=<path>    the clone
  --json           machine-readable
""",
}

# Not in COMMANDS: `drain` is dispatched before docopt and parses its one option by hand.
DRAIN_USAGE = """\
usage:
  git korus-mail drain [--client=<name>] [--repo=<path>] [--watch]

The hook entry point a client's stub (written by install) runs at every hook event: the
event's JSON on stdin, the answer (hook JSON, or nothing) on stdout. Not for typing.

options:
  --client=<name>   whose hook protocol: `claude`, `codex` or `gemini` [default: claude]
  --repo=<path>     the clone whose queue to use (for a session outside any clone)
  --watch           the wake-up tier's watcher (install --urgent): wait for new mail, then wake
"""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Sequence

EXIT_USAGE = 129   # as git does (commands/argv.py writes usage errors)
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


def main(argv: "Optional[Sequence[str]]" = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["drain"]:
        if "-h" in argv or "--help" in argv:
            sys.stdout.write(DRAIN_USAGE)
            return EXIT_USAGE if "-h" in argv else 0
        if _typed_at_a_terminal():
            sys.stderr.write("git korus-mail: drain is the hook entry point (install wires it): it reads one "
                             "hook event's JSON on stdin; not for typing\n")
            return EXIT_USAGE
        from git_korus_mail.commands import drain  # the hot path: no docopt, no pygit2
        return drain.main(argv[1:])
    if argv[:1] == ["guard-commit"]:
        # git's pre-commit hook (wiring/precommit.py), once the clone holds a reservation
        from git_korus_mail.commands import guard
        return guard.main(argv[1:])
    from git_korus_mail.shell import on_sigint  # not `import signal` (enum): shell.on_sigint says why
    on_sigint(_interrupt_once)
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, not at exit: a closed pipe must reach the handler below
        return status
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `| head` closed the pipe: be quiet, and keep Python from complaining at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _interrupt_once(signum: int, frame: object) -> None:
    """Ctrl-C reaches us twice when run as `git korus-mail`: from the terminal, and again from
    git, which forwards it to its child. The first stops the command; the second, arriving while
    the first is reported, must not end it with a traceback (issue 25), so it is ignored."""
    from git_korus_mail.shell import on_sigint
    on_sigint("ignore")
    raise KeyboardInterrupt


def _typed_at_a_terminal() -> bool:
    """stdin is a terminal: a person typed `drain`, which would wait in silence for hook JSON.
    A client always pipes the payload (docs/HOOKS.md), so this never refuses a hook."""
    try:
        return os.isatty(0)
    except OSError:
        return False


def _main(argv: "Sequence[str]") -> int:
    from git_korus_mail import __version__
    from git_korus_mail.errors import MailError, UsageError
    from git_korus_mail.commands.argv import parse, unknown_command, usage_error
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if argv else EXIT_USAGE
    if argv[0] == "help":  # as `git help <command>`, but our manual is one page: the command's usage
        if len(argv) > 2:
            return usage_error(f"unexpected argument '{argv[2]}' after 'help {argv[1]}'", USAGE)
        if len(argv) == 1:
            sys.stdout.write(USAGE)
            return 0
        topic = argv[1]
        if topic in COMMANDS or topic == "drain":
            sys.stdout.write(DRAIN_USAGE if topic == "drain" else COMMANDS[topic])
            return 0
        return unknown_command(topic, COMMANDS)
    if argv[0] in ("--version", "-V", "version"):
        if len(argv) > 1:
            return usage_error(f"unexpected argument '{argv[1]}' after '{argv[0]}'", USAGE)
        sys.stdout.write(f"git-korus-mail {__version__}\n")
        return 0
    command = argv[0]
    if command not in COMMANDS:
        return unknown_command(command, COMMANDS)
    doc = COMMANDS[command]
    options = argv[1:argv.index("--") if "--" in argv else None]
    if "-h" in options:  # as git's `git commit -h`: the usage on stdout, exit 129
        sys.stdout.write(doc)
        return EXIT_USAGE
    if "--help" in options:  # asked for in full: help, not a mistake
        sys.stdout.write(doc)
        return 0
    from git_korus_mail.commands.argv_fast import quick
    fast = quick(command, list(argv))  # send, ask, reply as typed in a tool call: no docopt (issue 26)
    args = parse(doc, argv) if fast is None else fast
    if isinstance(args, int):
        return args
    try:
        return _dispatch(command, args)
    except UsageError as exc:
        return usage_error(str(exc), doc)
    except MailError as exc:
        sys.stderr.write(f"git korus-mail: {exc}\n")
        return EXIT_ERROR
    except BrokenPipeError:
        raise  # a reader that went away is not an error (handled quietly in main)
    except OSError as exc:
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        sys.stderr.write(f"git korus-mail: {exc.strerror or exc}{':' + where if where else ''}\n")
        return EXIT_ERROR


# the commands whose lines a person reads may hold paths; not `read`, `inbox` or `ask`, which print
# a message's body as it is (they fit their own lines), nor `status` (it fits its own)
FITTED = ("send", "who", "list", "reserve", "cancel", "forward", "install", "uninstall", "doctor", "release",
          "reply", "off", "on")


def _dispatch(command: str, args: "Dict[str, Any]") -> int:
    """Turn docopt's dict into the command's own typed arguments, then run it: no command
    sees the dict. `--repo` is not an argument of the command: it picks the clone."""
    from git_korus_mail.commands.params import typed
    out = sys.stdout
    if command == "completion" and not args.get("--ids"):
        from git_korus_mail.commands import completion  # what `typed` names for it
        _module, params = typed(command, args)
        return completion.run(params, out)  # a script: the one command that needs no clone
    from git_korus_mail.core.clone import Clone

    # first: outside a clone, that is the error to report. The commands that wire the clone
    # list its worktrees as pygit2 does; the others read the common dir (core/worktrees.py)
    clone = Clone(repo_opt=args.get("--repo"), exact=command in ("install", "uninstall", "doctor"))
    if command in FITTED and not args.get("--json"):
        from git_korus_mail.commands.text import fitted
        out = fitted(out)  # lines under 100 columns, paths cut from the start (issue 25, "Width")
    try:
        module, params = typed(command, args)
        return module.run(clone, params, out)
    finally:
        out.flush()
        # the journal is history: a line it could not take is a warning, never the command's failure
        root = clone.opened_root()
        for fault in (root.take_journal_faults() if root is not None else ()):
            sys.stderr.write(f"git korus-mail: warning: {fault}\n")


if __name__ == "__main__":
    sys.exit(main())
