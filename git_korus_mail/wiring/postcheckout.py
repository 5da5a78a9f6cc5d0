"""git's post-checkout hook, which wires each worktree `git worktree add` makes: where git
looks for hooks (core.hooksPath), our hook's template, installing it beside a hook already
there (kept as post-checkout.legacy, run first) and taking it out again."""

import os
import subprocess

from git_korus_mail.shell import sh_quote
from git_korus_mail.wiring import files as wfiles
from git_korus_mail.wiring import githook

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple

    from git_korus_mail.core.clone import Clone

POST_CHECKOUT = "post-checkout"
LEGACY_SUFFIX = githook.LEGACY_SUFFIX  # (the name others import)
POST_CHECKOUT_MARK = "# git-korus-mail post-checkout hook"
POST_CHECKOUT_ENV = "KORUS_MAIL_POST_CHECKOUT"
POST_CHECKOUT_TEMPLATE = """\
#!/bin/sh
{mark} template-version=1
# Written by `git korus-mail install`; `git korus-mail uninstall` removes it and puts
# back the hook it replaced (kept beside it as post-checkout.legacy, which runs first).
# `git worktree add` runs post-checkout in the new worktree with the null object id
# as $1: that is when the new worktree's .claude/settings.local.json gets wired.

helper={helper}
advice={advice}
status=0
legacy="$(dirname "$0")/post-checkout.legacy"
if [ -f "$legacy" ] && [ -x "$legacy" ]; then
    "$legacy" "$@"
    status=$?
fi

case "${{1-}}" in
    ""|*[!0]*) ;;  # an ordinary checkout: nothing new to wire
    *)
        [ -f "$helper" ] && [ -x "$helper" ] || helper=$(command -v git-korus-mail 2>/dev/null) || helper=
        if [ -n "$helper" ]; then
            ( unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX GIT_COMMON_DIR
              {env}=1 exec "$helper" install ) </dev/null ||
                echo "git korus-mail: could not wire $PWD; run: git korus-mail install" >&2
        else
            echo "git korus-mail: git-korus-mail not found; $PWD is not wired to the mail drain;" \\
                 "$advice" >&2
        fi
        ;;
esac
exit $status
"""


def render_post_checkout(helper: str, repo: "Optional[str]" = None) -> str:
    from git_korus_mail.core import advice
    return POST_CHECKOUT_TEMPLATE.format(mark=POST_CHECKOUT_MARK, helper=sh_quote(helper),
                                         advice=sh_quote(advice.advice(helper, repo)),
                                         env=POST_CHECKOUT_ENV)


def repo_anchor(clone: "Clone") -> str:
    """The path user-scope entries pass as --repo: the main worktree, else the common dir."""
    for wt in clone.worktrees:
        if wt.is_main:
            return wt.path
    return clone.common_dir


def _git(args: "Sequence[str]", cwd: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def git_hooks_dir(clone: "Clone") -> "Tuple[str, Optional[str]]":
    """(hooks dir as git resolves it, core.hooksPath value or None). A relative hooksPath
    is relative to the worktree a hook runs in (githooks(5)); we resolve it from the
    main worktree. `--type=path` expands ~ as git does."""
    cwd = repo_anchor(clone)
    res = _git(["config", "--type=path", "--get", "core.hooksPath"], cwd)
    hooks_path = res.stdout.strip() if res.returncode == 0 else ""
    if not hooks_path:
        return os.path.join(clone.common_dir, "hooks"), None
    return os.path.normpath(os.path.join(cwd, hooks_path)), hooks_path


def is_ours_post_checkout(path: str) -> bool:
    data = wfiles.read_bytes(path)
    return data is not None and POST_CHECKOUT_MARK.encode() in data[:512]


def install_post_checkout(clone: "Clone", helper: str, force: bool,
                          scope_rec: "Dict[str, Any]") -> "Tuple[List[str], Optional[str]]":
    """Install our post-checkout hook; returns (lines to print, problem or None)."""
    hooks_dir, hooks_path = git_hooks_dir(clone)
    hook = os.path.join(hooks_dir, POST_CHECKOUT)
    lines: "List[str]" = []
    if hooks_path:
        lines.append(f"core.hooksPath is set ({hooks_path}): post-checkout goes to {hooks_dir}")
        if not os.path.isabs(hooks_path):
            lines.append("  it is relative: `git worktree add` runs the new worktree's own copy, so new "
                         "worktrees are wired only once that hook is committed there; otherwise run "
                         "`git korus-mail install` after `git worktree add`")
    rec = scope_rec.get("post_checkout") or {}
    data = render_post_checkout(helper, repo_anchor(clone)).encode("utf-8", "surrogateescape")
    said, problem, moved, created_dir = githook.place(
        hook, data, is_ours_post_checkout, force, lost="new worktrees are not wired automatically",
        advice=(": run `git korus-mail install` after each `git worktree add`, or add that line to "
                "your post-checkout hook"))
    lines += said
    if problem is not None:
        return lines, problem
    scope_rec["post_checkout"] = {
        "path": hook,
        "legacy": bool(rec.get("legacy")) or moved,
        "created_dir": bool(rec.get("created_dir")) or created_dir,
    }
    return lines, None


def remove_post_checkout(clone: "Clone", rec: "Optional[Dict[str, Any]]") -> "Optional[str]":
    """Remove our hook and move the legacy one back. Returns a line to print, or None."""
    if rec and rec.get("path"):
        hook: str = rec["path"]
    else:
        hook = os.path.join(git_hooks_dir(clone)[0], POST_CHECKOUT)
    return githook.unplace(hook, rec, is_ours_post_checkout)
