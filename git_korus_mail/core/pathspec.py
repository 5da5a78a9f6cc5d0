"""git pathspecs, matched in pure Python (issue 29's reservations): no pygit2 and no `re` on the
hook path, and bounded: a pathspec of at most MAX_PATHSPEC characters, wildmatch by dynamic
programming (O(pattern x path), never exponential). Relative to the repository root; held to
`git ls-files -- <pathspec>` by tests/test_reservations.py.

Magic understood: top (`:/`), literal, glob, icase, exclude (`:!`, `:^`). Without glob (git's
default) `*` and `?` cross `/`; a pathspec without wildcards also names what lies under it.
"""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Iterable, List, Optional, Sequence, Tuple

MAX_PATHSPEC = 512
MAX_PATHSPECS = 64
# pathspec magic we understand (git's long names); anything else is refused at reserve time
MAGIC = ("top", "literal", "glob", "icase", "exclude")

class BadPathspec(ValueError):
    """A pathspec this matcher does not take, with the one line that says why."""


def parse_pathspec(spec: str) -> "Tuple[frozenset[str], str]":
    """(magic words, pattern) of a git pathspec: `:(glob,icase)src/**`, `:!gen`, `:/x`, `x`.
    BadPathspec for magic we do not model (attr, unknown words) or an empty pattern."""
    if len(spec) > MAX_PATHSPEC:
        raise BadPathspec(f"pathspec is {len(spec)} characters, over {MAX_PATHSPEC}")
    magic: "set[str]" = set()
    pattern = spec
    if spec.startswith(":("):
        end = spec.find(")")
        if end < 0:
            raise BadPathspec(f"{spec!r}: magic not closed with ')'")
        for word in spec[2:end].split(","):
            word = word.strip()
            if word.startswith("prefix:") or not word:
                continue
            if word not in MAGIC:
                raise BadPathspec(f"{spec!r}: pathspec magic {word!r} is not supported "
                                  f"(use {', '.join(MAGIC)})")
            magic.add(word)
        pattern = spec[end + 1:]
    elif spec.startswith(":") and len(spec) > 1:
        i = 1
        while i < len(spec) and spec[i] in "/!^":
            magic.add("top" if spec[i] == "/" else "exclude")
            i += 1
        if i < len(spec) and spec[i] == ":":
            i += 1
        pattern = spec[i:]
    if "literal" in magic and "glob" in magic:
        raise BadPathspec(f"{spec!r}: 'literal' and 'glob' cannot be combined")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern in ("", "."):
        pattern = ""  # the whole repository (git's `.` at the top)
    return frozenset(magic), pattern


def pathspecs_match(specs: "Iterable[str]", path: str) -> bool:
    """git's rule for a list: some positive pathspec matches and no exclude pathspec does."""
    hit = False
    excluded = False
    for spec in specs:
        try:
            magic, pattern = parse_pathspec(spec)
        except BadPathspec:
            continue  # a stored record is read as it is; reserve refused bad ones before
        if _one(magic, pattern, path):
            if "exclude" in magic:
                excluded = True
            else:
                hit = True
    return hit and not excluded


def _one(magic: "frozenset[str]", pattern: str, path: str) -> bool:
    if "icase" in magic:
        pattern, path = pattern.lower(), path.lower()
    if pattern == "":
        return True
    stripped = pattern.rstrip("/")
    literal = "literal" in magic or not any(c in pattern for c in "*?[\\")
    if literal:
        # the path itself, or a path under it as a leading directory
        return path == stripped or path.startswith(stripped + "/")
    # a wildcard pathspec matches the whole path only (git ls-files agrees: `:(glob)*` names
    # the top's files, not what lies under its directories). Its part before the first wildcard
    # must begin the path: checked first, it spares most reservations the full match.
    if not path.startswith(_fixed(pattern, magic)):
        return False
    return wildmatch(pattern, path, "glob" in magic)


def wildmatch(pattern: str, text: str, glob: bool) -> bool:
    """git's wildmatch for one pattern over one path, by dynamic programming over (pattern
    position, text position): O(len(pattern) * len(text)), never exponential. Without `glob`
    (git's default pathspec) `*` and `?` match `/` too; with it they do not, and `**` between
    slashes (or at either end) matches any number of directories."""
    tokens = _tokens(pattern, glob)
    n = len(text)
    # reach[j]: text[:j] can be matched by the tokens so far
    reach = [False] * (n + 1)
    reach[0] = True
    for kind, arg in tokens:
        nxt = [False] * (n + 1)
        if kind == "star" or kind == "dstar":
            crosses = kind == "dstar" or not glob
            on = False
            for j in range(n + 1):
                if reach[j]:
                    on = True
                nxt[j] = on
                if on and j < n and text[j] == "/" and not crosses:
                    on = False
        elif kind == "dstar/":
            # `**/`: zero or more whole directories
            for j in range(n + 1):
                if reach[j]:
                    nxt[j] = True
                    k = text.find("/", j)
                    while k >= 0:
                        nxt[k + 1] = True
                        k = text.find("/", k + 1)
        else:
            for j in range(n):
                if reach[j] and _char_ok(kind, arg, text[j], glob):
                    nxt[j + 1] = True
        reach = nxt
        if not any(reach):
            return False
    return reach[n]


