"""What other parts of korus-mail tell the roster about a live session (core/roster.py).

Two questions the roster cannot answer from presence alone; each is a plain function, so the
part that knows the answer fills it in without touching the roster:
- the wake tier says until when an idle session can be woken by new mail;
- `ask` says which question a session waits on for an answer.
Until they are filled, no session is reported wakeable or waiting.
"""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, Optional

    from git_korus_mail.store.files import Box


def wakeable_until(box: "Box", rec: "Dict[str, Any]") -> "Optional[str]":
    """The UTC stamp until which this idle session wakes for new mail; None when it does not
    (or the wake tier is not armed). `rec` is its presence record (store/presence.py)."""
    return None


def waiting_for(box: "Box", rec: "Dict[str, Any]") -> "Optional[Dict[str, Any]]":
    """The question this session waits on, e.g. {"id": <question id>, "since": <stamp>,
    "to": <box>}; None when it waits on none."""
    return None
