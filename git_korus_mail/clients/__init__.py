"""The clients korus-mail serves, one package each (clients/claude/ for Claude Code).

A client package knows its hook protocol, its events and environment, and its install
wiring; the core knows none of them. Commands that need a client fact ask here. Kept
free of imports at load time: the hook hot path imports this package.
"""


def hook_protocols():
    """The hook-protocol module of every client, in the order commands ask them."""
    from git_korus_mail.clients.claude import protocol as claude
    return (claude,)


def installers():
    """The install-wiring module of every client (clients/claude/wiring.py), which install,
    uninstall and doctor go through in this order."""
    from git_korus_mail.clients.claude import wiring as claude
    return (claude,)


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


def default_config_root(client):
    """The config dir a session of `client` (its name, as presence records it) uses when its
    hooks named none; None for a client that keeps no registry."""
    for registry in registries():
        if registry.NAME == client:
            return registry.default_root()
    return None


def sessions(config_root):
    """What every client's own registry says runs under `config_root` (None: the config dir a
    session uses when its hooks named none), for `who` to check (core/roster.py)."""
    out = []
    for registry in registries():
        out.extend(registry.sessions(config_root))
    return out
