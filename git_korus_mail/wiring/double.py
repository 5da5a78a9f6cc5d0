"""Both install scopes wired for one clone: what install and doctor say about it.

A client that reads both a worktree's settings file and the user's runs both wirings of korus-mail
at every event, in parallel (Claude Code 2.1.332, observed). The drain answers each event once
(docs/HOOKS.md, "One answer per event"), so this costs a second hook run per event, never a second
copy of the mail. install keeps both, as asked, and says so; doctor names it.
"""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import List, Optional, Sequence, Tuple

    Wired = Sequence[Tuple[str, Optional[str], str]]  # (settings path, repo anchor, cwd)

LABELS = {"claude": "Claude Code", "codex": "Codex"}


def user_file(wired: "Wired") -> "Optional[str]":
    """The user scope's settings file when `wired` ([(path, repo anchor or None, cwd)], as
    `wired_files` gives it) holds both scopes; None otherwise."""
    local = any(repo is None for _path, repo, _cwd in wired)
    user = [path for path, repo, _cwd in wired if repo is not None]
    return user[0] if local and user else None


def said(client_name: str, user_path: str, keep: str = "local") -> str:
    """One paragraph for install and doctor: what runs, what korus-mail does about it, the way
    back to one scope (`keep`: the scope the person just chose, or the local one)."""
    drop = "user" if keep == "local" else "local"
    label = LABELS.get(client_name, client_name)
    return (f"{label} is wired in both scopes for this clone (each worktree's settings and {user_path}): "
            f"it runs both hooks at every event, in parallel. korus-mail keeps both and answers each "
            f"event once (the other hook stays silent), at the cost of a second hook run per event. "
            f"One scope is enough: git korus-mail uninstall --scope {drop}"
            + (f" --client {client_name}" if client_name != "claude" else ""))


def findings(client_name: str, wired: "Wired") -> "List[Tuple[str, str]]":
    """[(where, detail)] doctor adds for a client wired in both scopes (ok: handled, but named)."""
    user = user_file(wired)
    return [] if user is None else [(user, "wired twice: " + said(client_name, user))]
