"""What one drain run works with, made once at its start: the facts a client hands the core
(`DrainFacts`), and the run's context (`DrainContext`): the mail root, box and key of the
session's worktree, the session, its launch, its prior presence and the faults met so far.

The phase modules (core/drain_show.py, drain_consume.py, drain_fast.py) and the drain's helpers
(core/answer.py, core/limits.py) take a DrainContext and use its public methods; core/drain.py
makes it and runs the phase. Nothing here imports those modules, so the drain's modules form no
circle. On the hot path (an empty box's event) this module and core/drain.py are all the
drain loads of the core: everything else is imported where first needed.
"""

import time

from git_korus_mail.core import keys
from git_korus_mail.errors import MailError
from git_korus_mail.stamps import parse_stamp
from git_korus_mail.store import presence  # markers and launch: loaded where used (hot path)
from git_korus_mail.store.files import MailRoot
from git_korus_mail.store.layout import valid_session

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from git_korus_mail.core.shown import Shown
    from git_korus_mail.store.events import Claim
    from git_korus_mail.store.files import Box
    from git_korus_mail.store.launch import AnyLaunch
    from git_korus_mail.store.markers import LaunchMarkers
    from git_korus_mail.store.shapes import SessionState

    Commit = Callable[[], List[str]]  # the follow-up: returns the faults it met
    Report = Callable[[List[str]], List[str]]  # queues late faults: returns what it could not

SHOW, CONSUME, END, FAIL = "show", "consume", "end", "fail"
PHASES = (SHOW, CONSUME, END, FAIL)  # FAIL: the run ended in an error (no consume phase follows)
MAX_PENDING_FAULTS = 10
PRESENCE_REFRESH = 60  # seconds a working session's presence may go unrewritten at a frequent show


