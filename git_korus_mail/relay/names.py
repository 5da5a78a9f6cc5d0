"""Who is who across machines (docs/RELAY.md, "Names"): the namespace of a repository, a clone's
id and label, and the subjects and buckets they make. No nats here."""

import hashlib
import os
import subprocess

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Optional

LABEL_MAX = 32
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def normalise_origin(url: str) -> str:
    """One spelling per repository: `git@host:a/b.git`, `ssh://git@host/a/b`, `https://host/a/b/`
    all become `host/a/b` (host lowercased; user, port-less scheme, `.git` and slashes dropped).
    A local path stays a path (resolved), so two clones of one directory meet."""
    u = url.strip()
    if "://" in u:
        scheme, _, rest = u.partition("://")
        if scheme == "file":
            return os.path.realpath(rest).rstrip("/")
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1].lower()
        if scheme in ("ssh", "git", "http", "https") and host.endswith(":22"):
            host = host[:-3]
        u = host + "/" + path
    elif ":" in u and "/" not in u.split(":", 1)[0]:  # scp-like git@host:path
        host, _, path = u.partition(":")
        u = host.rsplit("@", 1)[-1].lower() + "/" + path.lstrip("/")
    else:
        return os.path.realpath(u).rstrip("/")
    u = u.rstrip("/")
    if u.endswith(".git"):
        u = u[:-4]
    return u.rstrip("/")


def namespace_of(origin: str) -> str:
    """The namespace's token in subjects and names: 16 hex of the normalised URL's hash (a
    subject token may not hold `.`, `*`, `>` or spaces, and a URL may)."""
    return hashlib.sha256(origin.encode("utf-8")).hexdigest()[:16]


def origin_url(worktree: str) -> "Optional[str]":
    proc = subprocess.run(["git", "config", "--get", "remote.origin.url"], cwd=worktree,
                          capture_output=True, text=True)
    return proc.stdout.strip() or None


def root_commits(worktree: str) -> "List[str]":
    """The repository's root commits (history's first commits): two clones of one repository
    share one; unrelated repositories that happen to use one URL do not."""
    proc = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=worktree,
                          capture_output=True, text=True)
    return sorted(proc.stdout.split()) if proc.returncode == 0 else []


def new_clone_id() -> str:
    return os.urandom(6).hex()


def valid_label(label: str) -> bool:
    return 1 <= len(label) <= LABEL_MAX and label[0].isalnum() and set(label) <= _LABEL_CHARS


def default_label() -> str:
    host = os.uname().nodename.split(".")[0].lower()
    label = "".join(c if c in _LABEL_CHARS else "-" for c in host)[:LABEL_MAX].strip("-_")
    return label if label and valid_label(label) else "clone"


def stream(ns: str) -> str:
    return f"KORUS-{ns}"


def bucket(ns: str) -> str:
    return f"korus-{ns}"


def subject_to(ns: str, clone: str, sender: str) -> str:
    """Everything for one clone (mail and fates) goes under one prefix, one consumer per clone;
    the last token is the sending clone's label, which the server's subject permissions can tie
    to that clone's credentials (docs/RELAY.md, "Trust"): the receiver reads who sent it there."""
    return f"korus.{ns}.to.{clone}.from.{sender}"


def inbox_filter(ns: str, clone: str) -> str:
    """The consumer's filter: all that is sent to `clone`, from any clone."""
    return f"korus.{ns}.to.{clone}.>"


def sender_of(subject: str) -> "Optional[str]":
    """The sending clone's label, from a subject made by subject_to (None for any other shape)."""
    parts = subject.split(".")
    if len(parts) == 6 and parts[0] == "korus" and parts[2] == "to" and parts[4] == "from":
        return parts[5]
    return None


def durable(label: str) -> str:
    """This clone's consumer on the namespace's stream, named by its label: the server's
    permissions can then name it (`$JS.API.CONSUMER.*.*.relay-<label>`, README "Several
    machines"), as the user is named by the label, and no clone can touch another's."""
    return f"relay-{label}"


def legacy_durable(clone: str) -> str:
    """The consumer's name before it was named by the label (by the random clone id, which no
    permission written before `remote add` can name): the relay migrates it (relay/server.py)."""
    return f"clone-{clone}"


def directory_key(label: str) -> str:
    """This clone's entry in the namespace's bucket (docs/RELAY.md, "Directory"), keyed by its
    label as its NATS user is named: the server's permissions can then give it to that user
    alone (`$KV.*.dir.<label>`, README "Several machines"), as they give `label.<label>`. The
    entry names the clone's id; a reader takes it only when `label.<label>` names that id too."""
    return f"dir.{label}"


def label_of_directory_key(key: str) -> "Optional[str]":
    """The label a `dir.<label>` key names (None for any other key)."""
    head, _, label = key.partition(".")
    return label if head == "dir" and valid_label(label) else None


def legacy_directory_key(clone: str) -> str:
    """The entry's key before it was keyed by the label: by the random clone id, which no
    permission written before `remote add` can name, so any clone's user could put any of them.
    Read for clones not yet moved, and kept current for older relays while the server allows it
    (relay/server.put_legacy_entry); `remote remove` deletes it where allowed."""
    return f"clone.{clone}"
