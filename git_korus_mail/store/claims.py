"""Exclusive claims on one message, and who holds them.

A claim is a small file `claiming/<id>.claim` that already names its owner when it
appears: it is written in tmp/ and hard-linked into place, and link() fails with
EEXIST for everyone but the first. (docs/DESIGN.md R5: move-and-catch and
check-then-write schemes gave several winners across processes; only an
exclusive create excludes.)

The claim serialises consume and expire of one message. It is not what makes
consumption exactly-once: the receipt is, created exclusively (see store). So a
claim race that ends badly can at worst refuse falsely, which leaves the message
queued for the next drain, never deliver it twice.

A claim is held state and never expires by age. It is broken only when its owner
is provably dead, by the one liveness rule (`judge`, docs/STORE.md "Liveness"): another boot;
its life lock free (store/life.py), in whatever pid namespace it ran; or, in our pid namespace,
its pid gone, a zombie, or running a different process (start time differs).
"""

import os
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail import crash
from git_korus_mail.store.fsafe import NotRegular, TooLarge
# the /proc readers live in launch.py, so that identifying a launch loads nothing else (hot path);
# re-exported (`as`) for the callers that judge processes through claims
from git_korus_mail.store.launch import boot_id as boot_id, host, pid_ns, proc_start_time as proc_start_time
from git_korus_mail.store.launch import process_runs as process_runs

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.store.shapes import Liveness
    from git_korus_mail.store.fsafe import Dir

CLAIM_SUFFIX = ".claim"


def me(purpose: str, session: "Optional[str]" = None, root: "Optional[MailRoot]" = None) -> "dict[str, Any]":
    """This process as a claim owner; with its life token when it holds a life lock in `root`,
    the mail root the record is for (store/life.py): it proves the owner alive or dead from any
    pid namespace."""
    pid = os.getpid()
    rec = {
        "pid": pid,
        "start": proc_start_time(pid),
        "boot": boot_id(),
        "pidns": pid_ns(),
        "host": host(),
        "purpose": purpose,
        "session": session,
    }
    if root is not None:
        from git_korus_mail.store import life  # a small module, and only for a record of a root
        tok = life.token(root)
        if tok is not None:
            rec["life"] = tok
    return rec


def owner_is_dead(owner: "Any", root: "Optional[MailRoot]" = None) -> bool:
    """True only when the owner provably no longer runs; unsure means alive. `root`: the mail root
    whose life locks prove an owner that recorded one (without it, only its pid is judged)."""
    return judge(owner, root)[0] == "dead"


def judge(owner: "Any", root: "Optional[MailRoot]" = None) -> "tuple[Liveness, str]":
    """(verdict, what is known) about an owner record (a claim's, a wait's, a watcher's): the one
    liveness rule (docs/STORE.md, "Liveness"). verdict: "dead" (provably gone), "alive" (it runs)
    or "unknown" (nothing here can tell: such a claim is never broken automatically; `git
    korus-mail release` lets a person who knows do it)."""
    if not isinstance(owner, dict) or not owner:
        return "unknown", "its owner record is unreadable or mangled"
    mine = me("check")
    if owner.get("host") != mine["host"]:
        # another machine sharing the store: we cannot see its processes
        return "unknown", f"it was taken on host {owner.get('host')!r}, not this one ({mine['host']!r})"
    if owner.get("boot") and mine["boot"] and owner["boot"] != mine["boot"]:
        return "dead", "the machine has rebooted since it was taken"
    if root is not None and "life" in owner:
        from git_korus_mail.store import life
        held = life.state(root, owner["life"])
        if held == "dead":
            return "dead", f"pid {owner.get('pid')!r} has ended: its life lock is free"
        if held == "alive":
            return "alive", f"pid {owner.get('pid')!r} runs: it holds its life lock"
    if owner.get("pidns") != mine["pidns"]:
        # another pid namespace (a container, a client's sandbox) and no life lock to go by
        return "unknown", f"it was taken in another pid namespace ({owner.get('pidns')!r}) and holds no life lock"
    pid = owner.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return "unknown", f"its record names no usable pid ({pid!r})"
    start = owner.get("start")
    runs, known = process_runs(pid, start if isinstance(start, int) and not isinstance(start, bool) else None)
    return ("alive" if runs else "dead"), known


def parse_owner(data: bytes) -> "Optional[dict[str, Any]]":
    try:
        owner = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    return owner if isinstance(owner, dict) else None


def acquire(tmp_dir: "Dir", claiming_dir: "Dir", msg_id: str, owner: "dict[str, Any]") -> "tuple[str, Optional[dict[str, Any]]]":
    """Try to claim `msg_id`. Returns ("won", None), or ("held", owner) when another has it.

    The claim file is complete before it is visible (staged in tmp/, then linked)."""
    data = json.dumps(owner, sort_keys=True).encode()
    try:
        claiming_dir.create_staged(msg_id + CLAIM_SUFFIX, data, tmp_dir, "claim", sync=False)
        return "won", None
    except FileExistsError:
        return "held", read_owner(claiming_dir, msg_id)


def read_owner(claiming_dir: "Dir", msg_id: str) -> "Optional[dict[str, Any]]":
    try:
        data, _st = claiming_dir.read_regular(msg_id + CLAIM_SUFFIX, 64 * 1024)
    except FileNotFoundError:
        return None
    except (OSError, NotRegular, TooLarge):
        return {}  # unreadable reads as "owner unknown", which counts as alive: never broken
    return parse_owner(data) or {}


