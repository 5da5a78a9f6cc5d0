"""`doctor`: is mail being delivered here, and if not, what to do.

Read-only: it reports and never repairs (`list` and the drain repair as they read).
Checks, each finding with its fix:
- the mail root: a real directory, ours, 0700 (anything else is refused by the store);
- the wiring: install's verification again, for each worktree and the user scope (both: named);
- the receiver's limits (backlog, loop, rate) as the drain reads them from the git config;
- OFF (delivery suppressed); claims: held ones, and whether their owner still runs;
- quarantine and stale staging files;
- the journal and its lock: plain files of ours with one link, 0600 (else refused);
- the clock, as the journal's times show it;
- the last drain per event per box: sessions that ran turns but never a Stop mean
  mail is shown and never consumed (a wiring problem);
- the retention setting and the store's size per state (commands/doctor_store.py);
- with a remote: the relay's link and the stream's durability (commands/doctor_relay.py);
- file reservations: what holds, lapsed ones, a stale signal (commands/doctor_reserve.py).
"""

import json
import os
import stat
import time
from dataclasses import dataclass

from git_korus_mail import clients, ui
from git_korus_mail.core import limitconf
from git_korus_mail.commands import doctor_relay, doctor_reserve, doctor_store
from git_korus_mail.commands.text import raw
from git_korus_mail.store import answers, claims, journal, presence, records
from git_korus_mail.errors import MailError
from git_korus_mail.wiring import double, postcheckout, precommit
from git_korus_mail.wiring.files import read_bytes
from git_korus_mail.wiring import record as install_record
from git_korus_mail.stamps import human_age, parse_stamp, utc_stamp
from git_korus_mail.store.files import MailRoot
from git_korus_mail.store.layout import TMP_MAX_AGE, mail_root_path

TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, Any, Callable, Dict, List, Optional, Tuple

    from git_korus_mail.clients.interface import HookProtocol, Installer, Wired
    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import Box

    Finding = Dict[str, Any]  # {"check", "ok", "where", "detail", "fix"}: one line of the report (--json)
    WakeFinding = Tuple[bool, str, str, Optional[str]]

CLOCK_SLACK = 5 * 60   # journal times may disagree this much before it counts as a clock fault
JOURNAL_WINDOW = 500   # recent records the clock check reads
STOP_GRACE = 10 * 60   # a turn this recent may still be running, its Stop not yet fired


@dataclass(frozen=True)
class DoctorArgs:
    json: bool = False   # machine-readable


class Findings:
    def __init__(self) -> None:
        self.items: "List[Finding]" = []

    def add(self, check: str, ok: bool, where: str, detail: str, fix: "Optional[str]" = None) -> None:
        self.items.append({"check": check, "ok": ok, "where": where, "detail": detail,
                           "fix": None if ok else fix})

    @property
    def healthy(self) -> bool:
        return all(f["ok"] for f in self.items)


def run(clone: "Clone", args: DoctorArgs, out: "IO[str]") -> int:
    now = time.time()
    findings = collect(clone, now)
    data = {"as_of": utc_stamp(now), "mail_root": mail_root_path(clone.common_dir),
            "healthy": findings.healthy, "findings": findings.items}
    if args.json:
        out.write(json.dumps(data, indent=2) + "\n")
    else:
        _write_text(data, out)
    return 0 if findings.healthy else 1


def _write_text(data: "Dict[str, Any]", out: "IO[str]") -> None:
    out.write(f"doctor  {data['mail_root']}  as of {data['as_of']}\n")
    for f in data["findings"]:
        mark = "ok      " if f["ok"] else ui.red("PROBLEM ")
        out.write(f"{mark} {f['check']:<10} {f['where']}: {f['detail']}\n")
        if f["fix"]:
            raw(out, f"         fix: {f['fix']}\n")
    bad = sum(1 for f in data["findings"] if not f["ok"])
    out.write("healthy\n" if not bad else f"{bad} problem(s)\n")


