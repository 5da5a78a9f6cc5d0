"""The wake-up tier's files in a box (docs/HOOKS.md, "The wake-up tier"): `watch/<session>@<launch>`,
the claim of the one watcher a launch may have, and `watch/<session>@<launch>.wakes`, what that
launch's watchers woke it for (a message wakes a launch at most once; the wake budget).

The claim is created exclusively (staged, then linked: complete before it is visible), so two
watchers of one launch can never both hold it; one whose owner provably died is broken. Only
the claim's holder writes the wakes record, so it needs no lock.

`watch/.<session>@<launch>.signal` is a FIFO the claim's holder keeps open while it waits; a
publication into the box writes a byte to every one there (`poke`), so the watcher looks at once
instead of at its next look at the inbox's mtime (issue 26). A wake-up only: what wakes is the
look, which reads the inbox as before. Its name starts with a dot so that nothing that counts a
launch's watchers by their claims (the stub's `watch/<session>@*`, hooks/hook.sh) counts it.
"""

import os
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.store import claims, fifo
from git_korus_mail.store.launch import parse_tag
from git_korus_mail.store.layout import WATCH_DIR
from git_korus_mail.stamps import utc_stamp

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Optional

    from git_korus_mail.store.files import Box
    from git_korus_mail.store.fsafe import Dir
    from git_korus_mail.store.launch import Launch

SUB = WATCH_DIR
WAKES_SUFFIX = ".wakes"
SIGNAL_SUFFIX = ".signal"  # "." + the claim's name + this: the watcher's FIFO
SIGTERM = 15  # os.kill takes the number: the signal module costs the hot path an import
SWEEP = 4  # other launches' files judged per arming: bounded work


def name_of(session_dir: str, launch: "Launch") -> str:
    return f"{session_dir}@{launch.tag}"


def _dir(box: "Box", create: bool) -> "Optional[Dir]":
    return box.ensure_sub(SUB) if create else box.open_sub(SUB)


def arm(box: "Box", session_dir: str, launch: "Launch", until: float) -> "tuple[bool, Optional[dict[str, Any]]]":
    """Take the launch's one watcher claim for this process. (True, record) when taken; (False,
    the holder's record) when a live watcher holds it. A holder that provably died is broken."""
    d = _dir(box, create=True)
    assert d is not None  # for mypy: create=True makes it or raises
    name = name_of(session_dir, launch)
    rec = claims.me("watch", session_dir, box.root)
    rec.update({"launch": launch.tag, "armed_at": utc_stamp(time.time()), "until": utc_stamp(until)})
    data = json.dumps(rec, sort_keys=True).encode()
    for _attempt in range(2):
        try:
            d.create_staged(name, data, box.root.tmp, "watch", sync=False)
            _sweep(d, name)
            return True, rec
        except FileExistsError:
            held = d.read_json(name, 4096)
            if isinstance(held, dict) and not claims.owner_is_dead(held, box.root):
                return False, held
            d.unlink_quiet(name)  # its watcher is gone (or its record is mangled): the claim is free
    return False, None


def holds(box: "Box", session_dir: str, launch: "Launch", rec: "dict[str, Any]") -> bool:
    """Whether the claim still names the watcher `rec` (a prompt takes it away)."""
    d = _dir(box, create=False)
    if d is None:
        return False
    held = d.read_json(name_of(session_dir, launch), 4096)
    return isinstance(held, dict) and held.get("pid") == rec["pid"] and held.get("start") == rec["start"]


def release(box: "Box", session_dir: str, launch: "Launch", rec: "dict[str, Any]") -> None:
    """The watcher `rec` lets its claim go (it woke the session, timed out, or saw its launch end)."""
    if holds(box, session_dir, launch, rec):
        d = _dir(box, create=False)
        if d is not None:
            d.unlink_quiet(name_of(session_dir, launch))


def signal_name(session_dir: str, launch: "Launch") -> str:
    return f".{name_of(session_dir, launch)}{SIGNAL_SUFFIX}"


def open_signal(box: "Box", session_dir: str, launch: "Launch") -> "Optional[int]":
    """The claim's holder: a descriptor that becomes readable when mail is published into the
    box, or None where no FIFO can be had (the watcher then only polls). Opened read and write,
    so it never reads an end of file; a FIFO left by a killed watcher of this launch serves
    again once proved a FIFO of ours. Close it with `close_signal`."""
    d = _dir(box, create=False)
    if d is None:
        return None
    return fifo.open_fifo(d, signal_name(session_dir, launch))


def close_signal(box: "Box", session_dir: str, launch: "Launch", fd: "Optional[int]") -> None:
    """The watcher is done waiting: its FIFO goes (before its claim, so no FIFO outlives one)."""
    d = _dir(box, create=False)
    if d is not None:
        d.unlink_quiet(signal_name(session_dir, launch))
    if fd is not None:
        os.close(fd)


def poke(box: "Box") -> None:
    """After a publication into `box`: wake every watcher waiting there at once. Never blocks and
    never fails the publication: no FIFO, no reader (a killed watcher's FIFO: the open fails at
    once), a full pipe or anything else is only no wake-up, and the watcher's own look at the
    inbox (every 0.1 s with a FIFO) finds the mail all the same."""
    d = _dir(box, create=False)
    if d is None:
        return
    for name in d.names():
        if name.startswith(".") and name.endswith(SIGNAL_SUFFIX):
            fifo.poke_fifo(d, name)