class DrainFacts:
    """What a client module knows of one hook event, in client-free terms; read-only.

    `phase` is SHOW, CONSUME, END, FAIL, or None for an event that asks nothing of the mail (its
    presence is still recorded). `session` and `cwd` are the payload's. `label` is the client's
    name for the event, recorded as is. `opening` marks the show that opens a launch: it announces
    the box (even when empty), tells expiry notices, sweeps stale files, and gets faults in the
    model's context too. `frequent` marks a show that fires many times a turn: it spares presence
    a rewrite when nothing changed. `launch` is the client process that runs the event
    (launch.Launch), or `find_launch`, a function that identifies it: called on first need only
    (a marker, a consume, a presence rewrite), so a tool call with nothing to do reads no /proc
    for it. Without either (NoLaunch) mail is shown but never consumed. `surface` says where the
    session runs (terminal, sdk, editor: the client's word) and `name` its name (None: not said),
    both kept in presence for `who`. `final_text` is the run's last text, given at the consume
    phase: the automatic answer (core/answer.py). `run_start` marks a show that begins a run (a
    run before it that never reached its consume phase was cut short); `new_context` a new
    context under the same launch (compaction, clear: what it was shown is offered again,
    docs/HOOKS.md). `fast_key` is the client stub's name for this launch's stamp
    (core/drain_fast.py); `event_key` identifies the event to all its wirings, so one answers
    (docs/HOOKS.md, "One answer per event"). `context_unit` ("utf-16" or "utf-8") and
    `context_limit` are how the client measures the context it passes whole, and how much: a
    batch is fitted at whole messages in that unit (core/render.py), so the client never has to
    cut one. The flags that only a show can carry are False at any other phase.

    A plain class with __slots__, not a dataclass or a NamedTuple: those import dataclasses or
    typing, which the hot path must not load (tests/test_drain.py)."""

    __slots__ = ("phase", "session", "cwd", "label", "opening", "frequent", "launch", "find_launch",
                 "account", "surface", "name", "final_text", "run_start", "new_context", "fast_key",
                 "event_key", "context_unit", "context_limit")
    phase: "Optional[str]"
    session: str
    cwd: str
    label: str
    opening: bool
    frequent: bool
    launch: "Optional[AnyLaunch]"
    find_launch: "Optional[Callable[[], AnyLaunch]]"
    account: "Optional[str]"
    surface: "Optional[str]"
    name: "Optional[str]"
    final_text: "Optional[str]"
    run_start: bool
    new_context: bool
    fast_key: "Optional[str]"
    event_key: "Optional[Callable[[], Optional[str]]]"
    context_unit: str
    context_limit: "Optional[int]"

    def __init__(self, phase: "Optional[str]", session: str, cwd: str, label: "Optional[str]" = None,
                 opening: bool = False, frequent: bool = False, launch: "Optional[AnyLaunch]" = None,
                 find_launch: "Optional[Callable[[], AnyLaunch]]" = None, account: "Optional[str]" = None,
                 surface: "Optional[str]" = None, name: "Optional[str]" = None,
                 final_text: "Optional[str]" = None, run_start: bool = False, new_context: bool = False,
                 fast_key: "Optional[str]" = None, event_key: "Optional[Callable[[], Optional[str]]]" = None,
                 context_unit: str = "utf-16", context_limit: "Optional[int]" = None) -> None:
        if phase is not None and phase not in PHASES:
            raise ValueError(f"not a drain phase: {phase!r}")
        show = phase == SHOW
        put = object.__setattr__  # read-only once made (see __setattr__)
        put(self, "phase", phase)
        put(self, "session", session)
        put(self, "cwd", cwd)
        put(self, "label", label if label is not None else (phase or "none"))
        put(self, "opening", bool(opening) and show)
        put(self, "frequent", bool(frequent) and show)
        put(self, "launch", launch)
        put(self, "find_launch", find_launch)
        put(self, "account", account)
        put(self, "surface", surface)
        put(self, "name", name)
        put(self, "final_text", final_text if isinstance(final_text, str) else None)
        put(self, "run_start", bool(run_start) and show)
        put(self, "new_context", bool(new_context) and show)
        put(self, "fast_key", fast_key)
        put(self, "event_key", event_key)
        put(self, "context_unit", context_unit)
        put(self, "context_limit", context_limit)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"DrainFacts are read-only ({name})")

    def __repr__(self) -> str:
        return f"DrainFacts({self.phase!r}, {self.session!r}, {self.cwd!r}, label={self.label!r})"


class Outcome:
    """What an event produced: context for the model, a notice for the user, a summary of the
    mail the context shows (core/shown.Shown, for the client's line to the person), and the
    follow-up to run after the output has been written and flushed.

    The follow-up never raises and never changes the hook's exit code: by the time it runs
    the client has the output, so a failure there is reported, not fatal (docs/HOOKS.md)."""

    def __init__(self, context: "Optional[str]" = None, notice: "Optional[str]" = None,
                 commit: "Optional[Commit]" = None, report: "Optional[Report]" = None,
                 shown: "Optional[Shown]" = None) -> None:
        self.context = context
        self.notice = notice
        self.shown = shown
        self._commit = commit
        self._report = report

    def commit(self) -> "List[str]":
        """Run the follow-up; returns the faults it met (one line each), already queued
        for the session's next consume notice where that could still be written."""
        if self._commit is None:
            return []
        faults = self._commit()
        if faults and self._report is not None:
            faults = faults + self._report(faults)
        return faults

    def then(self, step: "Commit") -> None:
        """Run `step` after the follow-up, when that met no fault (the fast path's stamp)."""
        first = self._commit

        def both() -> "List[str]":
            faults = first() if first is not None else []
            return faults or step()
        self._commit = both

    def first(self, step: "Commit") -> None:
        """Run `step` before the follow-up, whatever it meets (the event's claim marked answered)."""
        rest = self._commit

        def both() -> "List[str]":
            return step() + (rest() if rest is not None else [])
        self._commit = both