def collect(clone: "Clone", now: float) -> Findings:
    findings = Findings()
    ok, limits = limitconf.report(clone.common_dir)  # the receiver's limits as the drain reads them
    findings.add("limits", ok, clone.common_dir, limits, "set it as the message says, or `git config --unset` it")
    root = _check_root(clone, findings)
    if root is None:
        return findings
    _check_wiring(clone, root, findings)
    if root.is_off():
        findings.add("delivery", False, root.path, "OFF is present: delivery is suppressed everywhere "
                     "(mail stays queued)", "git korus-mail on")
    drained = {k.name for wt, k in clone.worktree_keys() if not wt.prunable}
    user_wired = install_record.Record.load(os.path.join(root.path, install_record.HOOKS_SUBDIR)).scope("user") \
        is not None
    for name in root.box_names():
        try:
            box = root.box(name)
        except MailError as exc:
            findings.add("box", False, name, str(exc), "fix the permissions as the message says")
            continue
        if box is None:
            continue
        if name not in drained:
            _check_stranded(box, findings, user_wired)
        _check_claims(box, findings)
        _check_quarantine(box, findings)
        _check_drains(box, findings, now)
    _check_waits(root, findings, now)
    _check_tmp(root, findings, now)
    _check_journal(root, findings)
    _check_clock(root, findings, now)
    doctor_store.check_retention(clone, findings)
    doctor_store.check_size(root, findings)
    doctor_relay.check(clone, findings)
    doctor_reserve.check(root, findings, now)
    return findings


# -- the mail root -------------------------------------------------------------------
def _check_root(clone: "Clone", findings: Findings) -> "Optional[MailRoot]":
    """The root's own state, then an opened MailRoot (None when it cannot be opened safely)."""
    path = mail_root_path(clone.common_dir)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        findings.add("mail root", False, path, "absent: nothing installed or sent in this clone",
                     "git korus-mail install")
        return None
    if stat.S_ISLNK(st.st_mode):
        findings.add("mail root", False, path, "is a symlink; the store refuses to follow it",
                     f"remove the link and run `git korus-mail install`: rm '{path}'")
        return None
    if not stat.S_ISDIR(st.st_mode):
        findings.add("mail root", False, path, "is not a directory", f"move it aside: mv '{path}' '{path}.bad'")
        return None
    if st.st_uid != os.geteuid():
        findings.add("mail root", False, path, f"owned by uid {st.st_uid}, not by you (uid {os.geteuid()})",
                     f"chown -R {os.geteuid()} '{path}'")
        return None
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        findings.add("mail root", False, path, f"mode {mode:04o}: others can read or write the queue",
                     f"chmod 700 '{path}'")
        if mode & 0o022:
            return None  # the store refuses it too: nothing further can be read safely
    else:
        findings.add("mail root", True, path, "0700, owned by you, not a symlink")
    try:
        return MailRoot.open(clone.common_dir)
    except MailError as exc:
        findings.add("mail root", False, path, str(exc), "fix it as the message says")
        return None


# -- wiring ----------------------------------------------------------------------------
def _check_wiring(clone: "Clone", root: MailRoot, findings: Findings) -> None:
    record = install_record.Record.load(os.path.join(root.path, install_record.HOOKS_SUBDIR))
    local = False
    wired_any = False
    for client in clients.installers():
        wired, client_local = _check_client_wiring(client, clone, root, record, findings)
        local, wired_any = local or client_local, wired_any or wired
    if not wired_any and not any(not wt.prunable for wt, _k in clone.worktree_keys()):
        # a bare repository with no worktree yet: there is nothing to wire, and install (which
        # exits 0) cannot change that; what counts is that `git worktree add` will wire one
        _check_post_checkout(clone, record, findings, "no worktree to wire yet (a bare repository): ")
        return
    if not wired_any:
        findings.add("wiring", False, clone.common_dir, "no settings file calls this clone's drain",
                     "git korus-mail install")
    if local:
        _check_post_checkout(clone, record, findings)
        _check_pre_commit(clone, root, record, findings)


