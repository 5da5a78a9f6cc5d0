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

PROFILE_ENV = "CODEX_PERMISSION_PROFILE"
NETWORK_ENV = "CODEX_SANDBOX_NETWORK_DISABLED"


def sandboxed(environ):
    """The profile Codex names for this command's sandbox ("?" when only the network says so)."""
    profile = environ.get(PROFILE_ENV)
    if profile:
        return profile
    return "?" if environ.get(NETWORK_ENV) == "1" else None


def _writable(path):
    """Can this process create files in `path` (or, when it does not exist yet, in the nearest
    directory above it)? access(2) reports a read-only mount as EROFS."""
    while path and not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return os.access(path, os.W_OK)


def problem(environ, mail_root, codex_home=None):
    """None when this is no Codex sandbox or the mail root is writable; else one line naming the fix."""
    profile = sandboxed(environ)
    if profile is None or _writable(mail_root):
        return None
    home = codex_home or environ.get("CODEX_HOME") or "~/.codex"
    config = os.path.join(home, "config.toml")
    if profile == ":read-only":
        return (f"Codex runs this command in its read-only sandbox ({PROFILE_ENV}={profile}), where the mail root "
                f"{mail_root} cannot be written: start Codex with `--sandbox workspace-write` (or trust this "
                f"project in Codex); install has already made the mail root writable there")
    return (f"Codex's sandbox ({PROFILE_ENV}={profile}) cannot write the mail root {mail_root}: run "
            f"`git korus-mail install --client codex` outside Codex (it adds the mail root to "
            f"sandbox_workspace_write.writable_roots in {config}), then start a new Codex session")
