"""Small text helpers the report commands share (list, status, and the lines others add to them)."""

import posixpath

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import IO, Callable, List, Mapping, Optional, Tuple

WIDTH = 99  # a report line's most columns on a terminal: under 100 (full detail is in --json)


def more(n: int, what: str) -> str:
    """The line that says a listing was cut: how many were left out, and how to see them."""
    return f"... and {n} more {what} (--all shows every one)"


def safe(value: object) -> str:
    """A value read from disk (a name, a path, a field), as text safe for a terminal or an agent's
    context: every control, bidi or invisible character escaped by the drain's own rules. A
    missing value is `-` and a flag is yes or no: a person reads words, never Python's repr
    (issue 25: `session None`, `wake False`)."""
    from git_korus_mail.core import render
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text, _cut = render.escape_line(str(value), 1 << 20)
    return text


def columns(text: str) -> int:
    """Terminal columns of escaped text: wide (East Asian) characters take two. Here, not in
    mailtext.py (which uses it too): text.py is below mailtext.py, no circle (test_layers)."""
    if text.isascii():
        return len(text)
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def fit(line: str, width: int = WIDTH) -> str:
    """`line` (already safe) cut to `width` columns with a closing `…`."""
    return line if len(line) <= width else line[:width - 1] + "…"


def fit_path(head: str, path: str, tail: str, width: int = WIDTH) -> str:
    """`head + path + tail` under `width` columns, cutting the path (already safe) from its start
    with a leading `…`: the worktree's name at the end and the tail (an as-of time) stay."""
    room = width - len(head) - len(tail)
    if len(path) > room:
        path = "…" + path[-(room - 1):] if room > 1 else ""
    return fit(head + path + tail, width)


def wrap(line: str, width: int = WIDTH, indent: int = 9) -> "List[str]":
    """`line` (already safe) as lines under `width` columns, broken at spaces, each after the
    first indented by `indent`; a word longer than a line's room (a path) is cut from its start
    with a leading `…`, as fit_path cuts one (--json has it whole)."""
    room = width - indent
    body = line.lstrip(" ")
    out: "List[str]" = []
    cur = line[:len(line) - len(body)]  # a continuation line keeps its own indent
    for word in body.split(" "):
        if len(word) > room:
            word = "…" + word[-(room - 1):]
        joined = cur + word if not cur.strip() else f"{cur} {word}"
        if len(joined) <= width or not cur.strip():
            cur = joined
        else:
            out.append(cur.rstrip())
            cur = " " * indent + word
    out.append(cur.rstrip())
    return out


def clock(stamp: object, as_of: object) -> str:
    """A stamp read from disk, short: `10:44:24` on the as-of day, `11-30 23:05` before it, the
    stamp itself (made safe) when it is no stamp. The block's as-of time says which day."""
    if not isinstance(stamp, str) or len(stamp) < 19 or stamp[10] != "T":
        return safe(stamp if stamp is not None else "-")
    if isinstance(as_of, str) and as_of[:10] == stamp[:10]:
        return safe(stamp[11:19])
    return safe(f"{stamp[5:10]} {stamp[11:16]}")


def as_of(stamp: object) -> str:
    """A block's one as-of time: `2026-12-01 10:44:24Z`."""
    if not isinstance(stamp, str) or len(stamp) < 19:
        return safe(stamp)
    return safe(f"{stamp[:10]} {stamp[11:19]}Z")


def session(value: object, n: int = 8) -> str:
    """A session id by its first characters (status --json has it whole)."""
    return "-" if not value else safe(str(value)[:n])


def relative(path: object, here: object) -> str:
    """A worktree path as seen from `here` (`../api`) when that is shorter; made safe."""
    if not isinstance(path, str) or not path:
        return "?"
    if posixpath.isabs(path) and isinstance(here, str) and posixpath.isabs(here):
        rel = posixpath.relpath(path, here)
        if len(rel) < len(path):
            return safe(rel)
    return safe(path)


