"""What this clone tells the others about itself (docs/RELAY.md, "Directory"): its worktrees
(name, path, box key) and its named sessions, put in the namespace's KV bucket by the relay
(relay/link.py) and read by the others' `send`, `who` and `list` from relay/peers.json. No nats.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict


def worktrees_of(common_dir: str) -> "list[Dict[str, str]]":
    from git_korus_mail.core import gitrepo, keys
    out = []
    for wt in gitrepo.list_worktrees(common_dir):
        if wt.prunable:
            continue
        k = keys.key_of_root(wt.path)
        out.append({"name": wt.name, "path": wt.path, "key": k.name})
    return out


def sessions_of(common_dir: str) -> "list[Dict[str, Any]]":
    """The named sessions our hooks saw in this clone, for the other clones' `who` and `@<name>`
    (docs/RELAY.md, "Directory"). Read from the presence records only: the clients' registries
    are the clients' business (the relay is under them), so a state here is what the last hook
    event said, and its `as_of` says when."""
    from git_korus_mail.core import roster
    from git_korus_mail.core.clone import Clone
    clone = Clone(repo_opt=common_dir, cwd=common_dir)
    rows = roster.collect(clone, lambda _root, _client: [])["sessions"]
    return [{k: r.get(k) for k in ("name", "session", "box", "worktree", "state", "as_of")}
            for r in rows if r.get("name") and r.get("hooks") and r.get("box")]
