"""The drain: show mail at every showing phase, consume it exactly once at the consume phase.

Client-free: it takes a phase (show / consume / end), facts about the launch (session id,
launch identity, account, cwd) and the client's event name as a label only (for presence,
markers and the journal), and returns what to show and what to do once the showing has been
written out. A client module (clients/claude/) maps its own events onto phases. The show
phase lives in core/drain_show.py and the consume phase in core/drain_consume.py, each imported only
when its phase runs. The four measured ways a first version breaks
(docs/DESIGN.md R5-R7, R12), and where each is answered here:
1. exclusion that does not exclude — consumption goes through store.Box.consume
   (exclusive claim, exclusive receipt);
2. showing is not consuming — `show` never consumes; only `consume` does, and only
   what this very launch was shown (a session discarded after its opening show
   never reaches its consume phase, so its mail stays queued);
3. a marker minted before the emit — markers are written by `Outcome.commit`, which
   the caller runs only after the output is written and flushed; a marker is
   keyed by (session, launch, message), so neither another session's marker nor
   one left by a killed launch of the same session id can consume (store/markers.py);
4. the one-shot wake-up — a watcher (core/wake.py) never re-arms itself: the client arms one at
   each turn's end, and a prompt's show ends it (`_disarm_watcher`).
"""

import time

from git_korus_mail.core import keys
from git_korus_mail.store import presence  # markers and launch: loaded where used (hot path)
from git_korus_mail.errors import MailError
from git_korus_mail.stamps import parse_stamp
from git_korus_mail.store.layout import valid_session
from git_korus_mail.store.files import MailRoot

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

    from git_korus_mail.store.files import Box
    from git_korus_mail.store.launch import AnyLaunch
    from git_korus_mail.core.shown import Shown
    from git_korus_mail.store.events import Claim
    from git_korus_mail.store.markers import LaunchMarkers

    Commit = Callable[[], List[str]]  # the follow-up: returns the faults it met
    Report = Callable[[List[str]], List[str]]  # queues late faults: returns what it could not

SHOW, CONSUME, END, FAIL = "show", "consume", "end", "fail"
PHASES = (SHOW, CONSUME, END, FAIL)  # FAIL: the run ended in an error (no consume phase follows)
MAX_PENDING_FAULTS = 10
PRESENCE_REFRESH = 60  # seconds a working session's presence may go unrewritten at a frequent show
MAX_EXAMINED = 200  # files one event reads: a flood costs many events, not one long one
MAX_JUNK = 200  # files one event quarantines, after the real mail is read: junk never starves it
READ_BUDGET = 16 * 1024 * 1024  # message bytes one event reads (the first message always): bounds its memory


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


def render_field(value: object) -> str:
    from git_korus_mail.core import render
    return render.field(value, 200)


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def session_dir_name(session: str) -> str:
    """A session id as a safe directory name (ids are UUIDs; anything else is hashed)."""
    if valid_session(session) and session not in (".", ".."):
        return session
    return "x-" + keys.digest(session)[:32]


def state_after(phase: "Optional[str]", opening: bool) -> "Optional[str]":
    """The presence state a phase leaves a session in; None (unchanged) for a run with no phase."""
    if phase == SHOW:
        return "idle" if opening else "working"
    if phase in (CONSUME, FAIL):
        return "idle"
    if phase == END:
        return "closed"
    return None


