"""The relay's own files, `<common>/mail/relay/` (docs/RELAY.md, "On disk"): no nats here.

This directory is not mail state: no box is in it, and no reader of mail looks at it. Its
files are still opened, written and removed only by the store (store/relayfiles.py, docs/STORE.md:
the store owns every byte under mail/); this module names them and says what they hold. Every
file that must not tear (an outbox entry, a received marker) is written whole in relay/tmp/
and linked into place, as the store publishes (docs/STORE.md, "A hard link never replaces").
"""

import errno
import fcntl
import json
import os
import time

from git_korus_mail.store import relayfiles
from git_korus_mail.store.layout import RELAY_CONFIG, remote_configured

RELAY = "relay"
CONFIG = RELAY_CONFIG
STATE = "state.json"
PEERS = "peers.json"
LOCK = "lock"
LOG = "relay.log"
OUTBOX = "outbox"       # <id>.json: an envelope waiting for the server's ack
SENT = "sent"           # <id>.json: published (the server acked it); its fate when it came back
RECEIVED = "received"   # <id>.json: put into a local inbox (the redelivery guard), and its fate sent back
CANCELS = "cancels"     # <id>.json: a sender's cancel of mail for another clone, until the relay decides it
SUFFIX = ".json"
FORMAT = 1

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional


def relay_dir(common_dir: str) -> str:
    """Its path, for the words a person reads."""
    return relayfiles.path(common_dir)


def configured(common_dir: str) -> bool:
    """One stat: the whole cost of a clone with no remote (send's `<label>:<worktree>` check)."""
    return remote_configured(common_dir)


def present(common_dir: str) -> bool:
    """Is there a relay directory at all (`remote remove` of an unreadable configuration)?"""
    return relayfiles.exists(common_dir, "")


def wipe(common_dir: str) -> None:
    """`remote remove`: the whole directory, through the store."""
    relayfiles.remove_all(common_dir)


def load_small(common_dir: str, sub: str, name: str) -> "Optional[Any]":
    """A small JSON file of ours, or None when absent or damaged (read as absent)."""
    return relayfiles.read(common_dir, sub, name)


def load_config(common_dir: str) -> "Optional[Dict[str, Any]]":
    conf = load_small(common_dir, "", CONFIG)
    return conf if isinstance(conf, dict) and conf.get("v") == FORMAT else None


def ensure(common_dir: str) -> str:
    relayfiles.ensure(common_dir, ["tmp", OUTBOX, SENT, RECEIVED, CANCELS])
    return relay_dir(common_dir)


def write_whole(common_dir: str, sub: str, name: str, data: bytes, replace: bool = False) -> bool:
    """`data` at relay/<sub>/<name>, never torn. Exclusive unless `replace`: False when the name
    exists already (the first writer won)."""
    return relayfiles.write(common_dir, sub, name, data, replace=replace)