def disarm(box: "Box", session_dir: str, launch: "Launch") -> bool:
    """End the launch's watcher, if it has one: the session works again (a prompt) or
    ends. The claim goes first, then the watcher is told to stop (SIGTERM, to the process the
    claim names only when its start time still matches). True when there was a claim."""
    d = _dir(box, create=False)
    if d is None:
        return False
    name = name_of(session_dir, launch)
    held = d.read_json(name, 4096)
    # the FIFO too: the watcher ends on SIGTERM without its own cleanup (commands/watch.py)
    d.unlink_quiet(signal_name(session_dir, launch))
    if not d.unlink_quiet(name):
        return False
    pid = held.get("pid") if isinstance(held, dict) else None
    if isinstance(pid, int) and pid > 0 and pid != os.getpid() and isinstance(held.get("start"), int) \
            and claims.process_runs(pid, held["start"])[0]:
        try:
            os.kill(pid, SIGTERM)
        except OSError:
            return True  # gone meanwhile: what the signal was for
        _wait_gone(pid, held["start"])
    return True


def _wait_gone(pid: int, start: int, limit: float = 0.5) -> None:
    """Wait (briefly) until the signalled watcher has exited, so that the turn this prompt starts
    cannot arm the next watcher while the old one still runs: one watcher process per launch,
    not only one claim. It exits at once on SIGTERM (commands/watch.py); gone by the one liveness
    rule (claims.process_runs: a zombie is gone)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not claims.process_runs(pid, start)[0]:
            return
        time.sleep(0.002)


def wakes(box: "Box", session_dir: str, launch: "Launch") -> "dict[str, Any]":
    """{"woken": [ids], "times": [epoch seconds], "told": [ids]}: what woke this launch, and
    which waiting messages the user was told were over the wake budget."""
    return wakes_of(box, session_dir, launch.tag)


def wakes_of(box: "Box", session_dir: str, launch_tag: str) -> "dict[str, Any]":
    """`wakes` of the launch with tag `launch_tag` (a presence record's `launch`)."""
    d = _dir(box, create=False)
    rec = d.read_json(f"{session_dir}@{launch_tag}" + WAKES_SUFFIX, 256 * 1024) if d is not None else None
    out: "dict[str, Any]" = {"woken": [], "times": [], "told": []}
    if isinstance(rec, dict):
        for k in out:
            v = rec.get(k)
            if isinstance(v, list):
                out[k] = v
    return out


def save_wakes(box: "Box", session_dir: str, launch: "Launch", rec: "dict[str, Any]") -> None:
    d = _dir(box, create=True)
    assert d is not None  # for mypy: create=True makes it or raises
    d.write_replace(name_of(session_dir, launch) + WAKES_SUFFIX, json.dumps(rec, sort_keys=True).encode(),
                    box.root.tmp)


def clear(box: "Box", session_dir: str, launch: "Launch") -> None:
    """The launch ended (its end phase): its watcher and its wakes record go."""
    disarm(box, session_dir, launch)
    d = _dir(box, create=False)
    if d is not None:
        d.unlink_quiet(name_of(session_dir, launch) + WAKES_SUFFIX)


def inbox_stamp(box: "Box") -> "Optional[tuple[int, int]]":
    """(mtime, ctime) of the inbox directory in ns: changes when a message is linked or unlinked."""
    try:
        st = os.stat(box.path_of("inbox"))
    except OSError:
        return None
    return st.st_mtime_ns, st.st_ctime_ns


def until_of(box: "Box", session_dir: str, launch_tag: str) -> "Optional[str]":
    """When the launch's armed watcher gives up waiting (its `until`), or None when it has no
    live watcher: what `list` and `who` show as "wakeable until"."""
    d = _dir(box, create=False)
    if d is None:
        return None
    held = d.read_json(f"{session_dir}@{launch_tag}", 4096)
    if not isinstance(held, dict) or claims.owner_is_dead(held, box.root):
        return None
    until = held.get("until")
    return until if isinstance(until, str) else None


def _sweep(d: "Dir", keep: str) -> None:
    """Remove a few files of launches that provably no longer run (a killed launch runs no end phase)."""
    me: "Optional[dict[str, Any]]" = None
    mine = f".{keep}{SIGNAL_SUFFIX}"
    for name in [n for n in d.names() if (not n.startswith(".") or n.endswith(SIGNAL_SUFFIX))
                 and not n.startswith(keep) and n != mine][:SWEEP]:
        tag = name[:-len(WAKES_SUFFIX)] if name.endswith(WAKES_SUFFIX) else name
        if name.startswith("."):  # a killed watcher's FIFO
            tag = name[1:-len(SIGNAL_SUFFIX)]
        parsed = parse_tag(tag.rpartition("@")[2])
        if parsed is None:
            continue
        if me is None:
            me = claims.me("sweep")
        pid, start, boot8 = parsed
        owner = {"pid": pid, "start": start, "host": me["host"], "pidns": me["pidns"],
                 "boot": me["boot"] if (boot8 and me["boot"] and me["boot"].startswith(boot8)) else "other"}
        if claims.owner_is_dead(owner):
            d.unlink_quiet(name)
