"""`remote add --creds <file>`: what kind of NATS credentials a file holds (docs/RELAY.md,
"Trust"). No nats here: `remote add` checks the file before it connects.

Three kinds, told apart by their content:
  - a user JWT and nkey seed (`nsc generate creds`, operator mode): "-----BEGIN NATS USER JWT";
  - an nkey seed alone (`nk -gen user`, a server config `nkey:` user): one line starting "SU";
  - a user and password, our own small form: `user: <name>` and `password: <secret>` lines
    (`#` comments), so the secret is never in the URL, config.json or `ps`.
"""

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict


class BadCreds(ValueError):
    pass


def options(path: str) -> "Dict[str, Any]":
    """nats.connect's keyword arguments for the credentials in `path`; BadCreds (one line) when the
    file is unreadable or none of the three kinds."""
    try:
        with open(path, "rb") as f:
            text = f.read(64 * 1024).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadCreds(f"{path}: unreadable ({exc.__class__.__name__})") from None
    if "-----BEGIN NATS USER JWT-----" in text:
        return {"user_credentials": path}
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if len(lines) == 1 and lines[0].startswith("SU") and len(lines[0]) == 58:
        return {"nkeys_seed": path}
    fields: "Dict[str, str]" = {}
    for ln in lines:
        key, sep, value = ln.partition(":")
        if sep and key.strip() in ("user", "password"):
            fields[key.strip()] = value.strip()
    if set(fields) == {"user", "password"} and fields["user"] and fields["password"]:
        return {"user": fields["user"], "password": fields["password"]}
    raise BadCreds(f"{path}: neither a NATS creds file (user JWT), an nkey seed (SU...), "
                   f"nor `user:` and `password:` lines")


def loose(path: str) -> bool:
    """True when others than the owner may read the file (a secret: `remote add` warns)."""
    try:
        return bool(os.stat(path).st_mode & 0o077)
    except OSError:
        return False