def _check_post_checkout(clone: "Clone", record: install_record.Record, findings: Findings, head: str = "") -> None:
    """Our post-checkout hook, which wires each worktree `git worktree add` makes."""
    hook: str = ((record.scope("local") or {}).get("post_checkout") or {}).get("path") \
        or os.path.join(postcheckout.git_hooks_dir(clone)[0], postcheckout.POST_CHECKOUT)
    if postcheckout.is_ours_post_checkout(hook) and os.access(hook, os.X_OK):
        findings.add("wiring", True, hook, head + "wires worktrees that `git worktree add` makes")
    else:
        findings.add("wiring", False, hook, head + "no post-checkout hook of ours: new worktrees are not wired",
                     "git korus-mail install")


def _check_pre_commit(clone: "Clone", root: MailRoot, record: install_record.Record, findings: Findings) -> None:
    """Our pre-commit hook, the commit guard of file reservations (wiring/precommit.py)."""
    rec = (record.scope("local") or {}).get(precommit.RECORD_KEY)
    ok, hook, detail = precommit.check(clone, rec, record.data.get("helper"), root.path)
    findings.add("wiring", ok, hook, detail, None if ok else "git korus-mail install")


def _check_client_wiring(client: "Installer", clone: "Clone", root: MailRoot, record: install_record.Record,
                         findings: Findings) -> "Tuple[bool, bool]":
    """One client's stub and settings files: (any wired?, local scope wired?). A client nobody
    wired here is no fault of its own (collect says so when no client is wired at all)."""
    stub = client.stub_path(root)
    wired, skipped, local = client.wired_files(clone, record, stub)
    if not wired:
        return False, False
    _check_stub(client, stub, record.data.get("helper"), findings, repo=postcheckout.repo_anchor(clone))
    try:
        getattr(client, "preflight", lambda: None)()
    except MailError as exc:
        # what every check of this client needs is missing (Codex's CLI): one problem, with the
        # fix that makes it go away, not one `install` (which fails the same way) per file
        findings.add("wiring", False, client.NAME, str(exc).split(": install ")[0] + ": doctor cannot check "
                     "this client's wiring", getattr(client, "PREFLIGHT_FIX", "git korus-mail install"))
        return True, local
    # a client that reads its own gates (Gemini's trust and hooksConfig) judges them here, not at
    # install, which says the person's trust is theirs to give (clients/gemini/gates.py)
    gates = {"gates": True} if getattr(client, "DOCTOR_GATES", False) else {}
    for label, problems in client.check(root, stub, wired, **gates):
        if label == stub:
            if problems:
                findings.add("wiring", False, label, "; ".join(problems), "git korus-mail install")
            continue
        if problems:
            # a problem only the person can fix in the client (Gemini's trust) names that fix itself
            own_fix = getattr(client, "fix_of", None)
            fix = (own_fix(problems) if own_fix is not None else None) or _wiring_fix(client, label)
            findings.add("wiring", False, label, "; ".join(problems), fix)
        else:
            findings.add("wiring", True, label, f"wired, and {client.VERIFIED_AS}")
    for where, detail in double.findings(client.NAME, wired):  # both scopes: handled, but named
        findings.add("wiring", True, where, detail)
    for wt in skipped:
        findings.add("wiring", True, wt.path, "prunable worktree, not wired (`git worktree prune` removes it)")
    # only a client with the wake-up tier (Claude Code's) has wake_findings: not in the Installer Protocol
    wake_findings: "Optional[Callable[[install_record.Record, str, Wired], List[WakeFinding]]]" = \
        getattr(client, "wake_findings", None) if getattr(client, "WAKE_TIER", 0) else None
    for ok, where, detail, fix in wake_findings(record, stub, wired) if wake_findings is not None else ():
        findings.add("wake", ok, where, detail, fix)  # the wake-up tier (install --urgent)
    # only Claude Code's: whether its allow rule lets the model run us (a note: hooks need none)
    for where, detail in getattr(client, "doctor_notes", lambda _w: ())(wired):
        findings.add("allow", True, where, detail)
    return True, local


