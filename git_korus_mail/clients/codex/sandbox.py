"""Why the model's `send`, `ask` or `reply` cannot write the mail root inside Codex's sandbox, and
the one fix that makes it work (docs/CLIENTS.md, "Codex CLI: the sandbox").

Codex runs the model's shell commands sandboxed, and says so in their environment:
CODEX_PERMISSION_PROFILE (`:read-only`, `:workspace`, ...) and CODEX_SANDBOX_NETWORK_DISABLED=1
(Codex CLI 0.171.0, observed). In `:read-only` (the default of `codex exec` in a project nobody
trusted) nothing is writable; in workspace-write only the workdir, /tmp, $TMPDIR and
`sandbox_workspace_write.writable_roots` are, and Codex mounts a worktree's `.git` read-only,
so the mail root is writable only when install has listed it there.
"""

import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Mapping, Optional

PROFILE_ENV = "CODEX_PERMISSION_PROFILE"
NETWORK_ENV = "CODEX_SANDBOX_NETWORK_DISABLED"


def sandboxed(environ: "Mapping[str, str]") -> "Optional[str]":
    """How the environment says this command runs in Codex's sandbox (a VAR=value to quote), or
    None. The profile is not always named: with writable_roots set in the user config, Codex
    0.171.0 was seen to leave CODEX_PERMISSION_PROFILE out and set only the network variable."""
    profile = environ.get(PROFILE_ENV)
    if profile:
        return f"{PROFILE_ENV}={profile}"
    return f"{NETWORK_ENV}=1" if environ.get(NETWORK_ENV) == "1" else None


def _writable(path: str) -> bool:
    """Can this process create files in `path` (or, when it does not exist yet, in the nearest
    directory above it)? access(2) reports a read-only mount as EROFS."""
    while path and not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return os.access(path, os.W_OK)


def problem(environ: "Mapping[str, str]", mail_root: str, cwd: "Optional[str]" = None) -> "Optional[str]":
    """None when this is no Codex sandbox or the mail root is writable; else one line naming the fix."""
    said = sandboxed(environ)
    if said is None or _writable(mail_root):
        return None
    home = environ.get("CODEX_HOME") or "~/.codex"
    config = os.path.join(home, "config.toml")
    cwd = os.getcwd() if cwd is None else cwd
    if environ.get(PROFILE_ENV) == ":read-only" or not _writable(cwd):
        # not even the workdir: the read-only sandbox, where no writable root helps
        return (f"Codex runs this command in its read-only sandbox ({said}), where the mail root "
                f"{mail_root} cannot be written: start Codex with `--sandbox workspace-write` (or trust this "
                f"project in Codex); `git korus-mail install --client codex` makes the mail root writable there")
    return (f"Codex's sandbox ({said}) cannot write the mail root {mail_root}: run "
            f"`git korus-mail install --client codex` outside Codex (it adds the mail root to "
            f"sandbox_workspace_write.writable_roots in {config}), then start a new Codex session")
