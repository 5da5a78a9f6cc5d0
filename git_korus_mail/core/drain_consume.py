"""The consume phase: consume exactly what this launch was shown, each message once (claim,
receipt, move in the store), and say what could not be. `drain` is the drain.Drain being run."""

from git_korus_mail.core.drain import Outcome, _why, render_field
from git_korus_mail.errors import MailError
from git_korus_mail.store.files import NotRegular, TooLarge

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

    from git_korus_mail.core.drain import Drain


def consume(drain: "Drain") -> Outcome:
    box, root = drain.box, drain.root
    box.ensure_inbox()  # a refused inbox (symlink, owner, mode) is a fault to report here, even with nothing shown
    box.repair()  # a dead consumer's claim must not outlive it until the next show
    faults = list(drain.prior.get("pending_faults") or [])
    extra: Dict[str, Any] = {"pending_faults": []}
    if root.is_off():
        if not drain.prior.get("off_told"):
            faults.append("delivery is off for this clone (git korus-mail on); nothing was consumed")
            extra["off_told"] = True
        drain.faults = []
        drain.prior["pending_faults"] = []
        drain._record(extra)
        return Outcome(notice=_notice(faults))
    extra["off_told"] = False
    if not drain.launch.known:
        # nothing ties these markers to a process whose model saw the mail: consume none
        left = len(drain._shown_ids())
        if left and not drain.prior.get("nolaunch_told"):
            faults.append(f"{left} message(s) shown but left queued: this hook run cannot tell which "
                          f"client process it serves ({drain.launch.why}), so no display is proven; "
                          f"they are shown again in the next session")
            extra["nolaunch_told"] = True
        ids: List[str] = []
    else:
        ids = drain._shown_ids()
    if (ids or faults) and not drain._claim_event():
        return Outcome()  # another wiring of this very Stop consumes and tells: once (docs/HOOKS.md)
    record = drain.launch.record() if ids else None
    for name in ids:
        shown_dir = drain._markers()
        try:
            observation = shown_dir.read(name)
        except (OSError, ValueError, NotRegular, TooLarge) as exc:
            from git_korus_mail.core import render
            faults.append(f"display marker {render.field(name, 80)} unreadable ({exc}); "
                          f"message left queued")
            continue
        if not isinstance(observation, dict) or observation.get("launch") != drain.launch.tag \
                or observation.get("session") != drain.session:
            from git_korus_mail.core import render
            faults.append(f"display marker {render.field(name, 80)} was not written by this launch; "
                          f"message left queued")
            shown_dir.drop(name)
            continue
        if observation.get("question"):
            from git_korus_mail.core import answer  # only with a question shown: its automatic answer
            answer.at_run_end(drain, name)
        try:
            result = box.consume(name, drain.session, observation, launch=record)
        except (OSError, MailError) as exc:
            faults.append(f"consuming {render_field(name)} met an error ({_why(exc)}); {_fate(drain, name)}")
            continue  # the marker stays: the next consume finishes or retries the consume
        if result == "held":
            from git_korus_mail.store import claims
            owner = box.claim_owner(name) or {}
            verdict, known = claims.judge(owner, box.root)
            now = _fate(drain, name)  # looked at after the wait: the holder may have finished
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
        if result == "gone" and keep_to_tell(drain, name):
            continue  # withdrawn after it was shown: its marker stays, to be told at the next event
        shown_dir.drop(name)
    drain._sweep()
    faults.extend(root.take_journal_faults())
    drain.faults = []
    drain.prior["pending_faults"] = []
    drain._record(extra)
    faults.extend(drain.faults)  # what this very consume could not record is told now, not lost
    return Outcome(notice=_notice(faults))


def _fate(drain: "Drain", msg_id: str) -> str:
    """What became of a message whose consume failed, looked at afterwards: the notice says
    what is on disk, never what the failed step was meant to do."""
    try:
        state, session = drain.box.fate(msg_id)
    except (OSError, MailError) as exc:
        return f"its state cannot be read ({_why(exc)})"
    if state in ("consumed", "consumed-unmoved"):
        who = "this session" if session == drain.session else f"session {render_field(session)}"
        later = "; its move out of the inbox completes at a later Stop" if state == "consumed-unmoved" else ""
        return f"its receipt is written, so it is consumed (by {who}){later}"
    if state == "queued":
        return "it is not consumed and stays queued"
    if state == "expired":
        return "it had expired unread"
    return "it is no longer queued"


def _notice(faults: "List[str]") -> "Optional[str]":
    if not faults:
        return None  # the normal path prints nothing: no per-turn "empty" line
    text = "korus-mail: " + "; ".join(faults)
    return text[:2000]


def keep_to_tell(drain: "Drain", msg_id: str) -> bool:
    """core/notices.py: a withdrawal the model has not been told of keeps its marker."""
    from git_korus_mail.core.notices import withdrawn_untold
    return withdrawn_untold(drain, msg_id)