def _char_ok(kind: str, arg: "Any", c: str, glob: bool) -> bool:
    if kind == "lit":
        return bool(c == arg)
    if kind == "any":
        return not (glob and c == "/")
    negate, items = arg
    if glob and c == "/":
        return False
    hit = any(lo <= c <= hi for lo, hi in items)
    return bool(hit != negate)


def _tokens(pattern: str, glob: bool) -> "List[Tuple[str, Any]]":
    out: "List[Tuple[str, Any]]" = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(("lit", pattern[i + 1]))
            i += 2
        elif c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            double = j - i >= 2
            at_start = i == 0 or pattern[i - 1] == "/"
            if glob and double and at_start and j < n and pattern[j] == "/":
                out.append(("dstar/", None))
                j += 1
            elif glob and double and at_start and j == n:
                out.append(("dstar", None))
            else:
                out.append(("star", None))
            i = j
        elif c == "?":
            out.append(("any", None))
            i += 1
        elif c == "[":
            parsed = _bracket(pattern, i)
            if parsed is None:
                out.append(("lit", c))
                i += 1
            else:
                out.append(("class", parsed[0]))
                i = parsed[1]
        else:
            out.append(("lit", c))
            i += 1
    return out


def _bracket(pattern: str, i: int) -> "Optional[Tuple[Tuple[bool, List[Tuple[str, str]]], int]]":
    """A `[...]` class from `pattern[i]`: ((negate, ranges), index after it); None when unclosed."""
    j = i + 1
    negate = j < len(pattern) and pattern[j] in "!^"
    if negate:
        j += 1
    items: "List[Tuple[str, str]]" = []
    first = True
    while j < len(pattern):
        c = pattern[j]
        if c == "]" and not first:
            return (negate, items), j + 1
        first = False
        if c == "\\" and j + 1 < len(pattern):
            j += 1
            c = pattern[j]
        if j + 2 < len(pattern) and pattern[j + 1] == "-" and pattern[j + 2] != "]":
            items.append((c, pattern[j + 2]))
            j += 3
        else:
            items.append((c, c))
            j += 1
    return None


def check_pathspecs(specs: "Sequence[str]") -> "List[str]":
    """The pathspecs as they will be stored (`./` dropped); BadPathspec for one we cannot match,
    one outside the repository, or none to reserve."""
    if not specs:
        raise BadPathspec("no pathspec: name the paths to reserve")
    if len(specs) > MAX_PATHSPECS:
        raise BadPathspec(f"{len(specs)} pathspecs, over {MAX_PATHSPECS}: reserve a directory instead")
    out = []
    for spec in specs:
        if "\0" in spec or "\n" in spec:
            raise BadPathspec(f"{spec!r}: a pathspec cannot hold a NUL or a newline")
        magic, pattern = parse_pathspec(spec)
        if pattern.startswith("/"):
            raise BadPathspec(f"{spec!r}: pathspecs are relative to the repository root, not absolute")
        if pattern == ".." or pattern.startswith("../") or "/../" in pattern:
            raise BadPathspec(f"{spec!r}: outside the repository")
        if magic == frozenset(["exclude"]) and len(specs) == 1:
            raise BadPathspec(f"{spec!r}: an exclude pathspec alone reserves nothing")
        out.append(spec[2:] if spec.startswith("./") else spec)
    return out


def overlap(a: str, b: str) -> bool:
    """Whether two pathspecs can name one path, as far as can be told without a file list: one
    matches the other's fixed leading part, either way."""
    try:
        ma, pa = parse_pathspec(a)
        mb, pb = parse_pathspec(b)
    except BadPathspec:
        return False
    if "exclude" in ma or "exclude" in mb:
        return False
    if pa == "" or pb == "":
        return True
    fa, fb = _fixed(pa, ma).rstrip("/"), _fixed(pb, mb).rstrip("/")
    if _one(mb, pb, fa) or _one(ma, pa, fb):
        return True
    # two wildcard pathspecs: their fixed leading parts lie on one line of directories
    wild_a, wild_b = fa != pa.rstrip("/"), fb != pb.rstrip("/")
    if wild_a and wild_b:
        return fa.startswith(fb) or fb.startswith(fa)
    return False


def _fixed(pattern: str, magic: "frozenset[str]") -> str:
    """A pattern's leading part before its first wildcard (all of it for a literal one)."""
    if "literal" in magic:
        return pattern
    for i, c in enumerate(pattern):
        if c in "*?[\\":
            return pattern[:i]
    return pattern
