"""Names and sizes of the store's files (see docs/STORE.md): the one place they are spelled."""

import os
import time

MAIL_DIR = "mail"
OFF_FILE = "OFF"
TMP_MAX_AGE = 36 * 3600
MSG_SUFFIX = ".json"
WHY_SUFFIX = ".why.json"  # quarantine/<q-name>.why.json: why a file was moved aside
WORKTREE_FILE = "worktree"  # see forwarding: which worktree the box belongs to

CANCELLED = "cancelled"  # withdrawn by their sender before anyone consumed them (Box.cancel)
BOX_SUBDIRS = ("inbox", "claiming", "seen", "expired", CANCELLED, "receipts", "shown", "sessions", "notices",
               "quarantine", "sent", "forwarded")


def staging_name(msg_id: str) -> str:
    """The name in tmp/ a message is written under before it is linked into an inbox."""
    return f"msg.{msg_id}"


def quarantine_name(t: float) -> str:
    """quarantine/q-YYYYMMDDTHHMMSSZ-<12 hex>: ours, short, and sorting by time."""
    return f"q-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(t))}-{os.urandom(6).hex()}"


def mail_root_path(common_dir: str) -> str:
    return os.path.join(common_dir, MAIL_DIR)
