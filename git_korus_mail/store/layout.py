"""Names and sizes of the store's files (see docs/STORE.md): the one place they are spelled."""

import os
import time

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any

MAIL_DIR = "mail"
OFF_FILE = "OFF"
TMP_MAX_AGE = 36 * 3600
MSG_SUFFIX = ".json"
WHY_SUFFIX = ".why.json"  # quarantine/<q-name>.why.json: why a file was moved aside
PRUNED_STAMP = "pruned"  # <box>/pruned: the last prune's time by its clock; its mtime says when to run next (store/retention.py)
PRUNING_DIR = "pruning"  # <box>/pruning/<id>.json: this message and its records are being removed
PRUNE_EVERY = 24 * 3600  # seconds between two prunes of one box
WATCH_DIR = "watch"  # <box>/watch/: wake-up watchers' claims and wakes records (store/watch.py)
FAST_DIR = "fast"  # <mail>/fast/: the hook stub's fast-path stamps (store/fastpath.py)
WORKTREE_FILE = "worktree"  # see forwarding: which worktree the box belongs to

CANCELLED = "cancelled"  # withdrawn by their sender before anyone consumed them (moves.cancel)
DROPPED = "dropped"  # stopped by the receiver's limits (drops.drop); why: drops/<id>.json
DROPS = "drops"  # the reason record of each dropped message: the rule that fired, and when
RELAY_DIR = "relay"  # <mail>/relay/: the relay's own files (store/relayfiles.py, docs/RELAY.md)
RELAY_CONFIG = "config.json"  # relay/config.json: there only while a remote is configured
ARRIVED = "arrived"  # arrived/<stamp>+<id>: when relayed mail arrived here, by this clock (store/arrivals.py)
# The states a message leaves the inbox for without being consumed; each one's journal event
# has the same name. A move into one is decided by the link into it (moves.complete_decided).
UNCONSUMED = ("expired", CANCELLED, DROPPED)
FINAL = ("seen",) + UNCONSUMED  # the states retention prunes from (store/retention.py)
# every directory a message file is filed in, one per state: queued, consumed, expired, cancelled, dropped
FILED = ("inbox", "seen", "expired", CANCELLED, DROPPED)
BOX_SUBDIRS = ("inbox", "claiming", "seen", "expired", CANCELLED, DROPPED, DROPS, "receipts", "shown", "sessions",
               "notices", "quarantine", "sent", "forwarded", ARRIVED)


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_SESSION_REST = _ALNUM | {".", "_", "-"}


def valid_session(s: "Any") -> bool:
    """[A-Za-z0-9][A-Za-z0-9._-]{0,127}: a session id that can name a directory as it is (the
    drain's sessions/ and shown/ names) and a message's `session` filter. Here, not in message.py,
    because every hook event needs it and an empty box's events need nothing else of the format."""
    return (isinstance(s, str) and 1 <= len(s) <= 128 and s[0] in _ALNUM
            and all(c in _SESSION_REST for c in s))


def staging_name(msg_id: str) -> str:
    """The name in tmp/ a message is written under before it is linked into an inbox."""
    return f"msg.{msg_id}"


def quarantine_name(t: float) -> str:
    """quarantine/q-YYYYMMDDTHHMMSSZ-<12 hex>: ours, short, and sorting by time."""
    return f"q-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(t))}-{os.urandom(6).hex()}"


def mail_root_path(common_dir: str) -> str:
    return os.path.join(common_dir, MAIL_DIR)


def remote_configured(common_dir: str) -> bool:
    """One stat, and no import: is a remote configured for this clone? A clone without one pays
    only this wherever a remote could matter (ask's wait-cycle check, docs/RELAY.md)."""
    return os.path.exists(os.path.join(common_dir, MAIL_DIR, RELAY_DIR, RELAY_CONFIG))
