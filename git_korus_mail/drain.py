"""The drain: show mail at every showing phase, consume it exactly once at the consume phase.

Client-free: it takes a phase (show / consume / end), facts about the launch (session id,
launch identity, account, cwd) and the client's event name as a label only (for presence,
markers and the journal), and returns what to show and what to do once the showing has been
written out. A client module (clients/claude/) maps its own events onto phases. The seed's four
measured ways a first version breaks, and where each is answered here:
1. exclusion that does not exclude — consumption goes through store.Box.consume
   (exclusive claim, exclusive receipt);
2. showing is not consuming — `show` never consumes; only `consume` does, and only
   what this very launch was shown (a session discarded after its opening show
   never reaches its consume phase, so its mail stays queued);
3. a marker minted before the emit — markers are written by `Outcome.commit`, which
   the caller runs only after the output is written and flushed; a marker is
   keyed by (session, launch, message), so neither another session's marker nor
   one left by a killed launch of the same session id can consume (store/markers.py);
4. the one-shot wake-up — not built (no urgent tier yet).
"""

import os
import time

from git_korus_mail import crash, keys
from git_korus_mail.store import markers, presence
from git_korus_mail.errors import MailError
from git_korus_mail.launch import NoLaunch
from git_korus_mail.message import Invalid, expires_at, parse_stamp, utc_stamp, valid_session
from git_korus_mail.store.files import MSG_SUFFIX, MailRoot, NotOwned, NotRegular, TooLarge

SHOW, CONSUME, END = "show", "consume", "end"
PHASES = (SHOW, CONSUME, END)
SKIP_SUFFIX = markers.SKIP_SUFFIX
MAX_PENDING_FAULTS = 10
PRESENCE_REFRESH = 60  # seconds a working session's presence may go unrewritten at a frequent show
MAX_EXAMINED = 200  # files one event reads: a flood costs many events, not one long one
MAX_JUNK = 200  # files one event quarantines, after the real mail is read: junk never starves it
READ_BUDGET = 16 * 1024 * 1024  # message bytes one event reads (the first message always): bounds its memory


class Outcome:
    """What an event produced: context for the model, a notice for the user, and the
    follow-up to run after the output has been written and flushed.

    The follow-up never raises and never changes the hook's exit code: by the time it runs
    the client has the output, so a failure there is reported, not fatal (docs/HOOKS.md)."""

    def __init__(self, context=None, notice=None, commit=None, report=None):
        self.context = context
        self.notice = notice
        self._commit = commit
        self._report = report

    def commit(self):
        """Run the follow-up; returns the faults it met (one line each), already queued
        for the session's next consume notice where that could still be written."""
        if self._commit is None:
            return []
        faults = self._commit()
        if faults and self._report is not None:
            faults = faults + self._report(faults)
        return faults


def render_field(value):
    from git_korus_mail import render
    return render.field(value, 200)


def _why(exc):
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def session_dir_name(session):
    """A session id as a safe directory name (ids are UUIDs; anything else is hashed)."""
    if valid_session(session) and session not in (".", ".."):
        return session
    return "x-" + keys.digest(session)[:32]