def encode(obj: "Any") -> bytes:
    return (json.dumps(obj, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")


def save_config(common_dir: str, conf: "Dict[str, Any]") -> None:
    ensure(common_dir)
    write_whole(common_dir, "", CONFIG, encode({**conf, "v": FORMAT}), replace=True)


def save_state(common_dir: str, state: "Dict[str, Any]") -> None:
    write_whole(common_dir, "", STATE, encode(state), replace=True)


def load_state(common_dir: str) -> "Optional[Dict[str, Any]]":
    st = load_small(common_dir, "", STATE)
    return st if isinstance(st, dict) else None


def save_peers(common_dir: str, peers: "Dict[str, Any]") -> None:
    write_whole(common_dir, "", PEERS, encode(peers), replace=True)


def load_peers(common_dir: str) -> "Optional[Dict[str, Any]]":
    p = load_small(common_dir, "", PEERS)
    return p if isinstance(p, dict) else None


# -- the outbox ----------------------------------------------------------------------------
def queue(common_dir: str, envelope: "Dict[str, Any]") -> None:
    """Put one envelope in the outbox: queued once its link exists (the relay publishes it)."""
    ensure(common_dir)
    if not write_whole(common_dir, OUTBOX, envelope["id"] + SUFFIX, encode(envelope)):
        raise FileExistsError(errno.EEXIST, "already in the outbox", envelope["id"])


def outbox_ids(common_dir: str) -> "List[str]":
    return _ids(common_dir, OUTBOX)


def ids_of(common_dir: str, sub: str) -> "List[str]":
    return _ids(common_dir, sub)


def _ids(common_dir: str, sub: str) -> "List[str]":
    names = relayfiles.names(common_dir, sub)
    return sorted(n[:-len(SUFFIX)] for n in names if n.endswith(SUFFIX) and not n.startswith("."))


def read_entry(common_dir: str, sub: str, msg_id: str) -> "Optional[Dict[str, Any]]":
    entry = load_small(common_dir, sub, msg_id + SUFFIX)
    return entry if isinstance(entry, dict) else None


def sent_entry(env: "Dict[str, Any]", seq: "Optional[int]", duplicate: bool) -> "Dict[str, Any]":
    """relay/sent/<id>.json for an outbox envelope the server stored (its ack's `seq`; None when
    the receiver's word, not the ack, proved it: relay/returns.sent_record)."""
    msg = env["msg"]
    return {"id": env["id"], "to_clone": env["to_clone"], "to_label": env["to_label"],
            "box": msg["to"]["key"], "path": msg["to"]["path"], "published_at": time.time(),
            "expires_at": msg.get("expires_at"), "seq": seq, "duplicate": duplicate}


def remove_entry(common_dir: str, sub: str, msg_id: str) -> None:
    relayfiles.remove(common_dir, sub, msg_id + SUFFIX)


def request_cancel(common_dir: str, msg_id: str, by: str) -> None:
    """`cancel` of mail sent to another clone: a request the relay decides with a create-only
    put (docs/RELAY.md, "Cross-machine decisions"); a second request for one id is the first."""
    ensure(common_dir)
    write_whole(common_dir, CANCELS, msg_id + SUFFIX, encode({"id": msg_id, "by": by, "at": time.time()}))


def cancel_ids(common_dir: str) -> "List[str]":
    return _ids(common_dir, CANCELS)


def sent_ids(common_dir: str) -> "List[str]":
    return _ids(common_dir, SENT)


def received_ids(common_dir: str) -> "List[str]":
    return _ids(common_dir, RECEIVED)


def mark(common_dir: str, sub: str, msg_id: str, record: "Dict[str, Any]", replace: bool = False) -> bool:
    return write_whole(common_dir, sub, msg_id + SUFFIX, encode(record), replace=replace)


# -- one relay per clone -------------------------------------------------------------------
def take_lock(common_dir: str) -> "Optional[int]":
    """The relay's lock (flock on relay/lock, dropped by the kernel when the process dies), or
    None when another relay holds it, or when there is no relay directory (removed). The holder
    writes its pid in the file, for `remote`."""
    try:  # never made here: a relay that read its configuration before a `remote remove` ends
        fd = relayfiles.open_fd(common_dir, LOCK, os.O_RDWR | os.O_CREAT, make_dir=False)
    except FileNotFoundError:
        return None
    for attempt in range(50):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            # a `remote` probing whether a relay runs holds a shared lock for microseconds:
            # only a lock held for half a second is another relay
            if attempt == 49:
                os.close(fd)
                return None
            time.sleep(0.01)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def running_pid(common_dir: str) -> "Optional[int]":
    """The pid of the relay that holds the lock now, or None when none runs."""
    try:
        fd = relayfiles.open_fd(common_dir, LOCK, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            try:
                return int(os.pread(fd, 32, 0).decode().strip() or 0) or -1
            except ValueError:
                return -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


# The relay's process, named and never imported: it runs relay/link.py with what the core knows of
# the clone (core/relayhost.py), and the relay imports nothing of the core (docs/RELAY.md, "Layers")
PROCESS = "git_korus_mail.core.relayhost"


def start(common_dir: str, python: "Optional[str]" = None) -> "Optional[int]":
    """Start the relay process for this clone, detached (its own session, output to relay.log),
    unless one runs: a second one would only find the lock taken and exit. Returns its pid."""
    import subprocess
    import sys
    if running_pid(common_dir) is not None:
        return None
    ensure(common_dir)
    log = relayfiles.open_fd(common_dir, LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        proc = subprocess.Popen([python or sys.executable, "-m", PROCESS, common_dir],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                cwd=common_dir)
    finally:
        os.close(log)
    return proc.pid


def wait_running(common_dir: str, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if running_pid(common_dir) is not None:
            return True
        time.sleep(0.02)
    return False


# The relay's crash points (git_korus_mail/crash.py's mechanism, KORUS_MAIL_CRASH_AT): each is a
# gap between two writes of a relay step; tests/test_relay.py kills the relay at every one.
STEPS = (
    "relay:published",        # the server acked an outbox entry; its sent record not written
    "relay:sent-recorded",    # sent record written; the outbox entry not yet removed
    "relay:inbox-published",  # incoming mail linked into the inbox; no received marker yet
    "relay:received-marked",  # received marker written; the server not yet acked
    "relay:fate-published",   # a fate sent back to the sender; the marker not yet updated
    "relay:delivery-decided",  # the receiver's create-only "delivered" put; not yet in the inbox
    "relay:arrival-recorded",  # its arrival recorded (store/arrivals.py); not yet in the inbox
    "relay:cancel-decided",   # the sender's create-only "cancelled" put; not yet recorded
    "relay:prune-journaled",  # relay-pruned journaled; its records not yet removed (relay/retention.py)
)


# -- what became of mail sent to another clone (status, cancel) ------------------------------
def remote_fate(common_dir: str, msg_id: str) -> "Dict[str, Any]":
    """The fate of mail this clone sent to another, as far as this clone knows it, offline: in
    the outbox; on the server (acked, no fate back yet); or the fate the other clone's relay
    sent back (consumed: by which session, when; expired, cancelled, dropped), or a cancel
    decided here (docs/RELAY.md, "Cross-machine decisions")."""
    rec = read_entry(common_dir, SENT, msg_id)
    fate = rec.get("fate") if rec is not None else None
    if isinstance(fate, dict) and isinstance(fate.get("state"), str):
        out = {k: fate.get(k) for k in ("state", "session", "at", "rule", "detail") if fate.get(k) is not None}
        if isinstance(fate.get("shown_at"), str):
            out["shown_at"] = fate["shown_at"]
        return out
    if read_entry(common_dir, OUTBOX, msg_id) is not None:
        return {"state": "outbox", "detail": "in this clone's outbox: it leaves when the link is up"}
    if rec is not None:
        from git_korus_mail.stamps import utc_stamp
        at = rec.get("published_at")
        return {"state": "on-server", "detail": "on the server for the other clone; no fate back yet",
                "at": utc_stamp(at) if isinstance(at, (int, float)) else None}
    return {"state": "missing", "detail": "not among the relay's records (pruned after its retention, or "
                                          "forgotten when this clone's remote was removed)"}
