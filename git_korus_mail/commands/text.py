"""Small text helpers the report commands share (list, status)."""


def more(n, what):
    """The line that says a listing was cut: how many were left out, and how to see them."""
    return f"... and {n} more {what} (--all shows every one)"


def safe(value):
    """A value read from disk (a name, a path, a field), as text safe for a terminal or an agent's
    context: every control, bidi or invisible character escaped by the drain's own rules."""
    from git_korus_mail.core import render
    text, _cut = render.escape_line(str(value), 1 << 20)
    return text