def block(out: "IO[str]", title: str, stamp: object = None) -> None:
    """Start a block of a report: a blank line, then its title with its one as-of time."""
    out.write("\n" + fit(f"{title}{'  (as of ' + as_of(stamp) + ')' if stamp else ''}") + "\n")


def row(out: "IO[str]", left: str, state: str = "", right: str = "",
        colour: "Optional[Callable[[str], str]]" = None) -> None:
    """One indented line of a block, under WIDTH columns: `left`, then `state` (coloured when
    `colour` is given), then `right`. Every part already safe. When the whole is too wide,
    `state` and `right` go on a second, deeper line; what still does not fit is cut."""
    paint: "Callable[[str], str]" = colour if colour is not None and state else (lambda text: text)
    if len(f"  {left}{state}{right}") <= WIDTH:
        out.write(f"  {left}{paint(state)}{right}\n")
        return
    if not state and not right:
        out.write(fit(f"  {left}") + "\n")
        return
    out.write(fit(f"  {left.rstrip()}") + "\n")
    rest = f"    {state}{right}"
    out.write((f"    {paint(state)}{right}" if len(rest) <= WIDTH else fit(rest)) + "\n")


def wrapped(out: "IO[str]", text: str, indent: str = "  ", then: str = "    ") -> None:
    """A long sentence (already safe) over as many lines as it takes, each under WIDTH columns."""
    import textwrap
    for line in textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=then,
                              break_long_words=True, break_on_hyphens=False):
        out.write(line + "\n")


# -- what a person reads: one time format, lines under 100 columns (issue 25) ---------------------
_ESC = "\x1b"


def _visible(line: str) -> int:
    """Columns of a line as a terminal shows it: colour codes take none, wide characters two."""
    if _ESC in line:
        import re
        line = re.sub("\x1b\\[[0-9;]*m", "", line)
    return columns(line)


def person_time(stamp: object) -> str:
    """The one time format a person reads: `2026-12-01 10:44:24Z` (UTC, to the second); a stored
    stamp has microseconds and a `T`, which --json keeps."""
    return as_of(stamp)


def _stamps_for_people(line: str) -> str:
    """Every stored stamp in a line (`2026-12-01T10:44:24.123456Z`) in the person's format.
    A message id (`20261201T104424.123456Z-...`) has no dashes in its date and is left alone."""
    if "T" not in line or "Z" not in line:
        return line
    # what re.sub(r"\b(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d{1,9})?Z", r"\1 \2Z", line) does, by
    # hand: `import re` (with enum) was 9 ms of CPU in every send, ask and reply that prints a
    # stamp (issue 26); tests/test_text_stamps.py holds the two equal
    out: "List[str]" = []
    done = 0
    at = line.find("T", 10)
    while at >= 0:
        end = _stamp_end(line, at)
        if end:
            out.append(line[done:at] + " " + line[at + 1:at + 9] + "Z")
            done = end
        at = line.find("T", max(at + 1, done + 10))
    return "".join(out) + line[done:] if out else line


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # re's \w on str


def _digits(text: str) -> bool:
    return all(ch.isdecimal() for ch in text)  # re's \d on str: any decimal digit, as \d takes


def _stamp_end(line: str, t: int) -> int:
    """The end of the stamp whose `T` is at `t` (as the pattern above matches it), or 0."""
    date, clock = line[t - 10:t], line[t + 1:t + 9]
    if len(clock) < 8 or (t > 10 and _is_word(line[t - 11])):
        return 0
    if not (date[4] == date[7] == "-" and _digits(date[:4] + date[5:7] + date[8:])
            and clock[2] == clock[5] == ":" and _digits(clock[:2] + clock[3:5] + clock[6:])):
        return 0
    i = t + 9
    if line[i:i + 1] == ".":
        j = i + 1
        while j < len(line) and line[j].isdecimal():
            j += 1
        if 1 <= j - i - 1 <= 9 and line[j:j + 1] == "Z":
            return j + 1
    return i + 1 if line[i:i + 1] == "Z" else 0


