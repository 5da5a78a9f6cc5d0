"""The clients korus-mail serves, one package each (clients/claude/ for Claude Code,
clients/codex/ for Codex CLI, clients/gemini/ for Gemini CLI).

A client package knows its hook protocol, its events and environment, and its install
wiring; the core knows none of them. Commands that need a client fact ask here. Kept
free of imports at load time: the hook hot path imports this package.
"""

import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

    from git_korus_mail.clients.interface import HookProtocol, Installer, Registry
    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.launch import AnyLaunch, Launch

NAMES = ("claude", "codex", "gemini")  # in the order commands ask them; the first is the default
DEFAULT = NAMES[0]


def hook_protocol(name: str) -> "HookProtocol":
    """The hook-protocol module of one client (only that one is imported: the hot path)."""
    if name == "claude":
        from git_korus_mail.clients.claude import protocol as claude
        return claude
    if name == "codex":
        from git_korus_mail.clients.codex import protocol as codex
        return codex
    if name == "gemini":
        from git_korus_mail.clients.gemini import protocol as gemini
        return gemini
    raise KeyError(name)


def hook_protocols() -> "Tuple[HookProtocol, ...]":
    """The hook-protocol module of every client, in the order commands ask them."""
    return tuple(hook_protocol(name) for name in NAMES)


def installer(name: str) -> "Installer":
    if name == "claude":
        from git_korus_mail.clients.claude import wiring as claude
        return claude
    if name == "codex":
        from git_korus_mail.clients.codex import wiring as codex
        return codex
    if name == "gemini":
        from git_korus_mail.clients.gemini import wiring as gemini
        return gemini
    raise KeyError(name)


def installers(names: "Tuple[str, ...]" = NAMES) -> "Tuple[Installer, ...]":
    """The install-wiring module of each client named (clients/<name>/wiring.py), which install,
    uninstall and doctor go through in this order."""
    return tuple(installer(name) for name in NAMES if name in names)


def session_of(environ: "Mapping[str, str]") -> "Optional[str]":
    """The session id the environment names (a command run inside a session), from the first
    client that names one; None when none does."""
    for client in hook_protocols():
        session = client.session_of(environ)
        if session is not None:
            return session
    return None


SENDER_DEPTH = 16  # ancestors walked to find the client a command runs under (a sandbox adds a few)


def sender_of(environ: "Mapping[str, str]") -> "Tuple[Optional[str], Optional[str]]":
    """(session, launch) of whoever runs this command, for a message's `from` (docs/DESIGN.md,
    "Limits": the receiver's limits tell senders apart by both). `launch` is proved from /proc,
    never taken on the environment's word: `<client>:<tag>` of the nearest ancestor that is a
    client's process (each client module's `sender_launch` knows its own), and the session is
    that client's. When no client process is an ancestor but the environment names a session
    (a sandbox that runs commands in a pid namespace of their own), the session alone, launch
    None. Outside every client, no session and `session:<tag>` of this process's Unix session
    (a terminal, a script's, a service's)."""
    import os
    from git_korus_mail.store import launch as launches
    chain = launches.ancestry(os.getpid(), SENDER_DEPTH)
    best: "Optional[Tuple[int, HookProtocol, Launch]]" = None
    for client in hook_protocols():
        find = getattr(client, "sender_launch", None)  # a client may know no process of its own
        got = find(environ, chain) if find is not None else None
        if got is not None and (best is None or got[0] < best[0]):
            best = (got[0], client, got[1])
    if best is not None:
        return best[1].session_of(environ), f"{best[2].client}:{best[2].tag}"
    session = session_of(environ)
    if session is not None:
        return session, None
    tag = launches.unix_session_tag()
    return None, (f"session:{tag}" if tag else None)


def sandbox_problem(environ: "Mapping[str, str]", common_dir: str) -> "Optional[str]":
    """One line naming the fix when a client's sandbox keeps this command from writing the mail
    root (clients/codex/sandbox.py), else None. Only Codex sandboxes the model's commands."""
    from git_korus_mail.clients.codex import sandbox as codex
    from git_korus_mail.store.layout import mail_root_path
    return codex.problem(environ, os.path.realpath(mail_root_path(common_dir)))


def check_writable(clone: "Clone") -> None:
    """Refuse, in one line that names the fix, a write a client's sandbox forbids: before anything
    is written, not with an errno from halfway through (issue 21 item 2)."""
    problem = sandbox_problem(os.environ, clone.common_dir)
    if problem:
        from git_korus_mail.errors import MailError
        raise MailError(problem)


def registries() -> "Tuple[Registry, ...]":
    """The session-registry module of every client that keeps one (clients/claude/registry.py)."""
    from git_korus_mail.clients.claude import registry as claude
    return (claude,)


def last_activity(client: "Optional[str]", config_root: "Optional[str]", cwd: "Optional[str]",
                  session: str) -> "Optional[float]":
    """When `client`'s session last showed a sign of life of its own (epoch seconds), for `who`'s
    "not responding"; None when that client keeps no such trace or it is missing."""
    for registry in registries():
        if registry.NAME == client:
            return registry.last_activity(config_root, cwd, session)
    return None


def default_config_root(client: str) -> "Optional[str]":
    """The config dir a session of `client` (its name, as presence records it) uses when its
    hooks named none; None for a client that keeps no registry."""
    for registry in registries():
        if registry.NAME == client:
            return registry.default_root()
    return None


def sessions(config_root: "Optional[str]", client: "Optional[str]" = None) -> "List[Dict[str, Any]]":
    """What the registry of `client` (its name; None: every client that keeps one) says runs
    under `config_root` (None: the config dir a session uses when its hooks named none), for
    `who` to check (core/roster.py). A client that keeps no registry says nothing."""
    out: "List[Dict[str, Any]]" = []
    for registry in registries():
        if client is None or registry.NAME == client:
            out.extend(registry.sessions(config_root))
    return out


def command_launch(environ: "Mapping[str, str]") -> "Optional[Launch]":
    """The client process this command runs under (a Bash tool call's), a store.launch.Launch;
    None outside any client."""
    for client in hook_protocols():
        of_command: "Optional[Callable[[Mapping[str, str]], AnyLaunch]]" = \
            getattr(client, "command_launch", None)  # a client may name none
        launch = of_command(environ) if of_command is not None else None
        if launch is not None and launch.known:
            return launch
    return None


def launch_tag(environ: "Mapping[str, str]") -> "Optional[str]":
    """The client process this command runs under, as a launch tag; None outside any client."""
    launch = command_launch(environ)
    return launch.tag if launch is not None else None
