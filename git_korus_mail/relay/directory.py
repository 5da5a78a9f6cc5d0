"""What this clone tells the others about itself (docs/RELAY.md, "Directory"): its worktrees
(name, path, box key) and its named sessions, put in the namespace's KV bucket by the relay
(relay/link.py) and read by the others' `send`, `who` and `list` from relay/peers.json. No nats.

The relay is under the core (docs/RELAY.md, "Layers"): git's worktrees, the box keys, the
roster and the configured retention are the core's to know. So the process that runs the relay
(core/relayhost.py) hands it these facts as functions, asked again each time they are needed,
and the relay itself reads only the store's files and what it is handed.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict


class Facts:
    """What the layer that runs the relay knows of this clone, each asked when it is needed:
      - worktrees(): [{"name", "path", "key"}], the clone's worktrees that are not prunable;
      - sessions(): [{"name", "session", "box", "worktree", "state", "as_of"}], its named
        sessions as the last hook event of each said them;
      - keep_days(): the store's retention in days (`korus-mail.retention-days`, docs/STORE.md).
    """

    def __init__(self, worktrees: "Callable[[], list[Dict[str, str]]]",
                 sessions: "Callable[[], list[Dict[str, Any]]]", keep_days: "Callable[[], int]") -> None:
        self.worktrees = worktrees
        self.sessions = sessions
        self.keep_days = keep_days