def _path_span(line: str) -> "Optional[Tuple[int, int]]":
    """(start, end) of the first absolute path in `line` (after the start, a space, `(` or `=`).
    A path may hold spaces, so it ends at the end of its segment's last word that holds a `/`,
    where a segment ends at two spaces, `: ` or ` (`, which separate the fields of our lines."""
    for i, ch in enumerate(line):
        if ch in "/~" and (i == 0 or line[i - 1] in " (='\"") and line[i:i + 2] != "//" \
                and (ch == "/" or line[i + 1:i + 2] == "/"):
            seg = len(line)
            for sep in ("  ", ": ", " ("):
                at = line.find(sep, i)
                if at >= 0:
                    seg = min(seg, at)
            last = line.rfind("/", i, seg)
            end = line.find(" ", last, seg)
            end = seg if end < 0 else end
            while end > last + 1 and line[end - 1] in ":),;'\"":
                end -= 1
            return i, end
    return None


def person_lines(line: str, width: int = WIDTH, indent: int = 4) -> "List[str]":
    """`line` as lines of at most `width` columns for a person: when cutting a path in it from its
    start (`…/name`, keeping at least its last 24 characters), as status cuts one, makes the line
    fit, it is cut; else the line is broken at spaces, continued `indent` columns in, its paths
    whole where they fit a line. --json has every path whole."""
    line = _stamps_for_people(line)
    over = _visible(line) - width
    if over <= 0:
        return [line]
    span = _path_span(line)
    if span is not None and _ESC not in line[span[0]:span[1]]:
        start, end = span
        keep = (end - start) - over - 1
        if keep >= 24:
            return [line[:start] + "…" + line[end - keep:end] + line[end:]]
    return wrap(line, width, indent=indent)


def raw(out: "IO[str]", line: str) -> None:
    """Write `line` (ending in a newline) whole on `out`, Fitted or not: a command to copy."""
    getattr(out, "raw", out.write)(line)


# the words a person reads for the counts (--json keeps the store's names: inbox, seen, ...):
# one vocabulary with inbox and read, where "shown" means displayed to a model and "consumed"
# means settled for good (issue 25: "seen" in the counts meant consumed)
COUNT_WORDS = {"inbox": "queued", "claiming": "claimed", "seen": "consumed", "expired": "expired",
               "cancelled": "cancelled"}


def counts(values: "Mapping[str, object]", sep: str = "  ") -> str:
    """`queued 1  claimed 0  consumed 3 ...` from a box's counts, in the person's words."""
    return sep.join(f"{COUNT_WORDS.get(k, safe(k))} {v}" for k, v in values.items())


def retention(days: int) -> str:
    """The one wording of retention, wherever a person reads it (status, doctor, report)."""
    from git_korus_mail.core.report import retention_words
    return retention_words(days)


class Fitted:
    """A text stream whose every line is written as person_lines makes it (commands that print
    paths: install, uninstall, doctor, who, send, list, cancel)."""

    def __init__(self, out: "IO[str]", width: int = WIDTH) -> None:
        self.out, self.width, self.pending = out, width, ""

    def write(self, text: str) -> int:
        self.pending += text
        *done, self.pending = self.pending.split("\n")
        for line in done:
            for piece in person_lines(line, self.width):
                self.out.write(piece + "\n")
        return len(text)

    def raw(self, line: str) -> None:
        """A command a person copies (a fix, a setup line): written whole, since a cut or a break
        would make it wrong; only its stamps change."""
        self.write("")
        self.out.write(_stamps_for_people(line))

    def flush(self) -> None:
        if self.pending:  # a prompt (`[y/N] `) is written as it is, without a newline
            self.out.write(self.pending)
            self.pending = ""
        self.out.flush()


def fitted(out: "IO[str]", width: int = WIDTH) -> "IO[str]":
    """`out` as a Fitted stream, for a command's run(clone, args, out): Fitted has every method
    the commands call on a stream (write, flush, and raw through text.raw), not all of IO's."""
    return Fitted(out, width)  # type: ignore[return-value]
