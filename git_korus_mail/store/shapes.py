"""The store's vocabulary for the type checker: the JSON shapes it writes (message, display
observation, receipt, presence record) and the states its operations answer with.

Read by mypy only. Every import of this module sits under `if TYPE_CHECKING:`, so at run time
it is never loaded and `typing` with it (the hook hot path: tests/test_vocab.py checks both).
The shapes are what docs/CONTRACT.md and docs/STORE.md pin on disk; the parsers (store/message.py
`parse`, the readers in store/) stay the only thing that trusts a file, because a file in a
box is hostile input whatever its declared type.

A JSON shape is a TypedDict: keys that every writer always writes are in the base class,
keys written only when they apply are in a `total=False` subclass (Python 3.9's typing has no
NotRequired). A state is a Literal: a value a branch tests, never a sentence.
"""

from typing import Any, Dict, Literal, Optional, TypedDict

# Shapes read back from disk are checked field by field before use: a reader that has not yet
# checked holds this, never one of the shapes below.
Unchecked = Dict[str, Any]

# -- states ------------------------------------------------------------------------------------
# What moves.consume did (store/moves.py): consumed by us; gone (already consumed, expired,
# cancelled by someone); held (a live process holds its claim: try again at a later Stop).
ConsumeResult = Literal["consumed", "gone", "held"]
# Who won a claim (store/moves.py `claim`, over store/claims.py `acquire`).
ClaimResult = Literal["won", "held", "gone"]
# A claim owner as claims.judge sees it: its process runs, has ended, or cannot be proven either.
Liveness = Literal["alive", "dead", "unknown"]
# What the disk says of one message now (store/records.py `fate`): receipts are the truth.
Fate = Literal["consumed", "consumed-unmoved", "queued", "expired", "cancelled", "dropped", "gone"]
# Where a message is filed after it left the inbox (layout.UNCONSUMED and seen/).
Unconsumed = Literal["expired", "cancelled", "dropped"]
# The presence state a drain phase leaves a session in (core/drain.py state_after): the two
# of a session that still runs (store/presence.py LIVE), and closed after its end event.
SessionState = Literal["working", "idle", "closed"]
# An answer's status (store/message.py STATUSES).
AnswerStatus = Literal["done", "failed", "stopped", "answered"]


# -- wire shapes -------------------------------------------------------------------------------
class Sender(TypedDict, total=False):
    """A message's `from` (core/send.py sender_record): launch is written only when known."""
    path: Optional[str]
    branch: Optional[str]
    session: Optional[str]
    launch: Optional[str]
    clone: str  # "<label>:<clone id>": added on arrival by the relay (relay/link.py; docs/RELAY.md)


class Recipient(TypedDict):
    """A message's `to`, as `build` writes it. `parse` checks only `key`: a reader of `path`
    checks it itself (relay/link.py)."""
    path: str
    key: str


# `from` is a Python keyword: the functional form is the only way to name that key.
_MessageBase = TypedDict("_MessageBase", {
    "v": int,
    "id": str,
    "sent_at": str,
    "expires_at": str,
    "kind": str,
    "from": Sender,
    "to": Recipient,
    "session": Optional[str],  # the session filter: only that session is ever shown it
    "body": str,
})


class Message(_MessageBase, total=False):
    """One message file (store/message.py `build` writes it, `parse` checks it). The optional
    fields are written only when given, so a note is the file it always was."""
    in_reply_to: str
    thread: str
    status: AnswerStatus
    wake: bool


class _ObservationBase(TypedDict):
    session: str
    launch: Optional[str]
    event: str
    at: str
    chars: int
    truncated: bool
    body_chars: int


class Observation(_ObservationBase, total=False):
    """A display marker (core/drain_show.py writes it after the output is out): which launch
    of which session was shown how much of the message, and when."""
    question: bool  # the consume phase answers it (core/answer.py)


class LaunchRecord(TypedDict):
    """A client process as a marker directory, a marker and a receipt name it (store/launch.py
    Launch.record): shaped like a claim owner, so claims judge it."""
    client: str
    tag: str
    pid: int
    start: Optional[int]
    boot: Optional[str]
    pidns: Optional[str]
    host: str


class MarkedLaunch(LaunchRecord):
    """shown/<session>@<launch>/.launch (store/markers.py): the launch a marker directory is
    of, and the session it was shown mail in."""
    session: str


class ShownTo(TypedDict, total=False):
    """Whom a delivered message was shown to: a display marker's facts (store/markers.py
    shown_by), or the session of its receipt."""
    session: Optional[str]
    launch: Optional[str]
    at: Optional[str]
    event: Optional[str]
    observed: Unchecked  # the whole display marker, as read (`read`: core/mailview.py)


class Receipt(TypedDict):
    """receipts/<id>.json (store/moves.py consume): the proof a message was consumed, and by whom."""
    id: str
    session: str
    launch: Optional[LaunchRecord]
    consumed_at: str
    # what the consumer was shown, as it read it back: a display marker (an Observation the
    # drain wrote, of which consume checked only the session and launch), or an ask's own note
    # of the answer it printed (core/ask.py): a file's content, so never trusted as a shape
    observed: Unchecked
    pid: int


class _PresenceBase(TypedDict):
    session: str
    box: str
    cwd: str
    client_pid: Optional[int]  # the client process's pid, whichever client runs the session
    claude_pid: Optional[int]  # the same, under its 0.1.0 key (docs/STORE.md, "Presence: the pid's two keys")
    config_dir: Optional[str]
    client: Optional[str]
    launch: Optional[str]
    boot: Optional[str]
    pidns: Optional[str]
    last_event: str
    at: str
    state: SessionState
    events: Dict[str, str]  # the client's event name -> when it last fired


class Presence(_PresenceBase, total=False):
    """sessions/<session>.json (store/presence.py record): which session the drain saw in a box,
    and in what state. The drain adds its own bookkeeping keys through `extra`."""
    pending_faults: list[str]
    surface: str  # the client's surface, when its facts name one (core/drain_context.py record)
    name: str     # the session's name, when the client gave one at its end
    off_told: bool
    nolaunch_told: bool
    turn_seen: Optional[str]  # the stub's turn record this one supersedes (store/presence.py _turn)

