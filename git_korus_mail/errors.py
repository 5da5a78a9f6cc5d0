"""The one error type a command reports as `git korus-mail: <message>`, exit 1."""


class MailError(Exception):
    """A runtime failure with a message meant for the user, on one line."""


class UsageError(MailError):
    """A bad option value: reported as one line plus the command's usage, exit 129 (as git does)."""