def state_after(phase, opening):
    """The presence state a phase leaves a session in; None (unchanged) for a run with no phase."""
    if phase == SHOW:
        return "idle" if opening else "working"
    if phase == CONSUME:
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
    `launch` is the client process that runs it (launch.Launch), handed in by the client module;
    without one (NoLaunch) mail is shown but never consumed."""

    def __init__(self, phase, session, cwd, label=None, opening=False, frequent=False, repo_opt=None,
                 launch=None, account=None):
        if phase is not None and phase not in PHASES:
            raise ValueError(f"not a drain phase: {phase!r}")
        self.phase = phase
        self.event = label if label is not None else (phase or "none")
        self.opening = bool(opening) and phase == SHOW
        self.frequent = bool(frequent) and phase == SHOW
        self.session = session_dir_name(session)
        self.cwd = cwd
        self.repo_opt = repo_opt
        self.launch = launch if launch is not None else NoLaunch("no client process was named")
        self.account = account
        self.now = time.time()
        self.faults = []

    # -- where ---------------------------------------------------------------
    def _open(self):
        """(MailRoot, Box, Key) for this session's worktree; None when there is no queue."""
        loc_cwd = keys.locate(self.cwd)
        loc_q = keys.locate(self.repo_opt) if self.repo_opt else loc_cwd
        if loc_q is None:
            return None
        key = keys.key_for(self.cwd, location=loc_cwd)
        root = MailRoot.open(loc_q.common_dir, create=True)

        def owner():  # asked only when the box is new (a moved worktree's first event)
            from git_korus_mail import wtident
            return wtident.of_location(loc_cwd, loc_q.common_dir)
        box = root.box(key.name, create=True, path=key.path, owner=owner)
        return root, box, key

    # -- entry -----------------------------------------------------------------
    def run(self):
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
        self.prior = {}
        self.shown = None
        self.junk = 0
        try:
            # inside the try: a refused sessions/ is a box part like inbox/, said, not a traceback
            self.prior = presence.load(self.box, self.session) or {}
            if self.phase == CONSUME:
                return self._stop()
            if self.phase == END:
                return self._end()
            if self.phase == SHOW:
                return self._show()
        except MailError as exc:
            # a box part that is a symlink, another user's, or group-writable: refused, and said
            return self._fault_outcome(f"mail box unusable: {exc}")
        self._record()
        return Outcome()

    def _fault_outcome(self, text):
        # said where a reader decides (the opening show) and at consume; not at every prompt and tool call
        if self.phase == CONSUME or self.opening:
            return Outcome(notice=f"korus-mail: {text}",
                           context=f"korus-mail: {text}" if self.opening else None)
        return Outcome()

    def _record(self, extra=None):
        self.faults.extend(self.root.take_journal_faults())
        if (self.frequent and not self.faults and not extra
                and self.prior.get("state") == "working" and self._prior_age() < PRESENCE_REFRESH):
            return  # a tool call changes nothing a reader needs: spare every tool call a file write
        pending = list(self.prior.get("pending_faults") or [])
        if self.faults:
            pending = (pending + self.faults)[-MAX_PENDING_FAULTS:]
        ext = {"pending_faults": pending}
        if extra:
            ext.update(extra)
        try:
            self.prior = presence.record(self.box, self.session, self.event, self.cwd, self._state(),
                                         launch=self.launch, account=self.account, prior=self.prior, extra=ext)
        except OSError as exc:
            # presence is bookkeeping; delivery must not fail for it, but it must not be silent either
            self.faults.append(f"presence not recorded: {exc.strerror}")

    def _state(self):
        return state_after(self.phase, self.opening)

    def _prior_age(self):
        try:
            return self.now - parse_stamp(self.prior.get("at"))
        except ValueError:
            return float("inf")

    # -- show ---------------------------------------------------------------------
    def _show(self):
        # render is imported only where something is rendered: an event with no mail never needs it
        box, root = self.box, self.root
        box.repair()
        if self.opening:
            root.sweep_tmp(self.now)  # staging files of killed processes (older than 36 h)
        lines = []
        if root.is_off():
            self._record()
            if self.opening:
                return Outcome(context=f"korus-mail: delivery is off for this clone (as of {utc_stamp(self.now)});"
                                       f" queued mail waits until `git korus-mail on`.")
            return Outcome()
        shown_dir = self._markers()
        ids, odd = box.inbox_ids()
        already = shown_dir.names() if ids else set()  # an empty inbox needs no marker read
        candidates = [i for i in ids if i not in already and i + SKIP_SUFFIX not in already]
        batch, skips, examined = self._load_batch(candidates, shown_dir) if candidates else ([], 0, 0)
        for name in odd:  # real mail first; the rest of the junk waits for later events
            if self.junk >= MAX_JUNK:
                break
            self._quarantine(name, "not a message file name")
        remaining = len(candidates) - examined
        notices, notice_names = ([], [])
        if self.opening:
            # read only now: what the batch load just expired is told to this very session
            from git_korus_mail import render
            notices, notice_names = self._notices()
            if notices:
                lines.append(render.render_expiry_notice(notices, box.path_of("expired")))
        text, blocks, deferred = (None, [], remaining)
        if batch:
            from git_korus_mail import render
            budget = render.EVENT_CAP - sum(render.units(x) + 2 for x in lines)
            text, blocks, deferred = render.render_batch(batch, self.key.path, self.now, remaining, budget=budget,
                                                         now=self.now)
        if text:
            lines.append(text)
        elif self.opening:
            waiting = len(candidates) + len(already)
            if waiting and not candidates:
                lines.append(f"korus-mail: no new mail for {render.field(self.key.path)} "
                             f"(as of {utc_stamp(self.now)}; {len(ids)} already shown to this session).")
            else:
                lines.append(f"korus-mail: the box for {render.field(self.key.path)} is empty "
                             f"(as of {utc_stamp(self.now)}).")
        context = "\n\n".join(lines) if lines else None
        self._record()

        def commit():
            # Runs after the output is out: each step's failure is collected, none stops the next
            # or the exit code (docs/HOOKS.md). A marker that cannot be written leaves its message
            # unconsumed, to be shown again: never consumed unseen, never lost.
            faults = []
            crash.point("show:emitted")
            # The marker proves that THIS launch displayed the message; written only now,
            # after the output is out (the seed's repair that minted it first lost mail).
            for b in blocks:
                obs = {"session": self.session, "launch": self.launch.tag, "event": self.event,
                       "at": utc_stamp(self.now), "chars": len(b.text), "truncated": b.truncated,
                       "body_chars": b.body_chars}
                try:
                    shown_dir.mark(b.msg_id, obs)
                except (OSError, MailError) as exc:
                    faults.append(f"display marker for {b.msg_id} not written ({_why(exc)}); "
                                  f"it stays queued and is shown again")
            crash.point("show:marked")
            for b in blocks:
                root.journal("shown", id=b.msg_id, box=box.name, session=self.session, launch=self.launch.tag,
                             hook_event=self.event)
            try:
                box.clear_notices(notice_names)
            except (OSError, MailError) as exc:
                faults.append(f"expiry notices not cleared ({_why(exc)}); they may be told again")
            if self.opening:
                self._sweep()  # a new launch is when an old one's markers are most likely stale
            return faults + root.take_journal_faults()
        return Outcome(context=context, commit=commit, report=self._report_late)

    def _report_late(self, faults):
        """Queue faults met after the output for the next consume notice. Returns what failed here."""
        pending = (list(self.prior.get("pending_faults") or []) + faults)[-MAX_PENDING_FAULTS:]
        try:
            self.prior = presence.record(self.box, self.session, self.event, self.cwd, self._state(),
                                         launch=self.launch, account=self.account, prior=self.prior,
                                         extra={"pending_faults": pending})
        except (OSError, MailError) as exc:
            return [f"presence not recorded: {_why(exc)}"]
        return []

    def _markers(self):
        if self.shown is None:
            self.shown = markers.for_launch(self.box, self.session, self.launch)
        return self.shown

    def _sweep(self):
        """Clear a few marker directories of launches that are gone: bounded work per event."""
        try:
            markers.sweep_box(self.box, self._markers().name, self.now)
        except (OSError, MailError):
            pass  # housekeeping only: stale markers authorize nothing, they merely wait

    def _load_batch(self, candidates, shown_dir):
        """Read candidates oldest first until a render's worth is found. Returns
        ([(msg, path, seen_path, BodyView)], skipped, number examined). Bounded by the batch, not the
        inbox, and in memory: each body is trimmed to what can be rendered as soon as it is parsed,
        and one event reads at most READ_BUDGET bytes of messages (the rest wait for the next)."""
        from git_korus_mail import render
        box = self.box
        batch, skipped, examined, read = [], 0, 0, 0
        inbox_path = box.path_of("inbox")
        seen_path = box.path_of("seen")
        # enough to fill one event even when every message is small
        want = render.EVENT_CAP // 200
        for msg_id in candidates:
            if len(batch) >= want or examined >= MAX_EXAMINED or read >= READ_BUDGET:
                break
            examined += 1
            try:
                msg, st = box.load(msg_id)
            except FileNotFoundError:
                continue  # consumed or expired since we listed
            except NotOwned as exc:
                self._quarantine(msg_id + MSG_SUFFIX, f"owned by uid {exc.args[0]}, not by you")
                continue
            except NotRegular as exc:
                self._quarantine(msg_id + MSG_SUFFIX, f"not a regular file ({exc})")
                continue
            except TooLarge as exc:
                self._quarantine(msg_id + MSG_SUFFIX, f"too large ({exc.args[0]} bytes)")
                continue
            except Invalid as exc:
                self._quarantine(msg_id + MSG_SUFFIX, f"invalid message: {exc}")
                continue
            except OSError as exc:
                self.faults.append(f"cannot read {msg_id}: {exc.strerror}")
                continue
            read += st.st_size
            msg, view = render.trim(msg)  # the body is let go here: one event holds a few KB per message
            if st.st_nlink > 1:
                why = box.linked_elsewhere(msg_id, st)
                if why == "in-progress":
                    continue
                if why is None:
                    self._quarantine(msg_id + MSG_SUFFIX, "hard-linked to another file")
                    continue
            if expires_at(msg) <= self.now:
                box.expire(msg_id, msg)
                continue
            if msg.get("session") and msg["session"] != self.session:
                shown_dir.skip(msg_id)
                skipped += 1
                continue
            batch.append((msg, os.path.join(inbox_path, msg_id + MSG_SUFFIX),
                          os.path.join(seen_path, msg_id + MSG_SUFFIX), view))
        return batch, skipped, examined

    def _quarantine(self, name, reason):
        """Move a bad file aside under a name we choose. Its own name is data from whoever wrote
        it: said to the user only escaped (render.field), and never put in the model's context."""
        from git_korus_mail import render
        if self.junk >= MAX_JUNK:
            return  # this event's share of junk work is done; the file waits for the next
        self.junk += 1
        target = self.box.quarantine(name, reason)
        if target is not None:
            self.faults.append(f"quarantined {render.field(name, 80)} as quarantine/{target}: "
                               f"{render.field(reason, 120)}")

    def _notices(self):
        return self.box.notices()

    # -- consume: exactly what this launch was shown ------------------------------
    def _stop(self):
        box, root = self.box, self.root
        box.ensure_inbox()  # a refused inbox (symlink, owner, mode) is a fault to report here, even with nothing shown
        box.repair()  # a dead consumer's claim must not outlive it until the next show
        faults = list(self.prior.get("pending_faults") or [])
        extra = {"pending_faults": []}
        if root.is_off():
            if not self.prior.get("off_told"):
                faults.append("delivery is off for this clone (git korus-mail on); nothing was consumed")
                extra["off_told"] = True
            self.faults = []
            self.prior["pending_faults"] = []
            self._record(extra)
            return Outcome(notice=self._notice(faults))
        extra["off_told"] = False
        shown_dir = self._markers()
        if not self.launch.known:
            # nothing ties these markers to a process whose model saw the mail: consume none
            left = len(shown_dir.shown_ids())
            if left and not self.prior.get("nolaunch_told"):
                faults.append(f"{left} message(s) shown but left queued: this hook run cannot tell which "
                              f"client process it serves ({self.launch.why}), so no display is proven; "
                              f"they are shown again in the next session")
                extra["nolaunch_told"] = True
            ids = []
        else:
            ids = shown_dir.shown_ids()
        record = self.launch.record() if ids else None
        for name in ids:
            try:
                observation = shown_dir.read(name)
            except (OSError, ValueError, NotRegular, TooLarge) as exc:
                from git_korus_mail import render
                faults.append(f"display marker {render.field(name, 80)} unreadable ({exc}); "
                              f"message left queued")
                continue
            if not isinstance(observation, dict) or observation.get("launch") != self.launch.tag \
                    or observation.get("session") != self.session:
                from git_korus_mail import render
                faults.append(f"display marker {render.field(name, 80)} was not written by this launch; "
                              f"message left queued")
                shown_dir.drop(name)
                continue
            try:
                result = box.consume(name, self.session, observation, launch=record)
            except (OSError, MailError) as exc:
                faults.append(f"consuming {render_field(name)} met an error ({_why(exc)}); {self._fate(name)}")
                continue  # the marker stays: the next consume finishes or retries the consume
            if result == "held":
                from git_korus_mail.store import claims
                owner = box.claim_owner(name) or {}
                verdict, known = claims.judge(owner)
                now = self._fate(name)  # looked at after the wait: the holder may have finished
                if not now.startswith("it is not consumed"):
                    faults.append(f"message {render_field(name)} was claimed by another process; {now}")
                elif verdict == "alive":
                    faults.append(f"message {render_field(name)} is claimed by live process "
                                  f"{render_field(owner.get('pid'))}; {now}, and is retried at the next Stop")
                else:  # say what is known, and the way out a person has
                    faults.append(f"message {render_field(name)} is claimed by a process that cannot be proven "
                                  f"dead ({render_field(known)}); {now}. If you know that process is "
                                  f"gone: git korus-mail release {render_field(name)}")
                continue
            shown_dir.drop(name)
        self._sweep()
        faults.extend(root.take_journal_faults())
        self.faults = []
        self.prior["pending_faults"] = []
        self._record(extra)
        faults.extend(self.faults)  # what this very consume could not record is told now, not lost
        return Outcome(notice=self._notice(faults))

    def _fate(self, msg_id):
        """What became of a message whose consume failed, looked at afterwards: the notice says
        what is on disk, never what the failed step was meant to do."""
        try:
            state, session = self.box.fate(msg_id)
        except (OSError, MailError) as exc:
            return f"its state cannot be read ({_why(exc)})"
        if state in ("consumed", "consumed-unmoved"):
            who = "this session" if session == self.session else f"session {render_field(session)}"
            later = "; its move out of the inbox completes at a later Stop" if state == "consumed-unmoved" else ""
            return f"its receipt is written, so it is consumed (by {who}){later}"
        if state == "queued":
            return "it is not consumed and stays queued"
        if state == "expired":
            return "it had expired unread"
        return "it is no longer queued"

    @staticmethod
    def _notice(faults):
        if not faults:
            return None  # the normal path prints nothing: no per-turn "empty" line
        text = "korus-mail: " + "; ".join(faults)
        return text[:2000]

    # -- end: drop this launch's markers of mail never consumed; it stays queued -----
    def _end(self):
        if markers.any_shown(self.box):
            self._markers().clear()
        self._record()
        return Outcome()
