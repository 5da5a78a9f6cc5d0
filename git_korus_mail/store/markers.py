"""Display markers: `shown/<session>@<launch>/<id>`, proof that one launch displayed a message.

A marker is written only after the output that displayed the message was flushed,
and it lives in the directory of the launch that wrote it: the session id plus the
client process (see store/launch.py). A Stop consumes only what its own launch's
directory holds, so a marker left by a killed launch authorizes nothing: the next
launch of the same session id is shown that mail again (a duplicate display, never
a silent loss) and consumes it at its own Stop.

Directories of launches that are provably gone, of the layout before launches
(`shown/<session>/`), and of junk, are swept a few at a time at a launch's opening show and
at consume; removing a marker can only cause a message to be shown again.
"""

import errno
import os

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail.errors import MailError
from git_korus_mail.store.launch import UNKNOWN_TAG, parse_tag

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Optional

    from git_korus_mail.store.files import Box
    from git_korus_mail.store.fsafe import Dir
    from git_korus_mail.store.launch import AnyLaunch
    from git_korus_mail.store.shapes import MarkedLaunch, ShownTo

SEP = "@"  # never in a session's directory name ([A-Za-z0-9._-]; see drain_context.session_dir_name)
RECORD = ".launch"  # in each launch directory: who the launch is (dot name: never taken for a marker)
SKIP_SUFFIX = ".skip"
SWEEP_DIRS = 4  # other launches' directories judged per event
SWEEP_FILES = 200  # markers removed per event; a bigger directory takes several events
UNPROVABLE_IDLE = 7 * 24 * 3600  # a launch on another host or pid namespace: swept when idle this long
UNKNOWN_IDLE = 36 * 3600  # a directory of unidentified launches (their end phase usually removes it)


def dir_name(session_dir: str, launch: "AnyLaunch") -> str:
    return f"{session_dir}{SEP}{launch.tag}"


def split_name(name: str) -> "tuple[str, Optional[str]]":
    """(session dir name, launch tag) of a marker directory name; tag None for the old layout."""
    session, sep, tag = name.rpartition(SEP)
    if not sep:
        return name, None
    return session, tag


class LaunchMarkers:
    """The marker directory of one (session, launch); created on the first write."""

    def __init__(self, shown: "Dir", session_dir: str, launch: "AnyLaunch", tmp: "Dir") -> None:
        self.shown = shown
        self.session = session_dir
        self.launch = launch
        self.name = dir_name(session_dir, launch)
        self.tmp = tmp
        self._dir: "Optional[Dir]" = None

    def existing(self) -> "Optional[Dir]":
        if self._dir is None:
            self._dir = self.shown.open_sub(self.name)
        return self._dir

    def names(self) -> "set[str]":
        """Marker and skip names (not the launch record)."""
        d = self.existing()
        return {n for n in d.names() if not n.startswith(".")} if d is not None else set()

    def _created(self) -> "Dir":
        if self._dir is None:
            self._dir = self.shown.ensure_sub(self.name)
            rec = self.launch.record()
            if rec is not None and not self._dir.exists(RECORD):
                marked: "MarkedLaunch" = {**rec, "session": self.session}
                try:
                    self._dir.create_staged(RECORD, json.dumps(marked, sort_keys=True).encode(), self.tmp,
                                            "launch", sync=False)
                except FileExistsError:
                    pass  # a concurrent event of the same launch wrote it
        return self._dir

    def mark(self, msg_id: str, observation: "dict[str, Any]") -> None:
        """Write one marker (after the output is out). OSError or MailError when it cannot be
        written: the message is then shown again later, which is safe, and the caller says so."""
        try:
            self._created().create_staged(msg_id, json.dumps(observation, sort_keys=True).encode(), self.tmp,
                                          "marker", sync=False)
        except FileExistsError:
            pass

    def skip(self, msg_id: str) -> None:
        """Remember that a message addressed to another session is not for this one."""
        try:
            self._created().create_exclusive(msg_id + SKIP_SUFFIX, b"", sync=False)
        except FileExistsError:
            pass

    def shown_ids(self) -> "list[str]":
        return sorted(n for n in self.names() if not n.endswith(SKIP_SUFFIX))

    def unseen(self, ids: "list[str]") -> "list[str]":
        """Of `ids` (oldest first), those this launch was neither shown nor told to skip: what
        a show offers. An empty inbox reads no marker."""
        if not ids:
            return []
        already = self.names()
        return [i for i in ids if i not in already and i + SKIP_SUFFIX not in already]

    def read(self, msg_id: str) -> "Any":  # the marker as parsed: any JSON value
        d = self.existing()
        if d is None:
            raise FileNotFoundError(msg_id)  # no directory: no marker
        data, _ = d.read_regular(msg_id, 64 * 1024)
        return json.loads(data)

    def unmark(self, msg_id: str) -> None:
        """Remove the display marker of `msg_id` (its message consumed, or the marker not this launch's)."""
        d = self.existing()
        if d is not None:
            d.unlink_quiet(msg_id)

    def forget_shown(self) -> None:
        """Remove every display marker of this launch (not its skips): the client started a new
        context, so nothing shown before proves that the model still has it."""
        d = self.existing()
        if d is None:
            return
        for name in self.shown_ids():
            d.unlink_quiet(name)

    def clear(self) -> None:
        """Remove this launch's directory (the end phase): whatever it showed stays queued."""
        d = self.existing()
        if d is None:
            return
        for name in d.names():
            d.unlink_quiet(name)
        d.close()
        self._dir = None
        _rmdir(self.shown, self.name)


