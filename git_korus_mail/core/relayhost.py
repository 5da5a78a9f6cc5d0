"""The relay's process for one clone (docs/RELAY.md): `python -m git_korus_mail.core.relayhost
<common dir>`, started by relay/local.start.

The relay (relay/link.py) runs under the core and imports nothing of it (docs/RELAY.md,
"Layers"); what only the core knows of this clone is handed to it from here as functions
(relay/directory.Facts): its worktrees with their box keys, its named sessions from the roster,
and the store's retention. This module loads nats only in `main`, through relay/link.py.
"""

import sys

from git_korus_mail.relay import directory

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
    are the clients' business (the core knows no client), so a state here is what the last hook
    event said, and its `as_of` says when."""
    from git_korus_mail.core import roster
    from git_korus_mail.core.clone import Clone
    clone = Clone(repo_opt=common_dir, cwd=common_dir)
    rows = roster.collect(clone, lambda _root, _client: [])["sessions"]
    return [{k: r.get(k) for k in ("name", "session", "box", "worktree", "state", "as_of")}
            for r in rows if r.get("name") and r.get("hooks") and r.get("box")]


def facts(common_dir: str) -> directory.Facts:
    """What the relay of the clone at `common_dir` is told of it."""
    from git_korus_mail.core.retention import keep_days
    return directory.Facts(worktrees=lambda: worktrees_of(common_dir), sessions=lambda: sessions_of(common_dir),
                           keep_days=lambda: keep_days(common_dir)[0])


def main(argv: "list[str]") -> int:
    from git_korus_mail.relay import link  # nats: the relay process only
    return link.main(argv, facts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
