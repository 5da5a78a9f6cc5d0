"""`completion bash|zsh|fish`: print the completion script, for users who source it themselves."""

from dataclasses import dataclass

SCRIPTS = {"bash": "git-korus-mail.bash", "zsh": "_git-korus-mail", "fish": "git-korus-mail.fish"}


def script_path(shell):
    from git_korus_mail.shipped import shipped_file
    path = shipped_file("completions", SCRIPTS[shell])
    if path is not None:
        return path
    from git_korus_mail.errors import MailError
    raise MailError(f"the {shell} completion script is missing from this installation")


@dataclass(frozen=True)
class CompletionArgs:
    shell: str   # one of SCRIPTS


def run(args, out):
    shell = args.shell
    with open(script_path(shell), encoding="utf-8") as f:
        out.write(f.read())
    return 0
