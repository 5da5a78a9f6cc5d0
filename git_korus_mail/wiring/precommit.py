"""git's pre-commit hook, the commit guard of file reservations (issue 29; docs/CLIENTS.md,
"Reservations before an edit"): a `git commit` that touches a path another worktree reserved
prints who reserved it, and a `--block` reservation refuses the commit (`--no-verify` overrides,
as for every pre-commit hook). It catches what no client hook can see: a shell command that
edited the file.

Wired exactly as post-checkout is (wiring/postcheckout.py): where git looks for hooks
(core.hooksPath), a hook already there kept beside ours as pre-commit.legacy and run first,
and put back by uninstall. The hook costs a shell test when the clone holds no reservation:
the store's signal file (store/reservations.py, SIGNAL) is absent, and no Python starts."""

import os

from git_korus_mail.shell import sh_quote
from git_korus_mail.wiring import files as wfiles
from git_korus_mail.wiring import githook
from git_korus_mail.wiring.postcheckout import git_hooks_dir

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

    from git_korus_mail.core.clone import Clone

PRE_COMMIT = "pre-commit"
PRE_COMMIT_MARK = "# git-korus-mail pre-commit hook"
RECORD_KEY = "pre_commit"     # its entry in a scope's install record (wiring/record.py)
SIGNAL = "RESERVED"           # <mail>/RESERVED exists while any reservation may (docs/STORE.md)
ENTRY = "guard-commit"        # the helper's entry the hook runs (commands/guard.py)
EXIT_BLOCK = 3                # the entry's "refuse this commit": any other failure lets it through
PRE_COMMIT_TEMPLATE = """\
#!/bin/sh
{mark} template-version=1
# Written by `git korus-mail install`; `git korus-mail uninstall` removes it and puts
# back the hook it replaced (kept beside it as pre-commit.legacy, which runs first).
# The commit guard of file reservations (docs/CLIENTS.md, "Reservations before an edit"):
# a commit touching a path another worktree reserved is told who reserved it; a --block
# reservation refuses it (`git commit --no-verify` commits anyway). No reservation in the
# clone (no {signal} file): a shell test, and no Python.

helper={helper}
mail={mail}
legacy="${{0%/*}}/pre-commit.legacy"
if [ -f "$legacy" ] && [ -x "$legacy" ]; then
    "$legacy" "$@" || exit $?  # your own hook refused the commit: that stands
fi
[ -e "$mail/{signal}" ] || exit 0
[ -f "$helper" ] && [ -x "$helper" ] || helper=$(command -v git-korus-mail 2>/dev/null) || {{
    echo "git korus-mail: git-korus-mail not found: this commit was not checked against reservations" >&2
    exit 0
}}
"$helper" {entry} </dev/null
status=$?
case $status in
    0) exit 0 ;;
    {block}) exit 1 ;;
esac
# a fault of ours never stops a commit: the guard is a courtesy, the reservation advisory
echo "git korus-mail: the reservation check failed (exit $status): this commit was not checked" >&2
exit 0
"""


def render_pre_commit(helper: str, mail: str) -> str:
    return PRE_COMMIT_TEMPLATE.format(mark=PRE_COMMIT_MARK, helper=sh_quote(helper), mail=sh_quote(mail),
                                      signal=SIGNAL, entry=ENTRY, block=EXIT_BLOCK)


def is_ours(path: str) -> bool:
    data = wfiles.read_bytes(path)
    return data is not None and PRE_COMMIT_MARK.encode() in data[:512]


def hook_path(clone: "Clone", rec: "Optional[Dict[str, Any]]" = None) -> str:
    """Where our hook is (the record's path), or would go."""
    if rec and rec.get("path"):
        return str(rec["path"])
    return os.path.join(git_hooks_dir(clone)[0], PRE_COMMIT)


def install_pre_commit(clone: "Clone", helper: str, mail: str, force: bool,
                       scope_rec: "Dict[str, Any]") -> "Tuple[List[str], Optional[str]]":
    """Install our pre-commit hook; returns (lines to print, problem or None)."""
    hooks_dir, hooks_path = git_hooks_dir(clone)
    hook = os.path.join(hooks_dir, PRE_COMMIT)
    lines: "List[str]" = []
    if hooks_path and not os.path.isabs(hooks_path):
        lines.append(f"core.hooksPath is relative ({hooks_path}): each worktree runs its own {PRE_COMMIT}; "
                     f"the commit guard is in {hooks_dir} only")
    rec = scope_rec.get(RECORD_KEY) or {}
    data = render_pre_commit(helper, mail).encode("utf-8", "surrogateescape")
    said, problem, moved, created_dir = githook.place(
        hook, data, is_ours, force, lost="commits are not checked against reservations",
        written="written (the commit guard of reservations)")
    lines += said
    if problem is not None:
        return lines, problem
    scope_rec[RECORD_KEY] = {
        "path": hook,
        "legacy": bool(rec.get("legacy")) or moved,
        "created_dir": bool(rec.get("created_dir")) or created_dir,
    }
    return lines, None


def remove_pre_commit(clone: "Clone", rec: "Optional[Dict[str, Any]]") -> "Optional[str]":
    """Remove our hook and move the legacy one back. Returns a line to print, or None."""
    return githook.unplace(hook_path(clone, rec), rec, is_ours)


def check(clone: "Clone", rec: "Optional[Dict[str, Any]]", helper: "Optional[str]", mail: str
          ) -> "Tuple[bool, str, str]":
    """(ok, the hook's path, what doctor says) of our hook, against what install would write now."""
    hook = hook_path(clone, rec)
    if not (is_ours(hook) and os.access(hook, os.X_OK)):
        return False, hook, "no pre-commit hook of ours: commits are not checked against reservations"
    if helper and wfiles.read_bytes(hook) != render_pre_commit(helper, mail).encode("utf-8", "surrogateescape"):
        return False, hook, "the pre-commit hook is out of date (another helper, or the clone moved)"
    return True, hook, "checks each commit against reservations (a shell test while there are none)"