def release(claiming_dir: "Dir", msg_id: str) -> bool:
    """Remove our claim; True when it was there."""
    return claiming_dir.unlink_quiet(msg_id + CLAIM_SUFFIX)


# How long a claim's remover waits for the claiming/ lock (held only for a read and an unlink).
LOCK_PATIENCE = 2.0


def _lock(claiming_dir: "Dir", exclusive: bool) -> "Optional[int]":
    """flock(2) on a descriptor of its own of claiming/ (docs/STORE.md, "Breaking a claim"): the
    descriptor, or None when the lock stayed busy for LOCK_PATIENCE. A lock of a killed process
    goes with it, so a kill can leave no lock behind. -1 when this file system has no locks."""
    import fcntl
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0), dir_fd=claiming_dir.fd)
    mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    pause, waited = 0.002, 0.0
    while True:
        try:
            fcntl.flock(fd, mode)
            return fd
        except BlockingIOError:
            if waited >= LOCK_PATIENCE:
                os.close(fd)
                return None
        except OSError:  # ENOLCK, EOPNOTSUPP: no locking here
            os.close(fd)
            return -1
        time.sleep(pause)
        waited += pause
        pause = min(pause * 2, 0.05)


def _remove_if(claiming_dir: "Dir", msg_id: str, same: "Callable[[Optional[bytes]], bool]") -> "Optional[bool]":
    """Unlink `claiming/<id>.claim` only if its bytes (None: unreadable) still pass `same`, read
    under the exclusive lock. True to the one process that removed it, None when it was already
    gone, False when it was another claim (or the lock stayed busy, or there is none: the claim
    stays, which can refuse falsely but never grants twice).

    Why this is exact: under the exclusive lock nothing can replace the file between our read
    and our unlink. Another remover waits for the lock; an owner's release (`release_own`) holds
    the shared one; and an acquire can only link a free name, never replace one. So the file we
    unlink is the one we read, and the name is free only once that claim is gone: a live
    claim is never taken aside (issue 22: the old rename-aside freed a live claim's name)."""
    name = msg_id + CLAIM_SUFFIX
    fd = _lock(claiming_dir, exclusive=True)
    if fd is None or fd < 0:
        return False
    data: "Optional[bytes]"
    try:
        try:
            data = claiming_dir.read_regular(name, 64 * 1024)[0]
        except FileNotFoundError:
            return None
        except (OSError, NotRegular, TooLarge):
            data = None
        if not same(data):
            return False
        crash.point("break:judged")
        return True if claiming_dir.unlink_quiet(name) else None
    finally:
        os.close(fd)


def break_dead(claiming_dir: "Dir", msg_id: str, seen_owner: "Any") -> "Optional[bool]":
    """Remove a claim whose owner is dead: exactly that claim, never a newer live one (the caller
    judged `seen_owner` dead, and death is for good). True only to the process that removed it
    (it repairs and journals); None when another removed it first; False when the claim now is
    another one, or the lock stayed busy (try again later)."""
    return _remove_if(claiming_dir, msg_id, lambda data: data is not None and parse_owner(data) == seen_owner)


def release_as_seen(claiming_dir: "Dir", msg_id: str, seen_data: "Optional[bytes]") -> "Optional[bool]":
    """Remove a claim a person released (`git korus-mail release`), only if it still holds exactly
    `seen_data`, the bytes they were shown (None when it could not be read). True when removed,
    False when it had changed, None when it was already gone."""
    return _remove_if(claiming_dir, msg_id, lambda data: data == seen_data)


def release_own(claiming_dir: "Dir", msg_id: str, owner: "dict[str, Any]") -> bool:
    """Remove our claim, only if it is still ours; True when removed. Read and unlinked under the
    shared lock, so a remover (which holds the exclusive one) never reads our claim and then
    unlinks a newer one. A busy lock leaves the claim: ours, so dead when we exit, and broken."""
    fd = _lock(claiming_dir, exclusive=False)
    if fd is None:
        return False
    try:
        holder = read_owner(claiming_dir, msg_id)
        if holder is None or holder.get("pid") != owner["pid"] or holder.get("start") != owner["start"]:
            return False
        return release(claiming_dir, msg_id)
    finally:
        if fd >= 0:
            os.close(fd)


def breaker_may_be_alive(aside_name: str) -> bool:
    """Whether the process that renamed a claim aside (`<id>.claim.broken-<pid>-<hex>`, left by
    versions before the lock) may still be finishing its repair. While it may, nobody else
    repairs for it: two repairers would both find the journal line missing and both add it.
    Unsure (an unparsable name, a reused pid) means alive; the cost is only that its aside file
    waits, since the claim itself is gone."""
    tail = aside_name.rpartition(".broken-")[2]
    pid_text = tail.partition("-")[0]
    if not pid_text.isdigit() or int(pid_text) <= 0:
        return True
    return process_runs(int(pid_text), None)[0]  # the one rule: a zombie breaker is not alive


def is_breaker_leftover(name: str) -> bool:
    """A claim a breaker of an older version renamed aside (`<id>.claim.broken-<pid>-<hex>`) and did not finish with."""
    return CLAIM_SUFFIX + ".broken-" in name