def _wiring_fix(client: "Installer", path: str) -> str:
    """Advice that can succeed: install never touches a settings file it cannot parse, so
    running it again alone would fail the same way."""
    try:
        client.read_settings(path)
    except MailError:
        return f"fix {path} by hand (it must be a JSON object), then run `git korus-mail install`"
    except OSError as exc:
        return f"make {path} readable ({exc.strerror}), then run `git korus-mail install`"
    return "git korus-mail install"


def _check_stub(client: "Installer", stub: str, helper: "Optional[str]", findings: Findings,
                repo: "Optional[str]" = None) -> None:
    """The stub runs the helper baked into it; with that gone it falls back to PATH, which
    an editor's Claude Code often lacks. So a gone helper is a fault even when PATH works here."""
    if not helper or not os.path.isfile(stub):
        return  # verify reports a missing stub
    if not (os.path.isfile(helper) and os.access(helper, os.X_OK)):
        findings.add("wiring", False, stub, f"the git-korus-mail it runs, {helper}, is gone: sessions whose "
                     f"PATH lacks git-korus-mail get no mail", "git korus-mail install")
        return
    data = None
    try:
        data = read_bytes(stub)
        current = data == client.render_stub(helper, repo).encode("utf-8", "surrogateescape")
    except (OSError, MailError):
        current = False
    if current:
        findings.add("wiring", True, stub, f"current, runs {helper}")
    else:
        from git_korus_mail.wiring.stub import why_stale
        findings.add("wiring", False, stub, f"differs from what install writes now: {why_stale(data or b'')}",
                     "git korus-mail install")


# -- boxes -------------------------------------------------------------------------------
def _check_claims(box: "Box", findings: Findings) -> None:
    for name in records.claim_names(box):
        where = f"box {box.name}"
        shown = _e(name)
        if name.endswith(claims.CLAIM_SUFFIX):
            msg_id = name[:-len(claims.CLAIM_SUFFIX)]
            owner = records.claim_owner(box, msg_id)
            if owner is None:
                continue  # released while we looked
            who = (f"pid {_e(owner.get('pid'))} ({_e(owner.get('purpose') or '?')}, "
                   f"session {_e(owner.get('session') or '-')})")
            verdict, known = claims.judge(owner, box.root)
            if verdict == "dead":
                findings.add("claims", False, where, f"claim {shown} is held by {who}, which is dead: {_e(known)}",
                             "git korus-mail list (reading a box finishes or undoes a dead owner's move)")
            elif verdict == "alive":
                findings.add("claims", True, where, f"claim {shown} held by {who}: {_e(known)}; a move in progress")
            else:
                findings.add("claims", False, where,
                             f"claim {shown} is held by {who}, and nothing here can tell whether it still runs: "
                             f"{_e(known)}. It is never broken automatically, so its message stays queued "
                             f"until the claim is released",
                             f"if you know that process is gone: git korus-mail release {_e(msg_id)}")
        elif claims.is_breaker_leftover(name):
            findings.add("claims", False, where, f"{shown}: a claim breaker died halfway",
                         "git korus-mail list (it cleans these up)")


