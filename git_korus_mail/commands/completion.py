"""`completion bash|zsh|fish`: print the completion script, for users who source it themselves.
`completion --ids=<command>`: the ids that command takes here, for those scripts (core/ids.py)."""

from dataclasses import dataclass

TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, Any

    from git_korus_mail.core.clone import Clone

SCRIPTS = {"bash": "git-korus-mail.bash", "zsh": "_git-korus-mail", "fish": "git-korus-mail.fish"}


def script_path(shell: str) -> str:
    from git_korus_mail.shipped import shipped_file
    path = shipped_file("completions", SCRIPTS[shell])
    if path is not None:
        return path
    from git_korus_mail.errors import MailError
    raise MailError(f"the {shell} completion script is missing from this installation")


@dataclass(frozen=True)
class CompletionArgs:
    shell: str   # one of SCRIPTS


@dataclass(frozen=True)
class IdsArgs:
    command: str   # one of ids.COMPLETED


def run(*given: "Any") -> int:  # Any: two call forms, told apart by their count
    """run(CompletionArgs, out), which needs no clone, or run(clone, IdsArgs, out)."""
    if len(given) == 3:
        return _ids(*given)
    args, out = given
    shell = args.shell
    with open(script_path(shell), encoding="utf-8") as f:
        out.write(f.read())
    return 0


def _ids(clone: "Clone", args: IdsArgs, out: "IO[str]") -> int:
    from git_korus_mail.core import ids
    from git_korus_mail.errors import UsageError
    if args.command not in ids.COMPLETED:
        raise UsageError(f"--ids {args.command!r}: expected {', '.join(ids.COMPLETED)}")
    for msg_id in ids.candidates(clone, args.command):
        out.write(msg_id + "\n")
    return 0
