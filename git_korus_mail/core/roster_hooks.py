"""What other parts of korus-mail tell the roster about a live session (core/roster.py).

Two questions the roster cannot answer from presence alone; each is a plain function, so the
part that knows the answer fills it in without touching the roster:
- the wake tier says until when an idle session can be woken by new mail;
- `ask` says which question a session waits on for an answer (its open waits, store/answers.py).
Until the wake tier fills its function, no session is reported wakeable.
"""

from git_korus_mail.store.launch import UNKNOWN_TAG

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, Optional

    from git_korus_mail.store.files import Box


def wakeable_until(box: "Box", rec: "Dict[str, Any]") -> "Optional[str]":
    """The UTC stamp until which this idle session wakes for new mail; None when it does not
    (or the wake tier is not armed, or its wake budget is spent). `rec` is its presence record
    (store/presence.py)."""
    from git_korus_mail.core import wake
    return wake.wakeable_until(box, rec)


def wake_budget_spent_until(box: "Box", rec: "Dict[str, Any]") -> "Optional[str]":
    """The UTC stamp until which this session's wake budget is spent (new mail wakes it no
    more and waits for its next prompt); None while it has wakes left."""
    from git_korus_mail.core import wake
    from git_korus_mail.stamps import utc_stamp
    frees = wake.budget_frees_at(box, rec)
    return utc_stamp(frees) if frees is not None else None


def waiting_for(box: "Box", rec: "Dict[str, Any]") -> "Optional[Dict[str, Any]]":
    """The question this session waits on: {"id": <question id>, "to": <box asked>, "until":
    <stamp>}; None when it waits on none. A wait `ask` opened (store/answers.py) counts for the
    session whose launch ran it (the same launch tag, in the asker's box) while its owner runs."""
    from git_korus_mail.store import answers
    from git_korus_mail.stamps import utc_stamp
    launch = rec.get("launch")
    if not isinstance(launch, str) or launch == UNKNOWN_TAG:
        return None
    for wait in answers.live_waits(box.root):
        if wait.get("asker") == box.name and wait.get("launch") == launch:
            deadline = wait.get("deadline")
            return {"id": wait.get("question"), "to": wait.get("target"),
                    "until": utc_stamp(deadline) if isinstance(deadline, (int, float)) else None}
    return None
