"""The clone a command works on: its common dir, mail root, worktrees, and our own box key.

`--repo <path>` (an anchor for sessions outside any clone) selects the queue only;
our own key always comes from the cwd, or the anchor would read its mail (docs/DESIGN.md R2).
"""

import os

from git_korus_mail.core import keys
from git_korus_mail.core.discover import NotModelled
from git_korus_mail.core.worktrees import fast_list
from git_korus_mail.errors import MailError
from git_korus_mail.store.files import MailRoot

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from git_korus_mail.core.worktrees import Worktree
    from git_korus_mail.store.files import Box


class Clone:
    def __init__(self, repo_opt: "Optional[str]" = None, cwd: "Optional[str]" = None,
                 exact: bool = False) -> None:
        """`exact`: list the worktrees as pygit2 does (install, doctor) instead of reading the
        common dir in pure Python first (worktrees.fast_list, proven equal where it answers)."""
        self.exact = exact
        self.cwd = os.path.realpath(cwd or os.getcwd())
        from_env = repo_opt is None and "GIT_DIR" in os.environ
        start = os.path.abspath(repo_opt) if repo_opt else self.cwd
        if repo_opt and not os.path.isdir(start):
            raise MailError(f"--repo {repo_opt}: no such directory")
        loc = keys.locate(start, from_env=from_env)
        if loc is None:
            where = f"--repo {repo_opt}" if repo_opt else self.cwd
            raise MailError(f"{where}: not in a git repository (pass --repo <path> to name the clone)")
        self.location = loc
        self.common_dir = loc.common_dir
        if from_env:
            self.own_key = keys.key_of_root(loc.worktree or self.cwd, loc)
        else:
            self.own_key = keys.key_for(self.cwd, location=None if repo_opt else loc)
        self._own_location = loc if not repo_opt else keys.locate(self.cwd)
        self._worktrees: Optional[List[Worktree]] = None
        self._root: Optional[MailRoot] = None

    def in_worktree(self) -> bool:
        """Is the cwd in a worktree of this very clone (not a folder outside, not inside .git)?"""
        loc = self._own_location
        return loc is not None and bool(loc.worktree) and loc.common_dir == self.common_dir

    def own_box(self, create: bool = False) -> "Optional[Box]":
        """Our own box. Made (and so a moved worktree's queue adopted) only for a worktree of
        this clone: a command run from /tmp, .git/mail or a bare repository leaves no box behind."""
        root = self.mail_root(create=create)
        if root is None:
            return None
        if not (create and self.in_worktree()):
            return root.box(self.own_key.name)
        loc = self._own_location

        def adopt(box: "Box") -> None:
            from git_korus_mail.store import forwarding, wtident
            forwarding.first_use(box, wtident.of_location(loc, self.common_dir))
        return root.box(self.own_key.name, create=True, path=self.own_key.path, adopt=adopt)

    @property
    def worktrees(self) -> "List[Worktree]":
        if self._worktrees is None:
            self._worktrees = self._list_worktrees()
        return self._worktrees

    def _list_worktrees(self) -> "List[Worktree]":
        """The common dir read in pure Python where that read proves pygit2's answer (importing
        pygit2 costs a `send` several times its own work: issue 26); pygit2 otherwise."""
        if not self.exact:
            try:
                return fast_list(self.common_dir, own_main=self._own_main())
            except NotModelled:
                pass
        from git_korus_mail.core import gitrepo  # the authority: install, doctor, odd layouts
        return self._with_own_main(gitrepo.list_worktrees(self.common_dir))

    def _own_main(self) -> "Optional[str]":
        """The main worktree's root when we stand in it: the fast walk followed its .git file
        (or found its .git dir) to the common dir itself."""
        loc = self.location
        return loc.worktree if loc.worktree and loc.git_dir == self.common_dir else None

    def _with_own_main(self, wts: "List[Worktree]") -> "List[Worktree]":
        """A main worktree made with --separate-git-dir is recorded nowhere in its git dir:
        git and pygit2 both guess it from the git dir's path, and guess wrong. Run from inside
        it, we know it (the fast walk followed its .git file): use that, so `list`, `send`
        and `install` key it as its own drain does."""
        own = self._own_main()
        if own is not None and wts and wts[0].is_main and wts[0].path != own:
            wts[0].path = own
            wts[0].name = os.path.basename(own)
        return wts

    def worktree_keys(self) -> "List[Tuple[Worktree, keys.Key]]":
        """[(Worktree, Key)] for every worktree, main first."""
        return [(wt, keys.key_of_root(wt.path)) for wt in self.worktrees]

    def own_worktree(self) -> "Optional[Worktree]":
        for wt, k in self.worktree_keys():
            if k == self.own_key:
                return wt
        return None

    def mail_root(self, create: bool = False) -> "Optional[MailRoot]":
        if self._root is None:
            self._root = MailRoot.open(self.common_dir, create=create)
            if self._root is not None:
                # a command may own a wait or a claim that others judge; a life lock proves it
                # alive or dead from any pid namespace (a client's sandbox: store/life.py)
                from git_korus_mail.store import life
                life.hold(self._root)
        return self._root

    def opened_root(self) -> "Optional[MailRoot]":
        """The mail root if this command has opened it already, else None (never opens it)."""
        return self._root
