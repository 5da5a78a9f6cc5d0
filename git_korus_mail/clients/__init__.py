"""The clients korus-mail serves, one package each (clients/claude/ for Claude Code,
clients/codex/ for Codex CLI).

A client package knows its hook protocol, its events and environment, and its install
wiring; the core knows none of them. Commands that need a client fact ask here. Kept
free of imports at load time: the hook hot path imports this package.
"""

NAMES = ("claude", "codex")  # in the order commands ask them; the first is the default
DEFAULT = NAMES[0]


def hook_protocol(name):
    """The hook-protocol module of one client (only that one is imported: the hot path)."""
    if name == "claude":
        from git_korus_mail.clients.claude import protocol as claude
        return claude
    if name == "codex":
        from git_korus_mail.clients.codex import protocol as codex
        return codex
    raise KeyError(name)


def hook_protocols():
    """The hook-protocol module of every client, in the order commands ask them."""
    return tuple(hook_protocol(name) for name in NAMES)


def installer(name):
    if name == "claude":
        from git_korus_mail.clients.claude import wiring as claude
        return claude
    if name == "codex":
        from git_korus_mail.clients.codex import wiring as codex
        return codex
    raise KeyError(name)


def installers(names=NAMES):
    """The install-wiring module of each client named (clients/<name>/wiring.py), which install,
    uninstall and doctor go through in this order."""
    return tuple(installer(name) for name in NAMES if name in names)


def session_of(environ):
    """The session id the environment names (a command run inside a session), from the first
    client that names one; None when none does."""
    for client in hook_protocols():
        session = client.session_of(environ)
        if session is not None:
            return session
    return None


def registries():
    """The session-registry module of every client that keeps one (clients/claude/registry.py)."""
    from git_korus_mail.clients.claude import registry as claude
    return (claude,)


def last_activity(client, config_root, cwd, session):
    """When `client`'s session last showed a sign of life of its own (epoch seconds), for `who`'s
    "not responding"; None when that client keeps no such trace or it is missing."""
    for registry in registries():
        if registry.NAME == client:
            return registry.last_activity(config_root, cwd, session)
    return None


def default_config_root(client):
    """The config dir a session of `client` (its name, as presence records it) uses when its
    hooks named none; None for a client that keeps no registry."""
    for registry in registries():
        if registry.NAME == client:
            return registry.default_root()
    return None


def sessions(config_root, client=None):
    """What the registry of `client` (its name; None: every client that keeps one) says runs
    under `config_root` (None: the config dir a session uses when its hooks named none), for
    `who` to check (core/roster.py). A client that keeps no registry says nothing."""
    out = []
    for registry in registries():
        if client is None or registry.NAME == client:
            out.extend(registry.sessions(config_root))
    return out


def command_launch(environ):
    """The client process this command runs under (a Bash tool call's), a store.launch.Launch;
    None outside any client."""
    for client in hook_protocols():
        of_command = getattr(client, "command_launch", None)  # a client may name none
        launch = of_command(environ) if of_command is not None else None
        if launch is not None and launch.known:
            return launch
    return None


def launch_tag(environ):
    """The client process this command runs under, as a launch tag; None outside any client."""
    launch = command_launch(environ)
    return launch.tag if launch is not None else None
