"""`<mail>/hooks/`: the record of what install did (installed.json) and the lock that keeps
one install or uninstall at a time per clone."""

import os

from git_korus_mail import fastjson  # send reads the record: no `import json` there (issue 26)
from git_korus_mail.errors import MailError
from git_korus_mail.wiring import files as wfiles

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, ContextManager, Dict, Iterator, Optional

    from git_korus_mail.store.files import MailRoot

HOOKS_SUBDIR = "hooks"
RECORD_NAME = "installed.json"
LOCK_NAME = ".install.lock"
LOCK_TIMEOUT = 30


class Record:
    """`<mail>/hooks/installed.json`: per scope, which files we created or modified (with the
    original text, so uninstall can restore bytes), dirs we made, the exclude line, the
    post-checkout hook."""

    def __init__(self, path: str, data: "Dict[str, Any]") -> None:
        self.path = path
        self.data = data

    @classmethod
    def load(cls, hooks_dir: str) -> "Record":
        path = os.path.join(hooks_dir, RECORD_NAME)
        raw = wfiles.read_bytes(path)
        data: "Any" = {}  # JSON from disk, checked below
        if raw:
            try:
                data = fastjson.loads(raw)
            except ValueError:
                data = {}  # a damaged record: uninstall falls back to finding our entries
        if not isinstance(data, dict):
            data = {}
        data.setdefault("scopes", {})
        return cls(path, data)

    def scope(self, name: str, create: bool = False) -> "Optional[Dict[str, Any]]":
        scopes: "Dict[str, Dict[str, Any]]" = self.data["scopes"]
        if create:
            scopes.setdefault(name, {"files": {}})
        return scopes.get(name)

    def drop_scope(self, name: str) -> None:
        self.data["scopes"].pop(name, None)

    def save(self) -> None:
        if not self.data["scopes"]:
            if os.path.exists(self.path):
                os.unlink(self.path)
            return
        import json  # install and uninstall only
        data = (json.dumps(self.data, indent=2, sort_keys=True) + "\n").encode()
        if wfiles.read_bytes(self.path) != data:  # a repeated install leaves every byte and mtime alone
            wfiles.write_atomic(self.path, data, 0o600)


def ensure_hooks_dir(root: "MailRoot") -> str:
    return root.ensure_dir_path(HOOKS_SUBDIR)


def locked(hooks_dir: str) -> "ContextManager[None]":
    """One install/uninstall at a time per clone (a post-checkout may race a manual install)."""
    from contextlib import contextmanager  # here: send reads this module, and pays nothing for it (issue 26)
    return contextmanager(_locked)(hooks_dir)


def _locked(hooks_dir: str) -> "Iterator[None]":
    import portalocker
    path = os.path.join(hooks_dir, LOCK_NAME)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    try:
        flags = portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING  # retried until timeout
        with portalocker.Lock(path, mode="a", timeout=LOCK_TIMEOUT, flags=flags):
            yield
    except portalocker.exceptions.LockException:
        raise MailError(f"another install or uninstall holds {path}; try again") from None


def remove_stub(stub: str) -> bool:
    """Delete the stub (once no scope calls it); True when there was one to delete."""
    if not os.path.lexists(stub):
        return False
    os.unlink(stub)
    return True


def remove_hooks_dir(hooks_dir: str) -> None:
    """Nothing of ours is left to serialise: the lock file and hooks/ go too (best effort:
    a file someone else put there keeps the directory)."""
    try:
        os.unlink(os.path.join(hooks_dir, LOCK_NAME))
        os.rmdir(hooks_dir)
    except OSError:
        pass


def anything_wired(mail_root: str) -> bool:
    """Whether install wired any hook of this clone, in either scope (send's verdict: without
    one, nothing shows the mail). True when the record cannot be read: say nothing untrue."""
    try:
        return bool(Record.load(os.path.join(mail_root, HOOKS_SUBDIR)).data["scopes"])
    except (OSError, MailError, KeyError, TypeError):
        return True
