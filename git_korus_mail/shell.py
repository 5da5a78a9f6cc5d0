"""Quoting for /bin/sh: the shell hook commands, stubs and printed advice are run with."""


def sh_quote(text: str) -> str:
    """Single-quote `text` for /bin/sh, whatever it holds."""
    return "'" + text.replace("'", "'\\''") + "'"