def _check_waits(root: MailRoot, findings: Findings, now: float) -> None:
    """An ask's wait refuses asks back to its asker (a cycle) while it counts: name one whose
    ask nothing here can prove alive or dead, and the way out (docs/STORE.md, "Liveness")."""
    for w in answers.open_waits(root):
        qid = _e(w.get("question"))
        deadline = w.get("deadline")
        if w["answered"] or (isinstance(deadline, (int, float)) and deadline < now):
            continue  # counts for nothing already
        owner = w.get("owner")
        verdict, known = claims.judge(owner, root)
        who = f"ask pid {_e(owner.get('pid'))}" if isinstance(owner, dict) else "an ask"
        until = utc_stamp(deadline) if isinstance(deadline, (int, float)) else "?"
        if verdict == "alive":
            findings.add("waits", True, "mail/waits", f"question {qid}: {who} waits until {until}: {_e(known)}")
        elif verdict == "unknown":
            findings.add("waits", False, "mail/waits",
                         f"question {qid}: {who} waits until {until}, and nothing here can tell whether it still "
                         f"runs: {_e(known)}. Until then, asks to its worktree are refused",
                         f"if you know that ask is gone: git korus-mail release {qid}")


def _check_stranded(box: "Box", findings: Findings, user_wired: bool = False) -> None:
    """Queued mail in a box that belongs to no worktree (a removed, pruned or moved-away one, or
    a `send --create` path). Under the user scope's wiring a session started at such a path
    drains its box: one that did is proof that its mail is read there."""
    queued = box.count("inbox")
    if not queued:
        return
    live = [r for r in presence.sessions(box) if r["liveness"] in ("working", "idle")]
    where = f"box {box.name}"
    was = _e(box.recorded_path() or "an unknown path")  # a path from disk: escaped like every other field
    if live:
        findings.add("stranded", True, where, f"{queued} queued for {was}, no worktree of this clone, "
                     f"but drained by live session {_e(live[0].get('session'))}")
        return
    drained_by = [r for r in presence.sessions(box) if r.get("session")] if user_wired else []
    if drained_by:
        findings.add("stranded", True, where, f"{queued} queued for {was}, no worktree of this clone, but "
                     f"read there under the user scope's wiring (last by session {_e(drained_by[0]['session'])}): "
                     f"the next session started there shows them")
        return
    findings.add("stranded", False, where, f"{queued} queued message(s) for {was}, which is no worktree "
                 f"of this clone: nobody will read them",
                 f"git korus-mail list (adopts them if their worktree was moved), else "
                 f"git korus-mail forward {box.name} --to <worktree> (moves them; nothing is deleted)")


def _e(value: object) -> str:
    """A name or field from disk, escaped as the drain escapes it."""
    from git_korus_mail.core import render
    return render.escape_line(str(value), 1 << 16)[0]


def _check_quarantine(box: "Box", findings: Findings) -> None:
    names = records.quarantined_names(box)
    if not names:
        return
    qdir = box.path_of("quarantine")
    findings.add("quarantine", False, f"box {box.name}",
                 f"{len(names)} file(s) that were not valid messages, e.g. {sorted(names)[0]}",
                 f"read the reasons in {qdir}/*.why.json, then delete what you have understood")


def _check_drains(box: "Box", findings: Findings, now: float) -> None:
    """Last drain per event in this box, for each client; turns with no consume ever mean the
    consume event is not wired."""
    sessions = presence.sessions(box)
    if not sessions:
        return
    for client in clients.hook_protocols():
        # each client judges its own sessions (presence names the client): clients may share
        # event names (docs/CLIENTS.md) but not their consume event
        mine = [rec for rec in sessions if (rec.get("client") or clients.DEFAULT) == client.NAME]
        if mine:
            _check_client_drains(client, box, mine, findings, now)