def sweep(shown: "Dir", keep: str, now: float, judged: int = SWEEP_DIRS, files: int = SWEEP_FILES) -> int:
    """Remove a few directories of launches that are gone (never `keep`, ours). Returns the
    number of entries removed. Which ones are judged rotates, so every one is reached."""
    names = [n for n in shown.names() if n != keep and not n.startswith(".")]
    if not names:
        return 0
    first = int.from_bytes(os.urandom(2), "big") % len(names)
    removed = 0
    me: "Optional[dict[str, Any]]" = None
    for name in (names[first:] + names[:first])[:judged]:
        if removed >= files:
            break
        try:
            st = shown.lstat(name)
        except FileNotFoundError:
            continue
        if not _is_dir(st):
            shown.unlink_quiet(name)  # junk (a file, a symlink): never followed
            removed += 1
            continue
        if me is None:
            from git_korus_mail.store import claims  # only with another launch's directory to judge
            me = claims.me("sweep")
        try:
            if _gone(shown, name, st, now, me):
                removed += _remove(shown, name, files - removed)
        except OSError:
            continue  # housekeeping: a directory we cannot clear now is judged again later
    return removed


def _is_dir(st: os.stat_result) -> bool:
    return (st.st_mode & 0o170000) == 0o040000


def _gone(shown: "Dir", name: str, st: os.stat_result, now: float, me: "dict[str, Any]") -> bool:
    """True when no live launch can use this directory's markers again."""
    from git_korus_mail.store import claims
    _session, tag = split_name(name)
    if tag is None:
        return True  # the layout before launches: no launch can ever read it
    if tag == UNKNOWN_TAG:
        return now - st.st_mtime > UNKNOWN_IDLE
    owner = _recorded_owner(shown, name)
    if owner is None:
        parsed = parse_tag(tag)
        if parsed is None:
            return True  # not a name we write
        pid, start, boot8 = parsed
        if boot8 and me["boot"] and not me["boot"].startswith(boot8):
            return True  # another boot (or another host; its markers then only cost a re-display)
        owner = {"pid": pid, "start": start, "host": me["host"], "pidns": me["pidns"]}
    if claims.owner_is_dead(owner):
        return True
    if owner.get("host") != me["host"] or owner.get("pidns") != me["pidns"]:
        return now - st.st_mtime > UNPROVABLE_IDLE  # we cannot see that process: go by age
    return False


def _recorded_owner(shown: "Dir", name: str) -> "Optional[dict[str, Any]]":
    try:
        d = shown.open_sub(name)
    except MailError:
        return None
    if d is None:
        return None
    try:
        rec = d.read_json(RECORD, 4096)
    finally:
        d.close()
    return rec if isinstance(rec, dict) and isinstance(rec.get("pid"), int) else None


def _remove(shown: "Dir", name: str, budget: int) -> int:
    try:
        d = shown.open_sub(name)
    except MailError:
        return 0  # another owner's or a writable directory: not ours to empty
    if d is None:
        return 0
    removed = 0
    try:
        for entry in d.names():
            if removed >= budget:
                return removed
            try:
                removed += d.unlink_quiet(entry)
            except OSError:
                continue  # a directory planted inside: the rmdir below fails, and that is all
    finally:
        d.close()
    _rmdir(shown, name)
    return removed + 1


def _rmdir(shown: "Dir", name: str) -> None:
    try:
        os.rmdir(name, dir_fd=shown.fd)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.ENOENT, errno.EEXIST):
            raise


def shown_by(box: "Box", msg_id: str, observed: bool = False) -> "list[ShownTo]":
    """Which launches were shown `msg_id` and when, from every display marker of `box` (status);
    `observed`: with each marker's whole record as "observed" (`read`)."""
    d = box.open_sub("shown")
    if d is None:
        return []
    out: "list[ShownTo]" = []
    for name in d.names():
        sid, launch = split_name(name)  # shown/<session>@<launch>/

        sd = d.open_sub(name)
        if sd is None:
            continue
        try:
            if not sd.exists(msg_id):
                continue
            obs = sd.read_json(msg_id)
            if isinstance(obs, dict):
                out.append({"session": sid, "launch": launch, "at": obs.get("at"), "event": obs.get("event")})
                if observed:
                    out[-1]["observed"] = obs
            else:
                out.append({"session": sid, "launch": launch})
        finally:
            sd.close()
    return out


def for_launch(box: "Box", session: str, launch: "AnyLaunch") -> LaunchMarkers:
    """The display markers of `session` in `launch` in `box` (made on first mark)."""
    return LaunchMarkers(box.ensure_sub("shown"), session, launch, box.root.tmp)


def sweep_box(box: "Box", keep: str, now: float) -> None:
    """`sweep` over `box`'s shown/ (see there)."""
    sweep(box.ensure_sub("shown"), keep, now)


def any_shown(box: "Box") -> bool:
    """Whether `box` has a shown/ at all (the end phase has nothing to clear without one)."""
    return box.open_sub("shown") is not None

