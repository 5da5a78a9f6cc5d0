"""The typed arguments of the commands a model runs in a tool call (send, ask, reply), below
commands/params.py (which builds them) and the commands (which read them): no import circle."""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict


class Args:
    """A command's typed arguments as @dataclass(frozen=True) makes them (keyword fields with
    defaults, frozen, compared by value), for the commands a model runs in a tool call (send,
    ask, reply): importing dataclasses (inspect, ast, dis, tokenize) costs a `send` more than its
    own work (issue 26, bench/RESULTS.md row 3). A subclass names its fields in FIELDS, with
    their defaults, and their types as class annotations."""

    __slots__ = ()
    FIELDS: "Dict[str, Any]" = {}

    def __init__(self, **given: "Any") -> None:
        unknown = sorted(set(given) - set(self.FIELDS))
        if unknown:
            raise TypeError(f"{type(self).__name__}: no field {unknown[0]}")
        for name, default in self.FIELDS.items():
            object.__setattr__(self, name, given.get(name, default))

    def __setattr__(self, name: str, value: "Any") -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self.FIELDS))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELDS) + ")"