def why(exc: BaseException) -> str:
    """An error in a fault line: the system's words where there are some."""
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def render_field(value: object) -> str:
    from git_korus_mail.core import render
    return render.field(value, 200)


def session_dir_name(session: str) -> str:
    """A session id as a safe directory name (ids are UUIDs; anything else is hashed)."""
    if valid_session(session) and session not in (".", ".."):
        return session
    return "x-" + keys.digest(session)[:32]


def state_after(phase: "Optional[str]", opening: bool) -> "Optional[SessionState]":
    """The presence state a phase leaves a session in; None (unchanged) for a run with no phase."""
    if phase == SHOW:
        return "idle" if opening else "working"
    if phase in (CONSUME, FAIL):
        return "idle"
    if phase == END:
        return "closed"
    return None


def open_box(cwd: str, repo_opt: "Optional[str]" = None) -> "Optional[Tuple[MailRoot, Box, keys.Key]]":
    """(MailRoot, Box, Key) of the worktree `cwd` is in, the queue found from `repo_opt` when
    given; None when there is no queue. MailError or OSError when it cannot be used."""
    loc_cwd = keys.locate(cwd)
    loc_q = keys.locate(repo_opt) if repo_opt else loc_cwd
    if loc_q is None:
        return None
    key = keys.key_for(cwd, location=loc_cwd)
    root = MailRoot.open(loc_q.common_dir, create=True)
    assert root is not None  # for mypy: create=True makes the root or raises

    def adopt(box: "Box") -> None:  # asked only when the box is new (a moved worktree's first event)
        from git_korus_mail.store import forwarding, wtident
        forwarding.first_use(box, wtident.of_location(loc_cwd, loc_q.common_dir))
    box = root.box(key.name, create=True, path=key.path, adopt=adopt)
    assert box is not None  # for mypy: create=True makes the box or raises
    return root, box, key


