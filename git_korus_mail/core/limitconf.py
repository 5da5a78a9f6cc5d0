"""The receiver's limits as numbers (docs/DESIGN.md, "Limits"): one place, per clone.

Set with `git config korus-mail.backlog 50`, `korus-mail.loop-seconds 10`, `korus-mail.rate 8/30`
(in the clone's own config, `<git-common-dir>/config`). Read here by parsing that file with
plain string operations, never by starting git: the drain reads the numbers on every event
that has mail to judge, and an event must not spawn a process (docs/HOOKS.md). The price:
`include.path` and the user's global config are not followed; `doctor` prints what is read.
"""

import os

from git_korus_mail.errors import MailError
from git_korus_mail.store.message import KIND_ANSWER

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Tuple

ANSWER = KIND_ANSWER  # the kind every limit exempts: an answer to a question is always accepted
SECTION = "korus-mail"
BACKLOG, LOOP, RATE = "backlog", "loop-seconds", "rate"
DEFAULTS = {BACKLOG: "50", LOOP: "10", RATE: "8/30"}
MAX_CONFIG_BYTES = 1024 * 1024  # a clone's config is a few KB; a larger one is read this far


class Limits:
    """backlog: unread messages a box takes before send refuses and the drain holds back;
    loop_seconds: the same text again within this is a loop (0: off); rate: at most
    `rate_count` messages from one sender within `rate_seconds`."""

    def __init__(self, backlog: int, loop_seconds: float, rate_count: int, rate_seconds: float) -> None:
        self.backlog, self.loop_seconds = backlog, loop_seconds
        self.rate_count, self.rate_seconds = rate_count, rate_seconds

    def describe(self) -> str:
        loop = f"{_num(self.loop_seconds)} s" if self.loop_seconds > 0 else "off"
        return (f"backlog {self.backlog}, loop {loop}, rate {self.rate_count} per {_num(self.rate_seconds)} s"
                f" (git config {SECTION}.{BACKLOG} / .{LOOP} / .{RATE})")


def _num(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


def check(name: str, text: str) -> "Tuple[int, float, int, float]":
    """Validate one setting as typed; MailError (one line, with the accepted form) when bad.
    Returns the fields it sets, the others zero."""
    where = f"git config {SECTION}.{name} {text!r}"
    try:
        if name == BACKLOG:
            n = int(text)
            if not 1 <= n <= 100000:
                raise ValueError
            return n, 0.0, 0, 0.0
        if name == LOOP:
            s = float(text)
            if not 0 <= s <= 86400 or s != s:
                raise ValueError
            return 0, s, 0, 0.0
        count, slash, secs = text.partition("/")
        c, s = int(count), float(secs)
        if not slash or not 1 <= c <= 100000 or not 0 < s <= 86400:
            raise ValueError
        return 0, 0.0, c, s
    except ValueError:
        form = {BACKLOG: "a whole number from 1 to 100000",
                LOOP: "seconds from 0 (off) to 86400",
                RATE: "<messages>/<seconds>, e.g. 8/30"}[name]
        raise MailError(f"{where}: not valid; use {form}") from None


def read(common_dir: str, faults: "Optional[List[str]]" = None) -> Limits:
    """The clone's limits. A bad setting raises MailError, unless `faults` is given (the drain):
    then it is reported there and its default used, so a typo never stops delivery."""
    values = dict(DEFAULTS)
    values.update(settings(common_dir))
    got: "Dict[str, Tuple[int, float, int, float]]" = {}
    for name in (BACKLOG, LOOP, RATE):
        try:
            got[name] = check(name, values[name])
        except MailError as exc:
            if faults is None:
                raise
            faults.append(f"{exc}; using {DEFAULTS[name]}")
            got[name] = check(name, DEFAULTS[name])
    return Limits(got[BACKLOG][0], got[LOOP][1], got[RATE][2], got[RATE][3])


def report(common_dir: str) -> "Tuple[bool, str]":
    """(ok, one line) for `doctor`: the numbers in force, or the bad setting."""
    try:
        return True, read(common_dir).describe()
    except MailError as exc:
        return False, f"{exc} (the drain uses the default meanwhile)"


def settings(common_dir: str) -> "Dict[str, str]":
    """{name: value} of the [korus-mail] section in `<common_dir>/config`, the last value of each
    winning as with `git config --get`; names are case-insensitive. An unreadable file: {}."""
    try:
        with open(os.path.join(common_dir, "config"), "rb") as f:
            text = f.read(MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        return {}
    out: "Dict[str, str]" = {}
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            head, _, rest = line[1:].partition("]")
            inside = head.strip().lower() == SECTION  # a subsection (`[korus-mail "x"]`) is not ours
            line = rest.strip()  # git allows `[section] key = value` on one line
            if not line or line[0] in "#;":
                continue
        if not inside:
            continue
        key, eq, value = line.partition("=")
        key = key.strip().lower()
        if key in DEFAULTS:
            out[key] = _value(value) if eq else "true"
    return out


def _value(raw: str) -> str:
    """A config value: quotes removed, a comment outside them cut, `\\"` and `\\\\` unescaped."""
    out: "List[str]" = []
    quoted = escaped = False
    for c in raw.strip():
        if escaped:
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
    return "".join(out).strip()
