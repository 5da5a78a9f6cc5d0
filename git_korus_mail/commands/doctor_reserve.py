"""`doctor`'s look at file reservations (core/reservations_health.py; docs/HOOKS.md, "Before an
edit"): one finding for what holds, one for each thing that costs edits or hides nothing but
should not be there."""

from git_korus_mail.core.reservations_health import health

TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from git_korus_mail.commands.doctor_store import Findings
    from git_korus_mail.store.files import MailRoot


def check(root: "MailRoot", findings: "Findings", now: float) -> None:
    h = health(root, now)
    where = root.path + "/reservations"
    if h.held:
        sessions = sum(1 for r in h.held if r.holder is not None)
        blocking = sum(1 for r in h.held if r.block)
        findings.add("reserve", True, where,
                     f"{len(h.held)} reservation(s) hold ({sessions} by sessions, {len(h.held) - sessions} by the "
                     f"person, {blocking} blocking edits); {h.told} session(s) told of them: `git korus-mail "
                     f"reserve --list`")
    elif not (h.lapsed or h.unreadable or h.signal):
        findings.add("reserve", True, where, "no reservations: every edit's hook is one shell test")
    if h.lapsed:
        why = ", ".join(f"{r.id} ({'past its TTL' if w == 'ttl' else 'its holder exited'})" for r, w in h.lapsed[:5])
        findings.add("reserve", True, where,
                     f"{len(h.lapsed)} lapsed reservation(s) hold nothing and are swept by the next reserve, drop "
                     f"or edit's hook: {why}{' ...' if len(h.lapsed) > 5 else ''}")
    if h.stale_signal:
        findings.add("reserve", False, root.path + "/RESERVED",
                     "the RESERVED signal stands with no reservation behind it (a crash between two steps of an "
                     "end): every edit's hook starts Python until it goes",
                     "the next edit's hook removes it under the reservations' lock; if it stays, that file system "
                     "has no working flock (docs/STORE.md, \"Reservations\"). Never rm it by hand: a reserve may "
                     "be linking a record")
    if h.unreadable:
        findings.add("reserve", False, where,
                     f"{h.unreadable} file(s) named like a reservation that are no record of ours: they keep the "
                     f"RESERVED signal, so every edit's hook starts Python",
                     f"move them out of {where} (each `<id>.json` that `reserve --list` does not show)")
    if h.orphan_told:
        findings.add("reserve", False, where, f"{h.orphan_told} told record(s) of reservations that are gone "
                     f"(made without a working lock?)",
                     "harmless (an id is never reused); the next drop or lapse of any reservation removes them")