class DrainContext:
    """One drain run over an opened box: made once, by core/drain.py, before its phase runs.

    Holds the client's `facts`, the `root`, `box` and `key` of the session's worktree, the
    `session` (as a directory name), the `launch` (identified on first use), the session's
    `prior` presence record, and the `faults` met so far (told at the consume phase)."""

    def __init__(self, facts: DrainFacts, root: MailRoot, box: "Box", key: "keys.Key") -> None:
        self.facts = facts
        self.root = root
        self.box = box
        self.key = key
        self.session = session_dir_name(facts.session)
        self.now = time.time()
        self.faults: List[str] = []
        # the session's presence record before this event (a refused sessions/ raises MailError)
        self.prior: Dict[str, Any] = presence.load(box, self.session) or {}
        self.junk = 0  # files this event quarantined (core/drain_show.py bounds it)
        self.event: "Optional[Claim]" = None  # this run's claim on its event, once taken
        self._launch = facts.launch
        self._event_key = facts.event_key  # None once claiming is given up: the run answers alone
        self._markers: "Optional[LaunchMarkers]" = None

    @property
    def launch(self) -> "AnyLaunch":
        """The client process this event serves, identified on first use."""
        if self._launch is None:
            if self.facts.find_launch is not None:
                self._launch = self.facts.find_launch()
            else:
                from git_korus_mail.store.launch import NoLaunch
                self._launch = NoLaunch("no client process was named")
        return self._launch

    # -- what this launch was shown --------------------------------------------------
    def markers(self) -> "LaunchMarkers":
        """This launch's display markers in the box (store/markers.py), loaded on first use."""
        if self._markers is None:
            from git_korus_mail.store import markers
            self._markers = markers.for_launch(self.box, self.session, self.launch)
        return self._markers

    def shown_ids(self) -> "List[str]":
        """What this launch was shown and has not consumed. In a box where no launch holds a
        marker directory that is known without loading markers.py (hot path)."""
        if not self.box.names("shown"):
            return []
        return self.markers().shown_ids()

    def sweep(self) -> None:
        """Clear a few marker directories of gone launches, and old event claims: bounded work."""
        if self.box.names("events"):
            from git_korus_mail.store import events
            events.sweep(self.box, self.now)
        if not self.box.names("shown"):
            return  # no launch's directory to judge (and markers.py stays unloaded: hot path)
        from git_korus_mail.store import markers
        try:
            markers.sweep_box(self.box, self.markers().name, self.now)
        except (OSError, MailError):
            pass  # housekeeping only: stale markers authorize nothing, they merely wait

    # -- one answer per event, however many wirings run it (docs/HOOKS.md) -----------
    def claim_event(self) -> bool:
        """True when this run answers its event; False when a twin does: the same event run by
        another wiring of the client (both install scopes), which answered it since this hook
        process started or is answering it now. Claimed only where the event has something to
        show or do (store/events.py). A claim that cannot be taken is said, and the run answers
        as if alone (at worst the status before: the mail shown by both)."""
        if self.event is not None or self._event_key is None:
            return True
        key = self._event_key()
        if not key:
            self._event_key = None
            return True
        from git_korus_mail.store import events
        from git_korus_mail.store.launch import hook_start
        try:
            held = events.claim(self.box, self.session, self.launch.tag, key, hook_start(self.launch.pid))
        except (OSError, MailError) as exc:
            self.faults.append(f"hook event not claimed ({why(exc)}); a second wiring of this hook "
                               f"may show the same mail again")
            self._event_key = None
            return True
        if held is None:
            return False
        self.event = held
        return True

    # -- presence ----------------------------------------------------------------------
    def record(self, extra: "Optional[Dict[str, Any]]" = None) -> None:
        """Rewrite the session's presence after this event, with the faults met so far queued
        for the next consume notice (and `extra` fields); a frequent show that changed nothing
        writes nothing."""
        self.faults.extend(self.root.take_journal_faults())
        if (self.facts.frequent and not self.faults and not extra
                and self.prior.get("state") == "working" and self._prior_age() < PRESENCE_REFRESH
                and not presence.has_turn(self.box, self.session)):  # a stub's turn record waits to be superseded
            return  # a tool call changes nothing a reader needs: spare every tool call a file write
        pending = list(self.prior.get("pending_faults") or [])
        if self.faults:
            pending = (pending + self.faults)[-MAX_PENDING_FAULTS:]
        ext: Dict[str, Any] = {"pending_faults": pending}
        if self.facts.surface:
            ext["surface"] = self.facts.surface
        if self.facts.name:
            ext["name"] = self.facts.name
        if extra:
            ext.update(extra)
        try:
            self.prior = presence.record(self.box, self.session, self.facts.label, self.facts.cwd, self._state(),
                                         launch=self.launch, account=self.facts.account, prior=self.prior,
                                         extra=ext)
        except OSError as exc:
            # presence is bookkeeping; delivery must not fail for it, but it must not be silent either
            self.faults.append(f"presence not recorded: {exc.strerror}")

    def report_late(self, faults: "List[str]") -> "List[str]":
        """Queue faults met after the output for the next consume notice. Returns what failed here."""
        pending = (list(self.prior.get("pending_faults") or []) + faults)[-MAX_PENDING_FAULTS:]
        try:
            self.prior = presence.record(self.box, self.session, self.facts.label, self.facts.cwd, self._state(),
                                         launch=self.launch, account=self.facts.account, prior=self.prior,
                                         extra={"pending_faults": pending})
        except (OSError, MailError) as exc:
            return [f"presence not recorded: {why(exc)}"]
        return []

    def _state(self) -> "Optional[SessionState]":
        if self.facts.new_context and self.prior.get("state"):
            return None  # a compaction mid-turn: the session works on as before
        return state_after(self.facts.phase, self.facts.opening)

    def _prior_age(self) -> float:
        try:
            return self.now - parse_stamp(self.prior.get("at"))
        except ValueError:
            return float("inf")
