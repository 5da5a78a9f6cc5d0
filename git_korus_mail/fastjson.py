"""JSON through the C accelerator that the json package itself uses, without `import json`.

`import json` imports `re`, and `re` imports enum, functools and collections: about
8 ms on a hook whose whole budget is "about as much as starting Python" (see
bench/RESULTS.md). The C scanner and encoder in `_json` need none of that. Where
`_json` is missing (another interpreter), this falls back to the json package.
"""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]

_WHITESPACE = " \t\n\r"


class _DecodeContext:
    # the attributes _json.make_scanner reads; the same values json.JSONDecoder uses
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
    memo: "dict[str, str]" = {}


def _no_default(obj: object) -> "Any":
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


if _json is not None:
    _scan = _json.make_scanner(_DecodeContext())  # type: ignore[arg-type]  # duck-types the decoder

    def loads(text: "str | bytes | bytearray") -> "Any":
        """Parse a JSON document (str or UTF-8 bytes). ValueError when it is not exactly one JSON value,
        whatever is wrong with it, on every Python we support."""
        if isinstance(text, (bytes, bytearray)):
            text = text.decode("utf-8")
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = _scan(text, start)
        except StopIteration as exc:
            raise ValueError(f"not JSON (at character {exc.value})") from None
        except SystemError:
            # 3.10 and 3.11: the scanner reports a syntax error through json.decoder's
            # JSONDecodeError, found only in sys.modules; we never import json, so it
            # returns NULL with no exception set, which CPython turns into SystemError
            raise ValueError("not JSON") from None
        except RecursionError:
            raise ValueError("not JSON: nested too deeply") from None
        if text[end:].strip(_WHITESPACE):
            raise ValueError(f"extra data after JSON (at character {end})")
        return value

    def dumps(obj: object, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
        """Compact-ish JSON (", " and ": " separators, as json.dumps without indent).

        A fresh encoder per call: its markers dict (the circular-reference check) keeps the ids of
        the containers being encoded, and an encode that fails midway leaves them in it, so a
        shared one would refuse a later, sound object that happens to reuse an id."""
        string_encoder = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
        enc = _json.make_encoder({}, _no_default, string_encoder, None, ": ", ", ", sort_keys, False, True)
        return "".join(enc(obj, 0))
else:  # pragma: no cover
    def loads(text: "str | bytes | bytearray") -> "Any":
        import json
        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError("not JSON: nested too deeply") from None

    def dumps(obj: object, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
        import json
        return json.dumps(obj, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
