"""`completion bash|zsh|fish`: print the completion script, for users who source it themselves."""

import os

SCRIPTS = {"bash": "git-korus-mail.bash", "zsh": "_git-korus-mail", "fish": "git-korus-mail.fish"}


def script_path(shell):
    here = os.path.dirname(os.path.abspath(__file__))
    # in a wheel the scripts ship inside the package; in a source checkout they sit beside it
    for base in (os.path.join(here, "completions"), os.path.join(os.path.dirname(here), "completions")):
        path = os.path.join(base, SCRIPTS[shell])
        if os.path.isfile(path):
            return path
    from git_korus_mail.errors import MailError
    raise MailError(f"the {shell} completion script is missing from this installation")


def run(shell, out):
    with open(script_path(shell), encoding="utf-8") as f:
        out.write(f.read())
    return 0