def _check_client_drains(client: "HookProtocol", box: "Box", sessions: "List[Dict[str, Any]]", findings: Findings,
                         now: float) -> None:
    last: "Dict[str, str]" = {}
    turns: "List[str]" = []
    for rec in sessions:
        events = rec.get("events") or {}
        for ev, at in events.items():
            if isinstance(at, str) and at > last.get(ev, ""):
                last[ev] = at
        # a session discarded after its opening show never reaches consume, and that is fine;
        # one that ran a turn must have
        for ev in client.TURN_EVENTS:
            if isinstance(events.get(ev), str):
                turns.append(events[ev])
    summary = ", ".join(f"{ev} {_ago(last[ev], now)}" for ev in client.EVENTS if ev in last)
    where = f"box {box.name}"
    newest_turn = max(turns) if turns else None
    stop = client.CONSUME_EVENT
    if stop not in last and newest_turn and _age(newest_turn, now) > STOP_GRACE:
        findings.add("drains", False, where,
                     f"sessions here ran turns but {stop} never drained (last: {summary}): mail is shown "
                     f"and never consumed",
                     f"check the {stop} entry in this worktree's {client.LOCAL_SETTINGS_NAME} "
                     "(git korus-mail install), then restart those sessions")
    else:
        findings.add("drains", True, where, f"last drain per event: {summary}")


def _age(stamp: object, now: float) -> float:
    try:
        return now - parse_stamp(stamp)
    except (ValueError, TypeError):
        return 0


def _ago(stamp: object, now: float) -> str:
    return f"{human_age(_age(stamp, now))} ago"


# -- the root's staging area and journal ---------------------------------------------------
def _check_tmp(root: MailRoot, findings: Findings, now: float) -> None:
    tmp_path = root.tmp_path()
    stale: "List[str]" = []
    young = 0
    for name, st in root.tmp_entries():
        if now - st.st_mtime > TMP_MAX_AGE:
            stale.append(name)
        else:
            young += 1
    if stale:
        findings.add("tmp", False, tmp_path,
                     f"{len(stale)} staging file(s) older than {TMP_MAX_AGE // 3600} h, left by crashed senders",
                     f"delete them: rm '{tmp_path}'/<name> (e.g. {sorted(stale)[0]})")
    elif young:
        findings.add("tmp", True, tmp_path, f"{young} staging file(s) in flight")


def _check_journal(root: MailRoot, findings: Findings) -> None:
    """The journal files the store refuses to use (journal.refusal): say which, and why."""
    for name in (journal.NAME, journal.ROTATED, journal.LOCK):
        path = os.path.join(root.path, name)
        try:
            st = root.lstat(name)
        except FileNotFoundError:
            continue
        problem = "is a symlink" if stat.S_ISLNK(st.st_mode) else journal.refusal(st)
        if problem:
            findings.add("journal", False, path, f"{problem}: the store refuses it, so events go unrecorded "
                         f"(mail itself is unaffected)", f"move it aside: mv '{path}' '{path}.bad'")
        elif stat.S_IMODE(st.st_mode) != 0o600:
            findings.add("journal", False, path, f"mode {stat.S_IMODE(st.st_mode):04o}, not 0600",
                         f"chmod 600 '{path}'")


def _check_clock(root: MailRoot, findings: Findings, now: float) -> None:
    try:
        records = root.read_journal(limit=JOURNAL_WINDOW)
    except OSError as exc:
        findings.add("clock", False, root.path, f"journal unreadable: {exc.strerror}",
                     "check the permissions of journal.jsonl")
        return
    problems: "List[str]" = []
    prev: "Optional[float]" = None
    for rec in records:
        try:
            t = parse_stamp(rec.get("at"))
        except (ValueError, TypeError):
            continue
        if t > now + CLOCK_SLACK and not any("future" in p for p in problems):
            problems.append(f"a journal time is {human_age(t - now)} in the future ({rec.get('at')})")
        if prev is not None and prev - t > CLOCK_SLACK and not any("backwards" in p for p in problems):
            problems.append(f"journal times go backwards by {human_age(prev - t)} (at {rec.get('at')})")
        prev = t if prev is None else max(prev, t)
    if problems:
        findings.add("clock", False, os.path.join(root.path, journal.NAME), "; ".join(problems),
                     "check the system clock (timedatectl / ntp); expiry and ages use it")
    elif records:
        findings.add("clock", True, os.path.join(root.path, journal.NAME), "journal times are consistent")