class Drain:
    """One hook run, in client-free terms.

    `phase` is SHOW, CONSUME, END, or None for an event that asks nothing of the mail (its
    presence is still recorded). `label` is the client's name for the event, recorded as is.
    `opening` marks the show that opens a launch: it announces the box (even when empty), tells
    expiry notices, sweeps stale files, and gets faults in the model's context too. `frequent`
    marks a show that fires many times a turn: it spares presence a rewrite when nothing changed.
    `launch` is the client process that runs it (launch.Launch), handed in by the client module,
    or `find_launch`, a function that identifies it: called on first need only (a marker, a
    consume, a presence rewrite), so a tool call with nothing to do reads no /proc for it.
    Without either (NoLaunch) mail is shown but never consumed. `surface` says where the session
    runs (terminal, sdk, editor: the client's word) and `name` its name (None: not said), both
    kept in presence for `who`. `context_unit` ("utf-16" or "utf-8") and `context_limit` are how
    the client measures the context it passes whole, and how much: a batch is fitted at whole
    messages in that unit (core/render.py), so the client never has to cut one."""

    def __init__(self, phase: "Optional[str]", session: str, cwd: str, label: "Optional[str]" = None,
                 opening: bool = False, frequent: bool = False, repo_opt: "Optional[str]" = None,
                 launch: "Optional[AnyLaunch]" = None, account: "Optional[str]" = None,
                 surface: "Optional[str]" = None, name: "Optional[str]" = None,
                 find_launch: "Optional[Callable[[], AnyLaunch]]" = None,
                 final_text: "Optional[str]" = None, run_start: bool = False,
                 fast_key: "Optional[str]" = None, new_context: bool = False,
                 event_key: "Optional[Callable[[], Optional[str]]]" = None, context_unit: str = "utf-16",
                 context_limit: "Optional[int]" = None) -> None:
        if phase is not None and phase not in PHASES:
            raise ValueError(f"not a drain phase: {phase!r}")
        self.phase = phase
        self.event = label if label is not None else (phase or "none")
        self.opening = bool(opening) and phase == SHOW
        self.frequent = bool(frequent) and phase == SHOW
        self.session = session_dir_name(session)
        self.cwd = cwd
        self.repo_opt = repo_opt
        self._launch = launch
        self._find_launch = find_launch
        self.fast_key = fast_key  # the client stub's name for this launch's stamp (core/drain_fast.py)
        self.account = account
        self.surface = surface  # where the session runs (terminal, sdk, editor), for `who`
        self.name = name        # the session's name, where the client says (at its end), for `who`
        # the run's last text, as the client gives it at the consume phase: the automatic answer
        self.final_text = final_text if isinstance(final_text, str) else None
        # a show that begins a run: a run before it that never reached its consume phase was cut short
        self.run_start = bool(run_start) and phase == SHOW
        # a new context under this launch (compaction, clear): offer again what it was shown (docs/HOOKS.md)
        self.new_context = bool(new_context) and phase == SHOW
        self.event_key = event_key  # identifies the event to all its wirings: one answers (drain_event.py)
        self._event: "Optional[Claim]" = None
        self.context_unit = context_unit
        self.context_limit = context_limit
        self.now = time.time()
        self.faults: List[str] = []

    @property
    def launch(self) -> "AnyLaunch":
        """The client process this event serves, identified on first use."""
        if self._launch is None:
            if self._find_launch is not None:
                self._launch = self._find_launch()
            else:
                from git_korus_mail.store.launch import NoLaunch
                self._launch = NoLaunch("no client process was named")
        return self._launch

    # -- where ---------------------------------------------------------------
    def _open(self) -> "Optional[Tuple[MailRoot, Box, keys.Key]]":
        """(MailRoot, Box, Key) for this session's worktree; None when there is no queue."""
        loc_cwd = keys.locate(self.cwd)
        loc_q = keys.locate(self.repo_opt) if self.repo_opt else loc_cwd
        if loc_q is None:
            return None
        key = keys.key_for(self.cwd, location=loc_cwd)
        root = MailRoot.open(loc_q.common_dir, create=True)
        assert root is not None  # for mypy: create=True makes the root or raises

        def owner() -> str:  # asked only when the box is new (a moved worktree's first event)
            from git_korus_mail.store import wtident
            return wtident.of_location(loc_cwd, loc_q.common_dir)
        box = root.box(key.name, create=True, path=key.path, owner=owner)
        assert box is not None  # for mypy: create=True makes the box or raises
        return root, box, key

    # -- entry -----------------------------------------------------------------
    def run(self) -> Outcome:
        try:
            opened = self._open()
        except MailError as exc:
            return self._fault_outcome(f"mail queue unusable: {exc}")
        except OSError as exc:
            # a cwd the payload names but the system cannot use (too long a name, no access)
            return self._fault_outcome(f"cannot find the mail queue for this cwd: {exc.strerror or exc}")
        if opened is None:
            if self.phase == CONSUME:
                where = f"--repo {self.repo_opt}" if self.repo_opt else self.cwd
                return Outcome(notice=f"korus-mail: no mail queue here ({where} is in no git clone); "
                                      f"mail cannot reach this session. Start it inside a worktree, or "
                                      f"install with --scope user from the clone.")
            return Outcome()
        self.root, self.box, self.key = opened
        self.prior: Dict[str, Any] = {}
        self.shown: Optional[LaunchMarkers] = None
        self.junk = 0
        try:
            # inside the try: a refused sessions/ is a box part like inbox/, said, not a traceback
            self.prior = presence.load(self.box, self.session) or {}
            if self.phase in PHASES:
                out = {CONSUME: self._stop, END: self._end, FAIL: self._fail, SHOW: self._show}[self.phase]()
                if self._event is not None:
                    from git_korus_mail.core import drain_event
                    drain_event.answered_first(out, self._event)  # then a twin of this event stays silent
                return out
        except MailError as exc:
            # a box part that is a symlink, another user's, or group-writable: refused, and said
            return self._fault_outcome(f"mail box unusable: {exc}")
        self._record()
        return Outcome()

    def _fault_outcome(self, text: str) -> Outcome:
        # said where a reader decides (the opening show) and at consume; not at every prompt and tool call
        if self.phase == CONSUME or self.opening:
            return Outcome(notice=f"korus-mail: {text}",
                           context=f"korus-mail: {text}" if self.opening else None)
        return Outcome()

    def _claim_event(self) -> bool:
        """True when this run answers its event, False when a twin does (core/drain_event.py)."""
        if self._event is not None or self.event_key is None:
            return True
        from git_korus_mail.core import drain_event
        return drain_event.claim(self)

    def _record(self, extra: "Optional[Dict[str, Any]]" = None) -> None:
        self.faults.extend(self.root.take_journal_faults())
        if (self.frequent and not self.faults and not extra
                and self.prior.get("state") == "working" and self._prior_age() < PRESENCE_REFRESH):
            return  # a tool call changes nothing a reader needs: spare every tool call a file write
        pending = list(self.prior.get("pending_faults") or [])
        if self.faults:
            pending = (pending + self.faults)[-MAX_PENDING_FAULTS:]
        ext: Dict[str, Any] = {"pending_faults": pending}
        if self.surface:
            ext["surface"] = self.surface
        if self.name:
            ext["name"] = self.name
        if extra:
            ext.update(extra)
        try:
            self.prior = presence.record(self.box, self.session, self.event, self.cwd, self._state(),
                                         launch=self.launch, account=self.account, prior=self.prior, extra=ext)
        except OSError as exc:
            # presence is bookkeeping; delivery must not fail for it, but it must not be silent either
            self.faults.append(f"presence not recorded: {exc.strerror}")

    def _state(self) -> "Optional[str]":
        if self.new_context and self.prior.get("state"):
            return None  # a compaction mid-turn: the session works on as before
        return state_after(self.phase, self.opening)

    def _prior_age(self) -> float:
        try:
            return self.now - parse_stamp(self.prior.get("at"))
        except ValueError:
            return float("inf")

    def _report_late(self, faults: "List[str]") -> "List[str]":
        """Queue faults met after the output for the next consume notice. Returns what failed here."""
        pending = (list(self.prior.get("pending_faults") or []) + faults)[-MAX_PENDING_FAULTS:]
        try:
            self.prior = presence.record(self.box, self.session, self.event, self.cwd, self._state(),
                                         launch=self.launch, account=self.account, prior=self.prior,
                                         extra={"pending_faults": pending})
        except (OSError, MailError) as exc:
            return [f"presence not recorded: {_why(exc)}"]
        return []

    # -- the phases: each in its own module, imported only when its phase runs -------
    def _show(self) -> Outcome:
        if not self.opening and not self.frequent:
            self._disarm_watcher()  # a prompt: the session works again, so its watcher ends
        if self.opening:
            self._fast_clear()  # a new launch: no stamp of an old one with its name stands
        looked = self._fast_look()  # before anything lists the inbox
        if not self.opening and self.box.nothing_to_show() and not _notices_pending(self):
            # what drain_show concludes for an empty box (OFF or not), without loading it: the
            # answer of most tool calls and prompts (hot path; the opening show still announces)
            self._record()
            out = Outcome()
        else:
            from git_korus_mail.core.drain_show import show
            out = show(self)
        if looked is not None:
            seen = looked
            out.then(lambda: self._fast_stamp(seen))
        return out

    def _stop(self) -> Outcome:
        self._fast_clear()
        from git_korus_mail.core.drain_consume import consume
        return consume(self)

    def _markers(self) -> "LaunchMarkers":
        if self.shown is None:
            from git_korus_mail.store import markers
            self.shown = markers.for_launch(self.box, self.session, self.launch)
        return self.shown

    def _shown_ids(self) -> "List[str]":
        """What this launch was shown and has not consumed. In a box where no launch holds a
        marker directory that is known without loading markers.py (hot path)."""
        if not self.box.names("shown"):
            return []
        return self._markers().shown_ids()

    def _fail(self) -> Outcome:
        """The run ended in an error: questions it was shown are answered `failed`; its other
        mail stays marked, and the next consume phase consumes it."""
        if self.box.names("shown") and not self._claim_event():
            return Outcome()
        if self.box.names("shown"):
            from git_korus_mail.core import answer
            answer.close_open(self, "failed", answer.FAILED_RUN_TEXT)
        self._record()
        return Outcome(notice=("korus-mail: " + "; ".join(self.faults)) if self.faults else None)

    def _sweep(self) -> None:
        """Clear a few marker directories of gone launches, and old event claims: bounded work."""
        if self.box.names("events"):
            from git_korus_mail.store import events
            events.sweep(self.box, self.now)
        if not self.box.names("shown"):
            return  # no launch's directory to judge (and markers.py stays unloaded: hot path)
        from git_korus_mail.store import markers
        try:
            markers.sweep_box(self.box, self._markers().name, self.now)
        except (OSError, MailError):
            pass  # housekeeping only: stale markers authorize nothing, they merely wait

    def _disarm_watcher(self, end: bool = False) -> None:
        """End this launch's wake-up watcher (core/wake.py), if it has one: at a prompt, and at the
        launch's end (which also drops its wakes record). A watcher that cannot be told to end
        still ends by itself: it checks its claim, its launch and its reach."""
        if not self.box.has_watchers():
            return  # none was ever armed here: store/watch.py stays unloaded (hot path)
        if not self.launch.known:
            return
        from git_korus_mail.store import watch
        try:
            if end:
                watch.clear(self.box, self.session, self.launch)
            else:
                watch.disarm(self.box, self.session, self.launch)
        except (OSError, MailError) as exc:
            self.faults.append(f"wake-up watcher not disarmed: {_why(exc)}")

    # -- end: drop this launch's markers of mail never consumed; it stays queued -----
    # -- the stub's fast path (core/drain_fast.py): loaded only where a stamp is or may be -----
    def _fast_look(self) -> "Optional[Tuple[Optional[int], float]]":
        """(the inbox's mtime in ns, or None for a box with no inbox yet; when it was taken)."""
        if self.fast_key is None or self.opening:
            return None
        return self.box.inbox_mtime_ns(), time.time()

    def _fast_stamp(self, seen: "Tuple[Optional[int], float]") -> "List[str]":
        from git_korus_mail.core import drain_fast
        return drain_fast.stamp(self, seen)

    def _fast_clear(self) -> None:
        """At consume, end and an opening show: the launch's tool calls run Python again."""
        if self.fast_key is not None and (self.root.has_stamp(self.fast_key) or self.opening):
            from git_korus_mail.core import drain_fast
            drain_fast.clear(self)

    def _end(self) -> Outcome:
        from git_korus_mail.store import markers
        if markers.any_shown(self.box) and not self._claim_event():
            return Outcome()
        self._fast_clear()
        self._disarm_watcher(end=True)
        if markers.any_shown(self.box):
            from git_korus_mail.core import answer  # questions shown and open: their askers learn it now
            answer.close_open(self, "failed", answer.ENDED_TEXT)
            self._markers().clear()
        self._record()
        return Outcome()


def _notices_pending(drain: "Drain") -> bool:
    """Something to tell though the inbox is empty: an expiry notice, or a marker of mail this
    launch was shown that may have been withdrawn (core/notices.py). Two directory reads."""
    from git_korus_mail.core.notices import pending
    return pending(drain)
