"""SIGKILL at every named crash step, then a clean drain, then the store invariants.

`crash.STEPS` is the list of gaps between two state writes; KORUS_MAIL_CRASH_AT=<step>
makes the real command SIGKILL itself there. Each test below is parametrized over
crash.STEPS, so a new step is covered (or fails for want of a scenario) without
editing this file, and every test asserts the process really died of SIGKILL, so a
step that is never reached fails instead of passing vacuously.

Scenarios by family:
  send:*     `send` killed while publishing (nothing partial may reach an inbox)
  show:*     a showing hook killed after its output was flushed
  consume:*  a Stop hook killed while consuming what it was shown
  expire:*   a showing hook (or `list`) killed while moving an expired message aside
  break:*    a Stop hook (or a showing hook's repair) killed while breaking a dead owner's claim
  forward:*  the first drain in a moved worktree killed while adopting its old box's queue
             (and `forward` killed while moving a removed worktree's queue)
  cancel:*   `cancel` killed while withdrawing a message a session was shown
  prune:*    an opening show killed while pruning consumed mail past its retention
"""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from helpers import PYTHON, context_of, git, launch_dir, run_cli
from git_korus_mail import crash
from git_korus_mail.core import keys
from git_korus_mail.store import claims
from git_korus_mail.stamps import utc_stamp
from git_korus_mail.store.message import parse

import invariants

S1 = "sess-one-1111"
S2 = "sess-two-2222"

# Run the real `drain` in a separate process, optionally with the half-published grace at 0
# (a killed sender's linked message is left alone for PUBLISH_GRACE=60 s; tests do not wait).
_DRAIN_NOGRACE = ("import sys\nfrom git_korus_mail.store import publish\npublish.PUBLISH_GRACE = 0\n"
                  "from git_korus_mail import cli\nsys.exit(cli.main(sys.argv[1:]))\n")

# Kill inside a write, between the O_EXCL open and the bytes (no named step is there):
# SIGKILL when the data about to be written contains the marker given in KORUS_TEST_TEAR.
_DRAIN_TEAR = ("import os, signal, sys\nfrom git_korus_mail.store import fsafe\n"
               "_orig = fsafe._write_all\nneedle = os.environ['KORUS_TEST_TEAR'].encode()\n"
               "def tear(fd, data):\n"
               "    if needle in bytes(data):\n"
               "        os.kill(os.getpid(), signal.SIGKILL)\n"
               "    return _orig(fd, data)\n"
               "fsafe._write_all = tear\n"
               "from git_korus_mail import cli\nsys.exit(cli.main(sys.argv[1:]))\n")


# -- helpers -----------------------------------------------------------------------
def crash_env(step):
    return {"KORUS_MAIL_CRASH_AT": step}


def assert_killed(proc, step):
    assert proc.returncode == -signal.SIGKILL, (
        f"{step}: expected death by SIGKILL at the step, got exit {proc.returncode} "
        f"(step never reached?)\nstdout: {proc.stdout}\nstderr: {proc.stderr}")


def drain(event, cwd, session, env=None, nograce=False, tear=None):
    """The real drain in its own process; returns the CompletedProcess (no exit check)."""
    payload = {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event}
    if event == "SessionStart":
        payload["source"] = "startup"
    full_env = dict(os.environ)
    full_env.update(env or {})
    if tear:
        argv = [PYTHON, "-c", _DRAIN_TEAR, "drain"]
        full_env["KORUS_TEST_TEAR"] = tear
    elif nograce:
        argv = [PYTHON, "-c", _DRAIN_NOGRACE, "drain"]
    else:
        argv = [PYTHON, "-m", "git_korus_mail", "drain"]
    return subprocess.run(argv, cwd=str(cwd), input=json.dumps(payload), capture_output=True, text=True,
                          env=full_env)


def clean(event, cwd, session, nograce=False):
    proc = drain(event, cwd, session, nograce=nograce)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    return json.loads(out) if out else None


def answer_text(ans):
    """Everything a hook answer shows (model context and user notice)."""
    if not ans:
        return ""
    return (context_of(ans) or "") + "\n" + (ans.get("systemMessage") or "")


_SENT = iter(range(1, 1 << 30))


def send(c, body=None, ttl=None, check=True):
    # each body its own text: the same text twice to one box within 10 s is dropped as a loop
    body = f"hello {next(_SENT)}" if body is None else body
    args = ["send", "--to", str(c.web), "--json"] + (["--ttl", str(ttl)] if ttl else []) + ["--", body]
    proc = run_cli(*args, cwd=c.main, check=check)
    return json.loads(proc.stdout)["results"][0]["id"]


def box_dir(c, wt=None):
    return c.mail_root / "box" / keys.key_for(str(wt or c.web)).name


def ls(path):
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def state_of(c, msg_id, wt=None):
    b = box_dir(c, wt)
    return [s for s in ("inbox", "seen", "expired") if (b / s / (msg_id + ".json")).exists()]


def journal_events(c, event, msg_id):
    return [r for r in invariants.journal(c.mail_root) if r.get("event") == event and r.get("id") == msg_id]


def marker(c, session, msg_id):
    return box_dir(c) / "shown" / launch_dir(session) / msg_id


def dead_pid():
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(proc.stdout)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    return pid


def plant_dead_claim(c, msg_id):
    owner = claims.me("consume", "sess-dead-0000")
    owner["pid"] = dead_pid()
    owner["start"] = 1  # whatever it was, that process is gone
    d = box_dir(c) / "claiming"
    d.mkdir(mode=0o700, exist_ok=True)
    p = d / (msg_id + claims.CLAIM_SUFFIX)
    p.write_text(json.dumps(owner, sort_keys=True))
    p.chmod(0o600)
    return owner


def make_expired(c, msg_id):
    """Rewrite a queued message's expires_at into the past (atomically, as a sender would write)."""
    p = box_dir(c) / "inbox" / (msg_id + ".json")
    msg = json.loads(p.read_bytes())
    msg["expires_at"] = utc_stamp(1_000_000_000.0)  # 2001
    tmp = p.with_name(".rewrite")
    tmp.write_text(json.dumps(msg, sort_keys=True) + "\n")
    tmp.chmod(0o600)
    os.rename(tmp, p)


def settle_and_check(c, **kw):
    """`list` repairs every box and expires due mail; then the invariants must hold."""
    proc = run_cli("list", "--json", cwd=c.main)
    assert proc.returncode == 0, proc.stderr
    return invariants.check(c.mail_root, **kw)


def assert_consumed_once(c, msg_id, session, **kw):
    # a dead consumer's claim may outlive a Stop (Stop does not repair; show events and `list` do)
    s = invariants.check(c.mail_root, idle=False, **kw)
    info = s[box_dir(c).name]
    assert state_of(c, msg_id) == ["seen"], state_of(c, msg_id)
    assert info["receipts"][msg_id]["session"] == session
    assert len(journal_events(c, "consumed", msg_id)) <= 1
    return s


# -- scenarios ---------------------------------------------------------------------------
def scenario_send(c, step):
    proc = run_cli("send", "--to", str(c.web), "--", "body of a killed send", cwd=c.main, env=crash_env(step))
    assert_killed(proc, step)
    tmp_files = [n for n in ls(c.mail_root / "tmp") if n.startswith("msg.")]
    assert len(tmp_files) == 1, f"the killed sender's staging file: {tmp_files}"
    staged = parse((c.mail_root / "tmp" / tmp_files[0]).read_bytes())  # complete: raises otherwise
    msg_id = staged["id"]
    inbox = ls(box_dir(c) / "inbox")
    # no partial message in any inbox: whatever is there parses completely
    for name in inbox:
        parse((box_dir(c) / "inbox" / name).read_bytes(), expected_id=name[:-5])
    assert not journal_events(c, "sent", msg_id), "journal claims a send that was killed"
    if step == "send:tmp-written":
        assert inbox == []
    elif step == "send:linked":
        assert inbox == [msg_id + ".json"]
        a = os.stat(box_dir(c) / "inbox" / inbox[0])
        b = os.stat(c.mail_root / "tmp" / tmp_files[0])
        assert (a.st_ino, a.st_nlink) == (b.st_ino, 2)
        # within the grace period a reader leaves the half-published message alone (neither
        # shown nor quarantined): its sender might still be about to unlink the staging file
        ans = clean("SessionStart", c.web, S2)
        assert msg_id not in answer_text(ans)
        assert state_of(c, msg_id) == ["inbox"] and not ls(box_dir(c) / "quarantine")
    else:
        assert len(inbox) <= 1
    # clean drain sequence (grace over): show, consume
    ans = clean("SessionStart", c.web, S1, nograce=True)
    published = step != "send:tmp-written" and bool(inbox)
    assert (msg_id in answer_text(ans)) == published, answer_text(ans)
    clean("Stop", c.web, S1)
    s = settle_and_check(c)
    if published:
        assert state_of(c, msg_id) == ["seen"]
        assert s[box_dir(c).name]["receipts"][msg_id]["session"] == S1
        assert not ls(c.mail_root / "tmp"), "the completed publication left its staging file"
    else:
        assert state_of(c, msg_id) == []
        assert list(s.tmp_messages) == tmp_files, "only the killed sender's complete staging file remains"


def scenario_show(c, step):
    msg_id = send(c)
    proc = drain("SessionStart", c.web, S1, env=crash_env(step))
    assert_killed(proc, step)
    # the kill came after the output was written and flushed: the message was displayed
    assert msg_id in proc.stdout
    had_marker = marker(c, S1, msg_id).exists()
    if step == "show:emitted":
        assert not had_marker, "marker written before the step that precedes it"
    elif step == "show:marked":
        assert had_marker
        assert not journal_events(c, "shown", msg_id)
    clean("Stop", c.web, S1)
    if had_marker:
        assert_consumed_once(c, msg_id, S1)
    else:
        # no marker, no consumption: it stays queued, unconsumed, and is shown again
        assert state_of(c, msg_id) == ["inbox"] and not (box_dir(c) / "receipts" / (msg_id + ".json")).exists()
        ans = clean("SessionStart", c.web, S1)
        assert msg_id in answer_text(ans), "the message was not shown again after the killed show"
        assert marker(c, S1, msg_id).exists()
        clean("Stop", c.web, S1)
        assert_consumed_once(c, msg_id, S1)
    settle_and_check(c)


def scenario_consume(c, step):
    msg_id = send(c)
    assert msg_id in answer_text(clean("SessionStart", c.web, S1))
    assert msg_id in answer_text(clean("SessionStart", c.web, S2))  # a second session shown it too
    proc = drain("Stop", c.web, S1, env=crash_env(step))
    assert_killed(proc, step)
    b = box_dir(c)
    name = msg_id + ".json"
    claim = (b / "claiming" / (msg_id + claims.CLAIM_SUFFIX)).exists()
    receipt = (b / "receipts" / name).exists()
    where = state_of(c, msg_id)
    expected = {
        "consume:claimed": (True, False, ["inbox"]),
        "consume:receipt": (True, True, ["inbox"]),
        "consume:linked-seen": (True, True, ["inbox", "seen"]),
        "consume:unlinked-inbox": (True, True, ["seen"]),
        "consume:released": (False, True, ["seen"]),
    }.get(step)
    if expected is not None:
        assert (claim, receipt, where) == expected, "state after the kill: (claim, receipt, where)"
    # clean Stop of the killed session, then of the other session that was shown the message
    clean("Stop", c.web, S1)
    assert_consumed_once(c, msg_id, S1)
    assert not marker(c, S1, msg_id).exists()
    clean("Stop", c.web, S2)
    assert_consumed_once(c, msg_id, S1)  # S2 finds it gone: no second consumer
    assert not marker(c, S2, msg_id).exists()
    settle_and_check(c)
    assert not ls(b / "claiming")


def scenario_expire(c, step, via="SessionStart"):
    msg_id = send(c, ttl=1)
    make_expired(c, msg_id)
    if via == "list":
        proc = run_cli("list", cwd=c.main, env=crash_env(step))
    else:
        proc = drain("SessionStart", c.web, S1, env=crash_env(step))
    assert_killed(proc, step)
    b = box_dir(c)
    claim = (b / "claiming" / (msg_id + claims.CLAIM_SUFFIX)).exists()
    notice = (b / "notices" / (msg_id + ".json")).exists()
    expected = {
        "expire:claimed": (True, False, ["inbox"]),
        "expire:linked": (True, False, ["inbox", "expired"]),
        "expire:unlinked-inbox": (True, True, ["expired"]),
    }.get(step)
    if expected is not None:
        assert (claim, notice, state_of(c, msg_id)) == expected
    # clean sequence: two session starts (the notice is told at most once), then Stop
    told = []
    for sess in (S1, S2):
        text = answer_text(clean("SessionStart", c.web, sess))
        assert msg_id not in text or "expired" in text  # never displayed as mail
        assert "[mail " not in text
        told.append("expired unread" in text)
    assert told.count(True) == 1, f"expiry notice told {told.count(True)} times"
    clean("Stop", c.web, S1)
    clean("Stop", c.web, S2)
    s = settle_and_check(c)
    assert state_of(c, msg_id) == ["expired"]
    assert msg_id not in s[b.name]["receipts"] and not ls(b / "notices")
    assert len(journal_events(c, "expired", msg_id)) <= 1


def scenario_break(c, step, via="Stop"):
    msg_id = send(c)
    assert msg_id in answer_text(clean("SessionStart", c.web, S1))
    plant_dead_claim(c, msg_id)
    if via == "Stop":
        proc = drain("Stop", c.web, S1, env=crash_env(step))
    else:  # a showing hook's repair() breaks it
        proc = drain("SessionStart", c.web, S2, env=crash_env(step))
    assert_killed(proc, step)
    b = box_dir(c)
    left = ls(b / "claiming")
    # killed under the claiming/ lock, before its unlink: the dead claim stands, no aside file
    assert left == [msg_id + claims.CLAIM_SUFFIX], left
    assert state_of(c, msg_id) == ["inbox"]
    clean("Stop", c.web, S1)
    # the claim name is free again: the clean Stop claims and consumes
    assert state_of(c, msg_id) == ["seen"]
    assert json.loads((b / "receipts" / (msg_id + ".json")).read_bytes())["session"] == S1
    clean("SessionStart", c.web, S2)
    settle_and_check(c)
    assert_consumed_once(c, msg_id, S1)


def _first_move_state(old, new, first, step):
    """Where the first message stands after a kill at `step` while moving it from box `old`
    to box `new`: (claimed in old, decision recorded in old, in old inbox, in new inbox)."""
    name = first + ".json"
    return ((old / "claiming" / (first + claims.CLAIM_SUFFIX)).exists(), (old / "forwarded" / name).exists(),
            (old / "inbox" / name).exists(), (new / "inbox" / name).exists())


MOVE_STATES = {
    "forward:claimed": (True, False, True, False),
    "forward:recorded": (True, True, True, False),
    "forward:copied": (True, True, True, True),
    "forward:unlinked": (True, True, False, True),
}


def assert_moved_once(c, ids, old, new, event, session):
    """Every id consumed once, in the new box, by `session`; journaled as moved at most once."""
    s = settle_and_check(c)
    for msg_id in ids:
        assert msg_id in s[new.name]["seen"] and s[new.name]["receipts"][msg_id]["session"] == session
        assert not any(msg_id in s[old.name][st] for st in ("inbox", "seen", "expired")), msg_id
        assert len(journal_events(c, event, msg_id)) <= 1
        assert len(journal_events(c, "consumed", msg_id)) <= 1
    fates = {r["id"]: r["fate"] for r in json.loads(run_cli("status", "--json", cwd=c.main).stdout)["sent"]}
    assert all(fates[i]["state"] == "consumed" for i in ids), fates


def scenario_forward(c, step):
    """`git worktree move`, then the moved worktree's first drain is killed while adopting."""
    ids = [send(c, body=f"before the move {i}") for i in range(2)]
    old = box_dir(c)
    moved = c.base / "web-moved"
    git("worktree", "move", str(c.web), str(moved), cwd=c.main)
    new = c.mail_root / "box" / keys.key_for(str(moved)).name
    proc = drain("SessionStart", moved, S1, env=crash_env(step))
    assert_killed(proc, step)
    assert _first_move_state(old, new, min(ids), step) == MOVE_STATES[step]
    assert not (new / "worktree").exists(), "adoption recorded as done by a killed process"
    text = answer_text(clean("SessionStart", moved, S1))
    assert all(text.count(f"id {i}") == 1 for i in ids), text
    clean("Stop", moved, S1)
    assert (new / "worktree").exists() and not (old / "worktree").exists()
    assert_moved_once(c, ids, old, new, "adopted", S1)


def scenario_cancel(c, step, then="cancel"):
    """`cancel` killed at each step of its move, after a session was shown the message; then
    the person runs `cancel` again (then="cancel"), or the shown session's Stop comes first
    (then="Stop"). Either way the message ends in exactly one of seen/ and cancelled/, a
    decided cancel is never undone, and the journal says `cancelled` at most once."""
    msg_id = send(c)
    assert msg_id in answer_text(clean("SessionStart", c.web, S1))
    proc = run_cli("cancel", msg_id, cwd=c.main, env=crash_env(step))
    assert_killed(proc, step)
    b = box_dir(c)
    where = [s for s in ("inbox", "seen", "cancelled") if (b / s / (msg_id + ".json")).exists()]
    claim = (b / "claiming" / (msg_id + claims.CLAIM_SUFFIX)).exists()
    decided = step != "cancel:claimed"  # the cancelled/ link is the decision
    assert (claim, where) == {"cancel:claimed": (True, ["inbox"]), "cancel:linked": (True, ["inbox", "cancelled"]),
                              "cancel:unlinked-inbox": (True, ["cancelled"])}[step]
    if then == "cancel":
        again = run_cli("cancel", msg_id, cwd=c.main)
        assert again.returncode == 0, again.stderr
        assert ("cancelled already" in again.stdout) == decided, again.stdout
        clean("Stop", c.web, S1)
    else:
        clean("Stop", c.web, S1)  # breaks the dead claim; consumes only what no cancel decided
    s = settle_and_check(c)
    consumed = then == "Stop" and not decided
    final = [st for st in ("inbox", "seen", "cancelled") if (b / st / (msg_id + ".json")).exists()]
    assert final == (["seen"] if consumed else ["cancelled"]), final
    assert (msg_id in s[b.name]["receipts"]) == consumed
    assert len(journal_events(c, "cancelled", msg_id)) == (0 if consumed else 1)
    assert len(journal_events(c, "consumed", msg_id)) == (1 if consumed else 0)
    fate = json.loads(run_cli("status", "--json", cwd=c.main, check=True).stdout)["sent"][0]["fate"]["state"]
    assert fate == ("consumed" if consumed else "cancelled")


def scenario_prune(c, step):
    """Retention 0 days: the next opening show prunes what was consumed. Killed there, the
    store still holds every queued message, and a pruned pair is gone whole or announced by
    its marker; the next opening show finishes and journals every pruned id."""
    git("config", "korus-mail.retention-days", "0", cwd=c.main)
    old = [send(c, body=f"consumed {i}") for i in range(3)]
    clean("SessionStart", c.web, S1)
    clean("Stop", c.web, S1)
    queued = send(c, body="queued for years", ttl=10 * 365 * 24 * 60)
    proc = drain("SessionStart", c.web, S2, env=crash_env(step))
    assert_killed(proc, step)
    b = box_dir(c)
    assert state_of(c, queued) == ["inbox"]
    assert ls(b / "pruning"), "a killed prune leaves its markers"
    settle_and_check(c)  # half-pruned pairs are announced by their markers: I1-I5 hold even now
    clean("SessionStart", c.web, "sess-three-3333")  # repairs the pruner's claim, finishes the prune
    s = settle_and_check(c)
    assert state_of(c, queued) == ["inbox"] and not ls(b / "pruning")
    assert not ls(b / "seen") and not ls(b / "receipts")
    assert set(old) <= s.pruned


def scenario_stamp(c, step):
    """The drain killed while it stamps its launch for the stub's fast path (store/fastpath.py):
    a stamp half made is never seen, one made is checked, and mail sent afterwards is shown at
    the very next tool call, through the real stub."""
    from stubworld import Stub, age, inbox_of
    stub = Stub(c, c.web, session=S1)
    first = send(c, body="shown before the stamp")
    assert first in json.dumps(stub.run("UserPromptSubmit")[0])
    age(inbox_of(c, c.web))  # old enough to stamp
    proc = drain("PostToolUse", c.web, S1, env=dict(crash_env(step), CLAUDE_CODE_SESSION_ID=S1))
    assert_killed(proc, step)
    assert os.path.lexists(stub.stamp) == (step == "stamp:linked")
    if step == "stamp:linked":
        assert stub.run("PostToolUse") == (None, False)  # a whole stamp, and nothing new: no Python
    msg_id = send(c, body="sent after the kill")
    answer, started = stub.run("PostToolUse")
    assert started and msg_id in json.dumps(answer)



@pytest.mark.parametrize("step", [s for s in crash.STEPS if s.startswith("stamp:")])
def test_killed_stamping_a_box_without_an_inbox(step, clone):
    """A worktree that never got mail: the drain killed while it stamps "no inbox" leaves no stamp
    or a whole one, and the first message sent afterwards is shown at the very next tool call."""
    from stubworld import Stub, inbox_of
    stub = Stub(clone, clone.web, session=S1)
    proc = drain("PostToolUse", clone.web, S1, env=dict(crash_env(step), CLAUDE_CODE_SESSION_ID=S1))
    assert_killed(proc, step)
    assert not os.path.lexists(inbox_of(clone, clone.web))
    assert os.path.lexists(stub.stamp) == (step == "stamp:linked")
    if step == "stamp:linked":
        assert stub.run("PostToolUse") == (None, False)  # a whole stamp, no inbox: no Python
    msg_id = send(clone, body="the first, after the kill")
    answer, started = stub.run("PostToolUse")
    assert started and msg_id in json.dumps(answer)
    settle_and_check(clone)


@pytest.mark.parametrize("step", [s for s in crash.STEPS if s.startswith("send:")])
def test_killed_first_sender_into_a_box_stamped_without_an_inbox(step, clone):
    """The first message for a worktree whose launch holds a "no inbox" stamp, its sender killed
    between two steps: the inbox it made sends every later tool call to the drain, which shows
    what is queued as it would have without the stamp."""
    from stubworld import Stub
    stub = Stub(clone, clone.web, session=S1)
    assert stub.run("UserPromptSubmit") == (None, True)
    assert stub.run("PostToolUse") == (None, False)
    proc = run_cli("send", "--to", str(clone.web), "--", "from a killed sender", cwd=clone.main, env=crash_env(step))
    assert_killed(proc, step)
    for _ in range(2):
        assert stub.run("PostToolUse")[1]  # the inbox exists: the stamp is not believed, ever again
    ans = clean("PostToolUse", clone.web, S1, nograce=True)  # the half-published one, once its grace is over
    assert ("from a killed sender" in answer_text(ans)) == (step == "send:linked")
    msg_id = send(clone, body="after the killed sender")
    answer, started = stub.run("PostToolUse")
    assert started and msg_id in json.dumps(answer)
    settle_and_check(clone)


def scenario_event(c, step):
    """The drain killed right after it claimed its hook event (store/events.py), before any
    output: the twin of that event (the other install scope's wiring, the same stdin) takes the
    claim over and shows the mail; nothing was marked, so nothing is consumed unseen."""
    msg_id = send(c)
    proc = drain("SessionStart", c.web, S1, env=crash_env(step))
    assert_killed(proc, step)
    assert proc.stdout == ""
    b = box_dir(c)
    assert len(ls(b / "events")) == 1 and not ls(b / "shown")
    assert msg_id in answer_text(clean("SessionStart", c.web, S1))
    clean("Stop", c.web, S1)
    assert_consumed_once(c, msg_id, S1)


def scenario_turn(c, step):
    """The drain killed between its presence record (which names the stub's turn record as seen)
    and removing that turn record (store/presence.py): readers go by the drain's record, not the
    stale turn record, and the launch's next tool call runs the drain, which tidies it."""
    from stubworld import Stub
    stub = Stub(c, c.web, session=S1)
    assert stub.run("UserPromptSubmit")[1]  # a box that never got mail: stamped with the box link
    assert stub.run("Stop") == (None, False)  # the stub records idle
    turn = box_dir(c) / "sessions" / f"{S1}.state"
    assert re.fullmatch(r"idle Stop [0-9]+\n", turn.read_text())
    msg_id = send(c, body="shown at a killed prompt")
    proc = drain("UserPromptSubmit", c.web, S1, env=dict(crash_env(step), CLAUDE_CODE_SESSION_ID=S1))
    assert_killed(proc, step)
    assert turn.exists()  # (killed at its presence record, before its output: the mail is shown later)
    rec = json.loads((box_dir(c) / "sessions" / f"{S1}.json").read_text())
    assert rec["state"] == "working" and rec["turn_seen"]
    from git_korus_mail.store import presence
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(str(c.mail_root.parent), create=False)
    assert presence.load(root.box(box_dir(c).name, create=False), S1)["state"] == "working"
    answer, started = stub.run("PostToolUse")  # the drain runs (new mail, and a stale turn record)
    assert started and msg_id in json.dumps(answer)
    assert not turn.exists()  # tidied
    clean("Stop", c.web, S1)
    assert_consumed_once(c, msg_id, S1)


from asking import scenario_answer, scenario_ask  # noqa: E402 - ask, reply and the automatic answer

from test_reservations import scenario_release, scenario_reserve  # noqa: E402 - file reservations (issue 29)
from test_reserve_told import scenario_told  # noqa: E402 - the told-once refusal (issue 29)

SCENARIOS = {"reserve": scenario_reserve, "release": scenario_release, "told": scenario_told, "send": scenario_send, "show": scenario_show, "consume": scenario_consume, "stamp": scenario_stamp,
             "expire": scenario_expire, "break": scenario_break, "forward": scenario_forward,
             "cancel": scenario_cancel, "prune": scenario_prune,
             "ask": scenario_ask, "answer": scenario_answer, "event": scenario_event, "turn": scenario_turn}


@pytest.mark.parametrize("step", crash.STEPS)
def test_killed_at_step(step, clone):
    family = step.split(":", 1)[0]
    assert family in SCENARIOS, f"crash step {step!r} has no scenario in tests/test_crash.py: add one"
    SCENARIOS[family](clone, step)


@pytest.mark.parametrize("step", [s for s in crash.STEPS if s.startswith("expire:")])
def test_killed_expiring_via_list(step, clone):
    scenario_expire(clone, step, via="list")


@pytest.mark.parametrize("step", [s for s in crash.STEPS if s.startswith("cancel:")])
def test_killed_cancel_then_the_shown_sessions_stop(step, clone):
    scenario_cancel(clone, step, then="Stop")


@pytest.mark.parametrize("step", [s for s in crash.STEPS if s.startswith("break:")])
def test_killed_breaking_via_repair(step, clone):
    scenario_break(clone, step, via="SessionStart")


@pytest.mark.parametrize("step", [s for s in crash.STEPS if s.startswith("forward:")])
def test_killed_forwarding_a_removed_worktrees_queue(step, clone):
    """`forward` killed at each step: `list` completes a recorded decision, a second `forward`
    moves the rest; each message reaches the destination once and keeps its id."""
    c = clone
    gone = c.add_worktree("gone")
    ids = []
    for i in range(2):
        proc = run_cli("send", "--to", "gone", "--json", "--", f"for gone {i}", cwd=c.main, check=True)
        ids.append(json.loads(proc.stdout)["results"][0]["id"])
    old = c.mail_root / "box" / keys.key_for(str(gone)).name
    git("worktree", "remove", str(gone), cwd=c.main)
    proc = run_cli("forward", old.name, "--to", "web", cwd=c.main, env=crash_env(step))
    assert_killed(proc, step)
    new = box_dir(c)
    assert _first_move_state(old, new, min(ids), step) == MOVE_STATES[step]
    assert run_cli("list", cwd=c.main).returncode == 0  # settles the old box: its repair finishes a decision
    first_done = step != "forward:claimed"
    assert (new / "inbox" / (min(ids) + ".json")).exists() == first_done
    assert (old / "inbox" / (min(ids) + ".json")).exists() == (not first_done)
    again = run_cli("forward", old.name, "--to", "web", cwd=c.main)
    assert again.returncode == 0, again.stderr
    text = answer_text(clean("SessionStart", c.web, S1))
    assert all(text.count(f"id {i}") == 1 for i in ids), text
    clean("Stop", c.web, S1)
    assert_moved_once(c, ids, old, new, "forwarded", S1)


@pytest.mark.parametrize("step", ["forward:recorded", "forward:copied"])
def test_killed_forwarding_mail_back_then_forwarding_it_on(step, clone):
    """b->c, then c->b killed with c's decision recorded (the copy not yet in b, or in b with c's
    entry not yet unlinked): the repair completes the move to b, and b's record of its first
    departure steers nothing, so b->d lands in d (issue 22, item 6)."""
    c = clone
    b_wt, c_wt, d_wt = (c.add_worktree(n) for n in ("wb", "wc", "wd"))
    b, cc, d = (c.mail_root / "box" / keys.key_for(str(w)).name for w in (b_wt, c_wt, d_wt))
    proc = run_cli("send", "--to", "wb", "--json", "--", "comes back", cwd=c.main, check=True)
    msg_id = json.loads(proc.stdout)["results"][0]["id"]
    run_cli("forward", b.name, "--to", str(c_wt), cwd=c.main, check=True)
    proc = run_cli("forward", cc.name, "--to", str(b_wt), cwd=c.main, env=crash_env(step))
    assert_killed(proc, step)
    assert (b / "inbox" / (msg_id + ".json")).exists() == (step == "forward:copied")
    assert run_cli("list", cwd=c.main).returncode == 0  # settles c's box: its repair finishes the move to b
    assert ls(b / "inbox") == [msg_id + ".json"] and ls(cc / "inbox") == []
    run_cli("forward", b.name, "--to", str(d_wt), cwd=c.main, check=True)
    assert ls(d / "inbox") == [msg_id + ".json"], "b's stale record sent it back to c"
    assert ls(b / "inbox") == [] and ls(cc / "inbox") == []
    assert msg_id in answer_text(clean("SessionStart", d_wt, S1))
    clean("Stop", d_wt, S1)
    settle_and_check(c)


@pytest.mark.parametrize("step", [s for s in crash.STEPS if s.startswith("send:")])
def test_killed_sender_leaves_no_partial_message_in_any_inbox(step, clone):
    """A send to several worktrees, killed in its first publication: every inbox holds only
    complete messages, the clean drains deliver nothing torn, and the staging file is complete."""
    clone.add_worktree("ops")
    proc = run_cli("send", "--all-worktrees", "--", "to everyone", cwd=clone.main, env=crash_env(step))
    assert_killed(proc, step)
    boxes = ls(clone.mail_root / "box")
    assert boxes, "the killed send created no box at all"
    for bname in boxes:
        for name in ls(clone.mail_root / "box" / bname / "inbox"):
            parse((clone.mail_root / "box" / bname / "inbox" / name).read_bytes(), expected_id=name[:-5])
    for wt in (clone.web, clone.base / "ops"):
        clean("SessionStart", wt, S1, nograce=True)
        clean("Stop", wt, S1)
    s = settle_and_check(clone)
    delivered = invariants.ids(s, "seen")
    assert len(delivered) == (1 if step != "send:tmp-written" else 0)


@pytest.mark.parametrize("step", ["consume:receipt", "consume:linked-seen"])
@pytest.mark.parametrize("via", ["list", "SessionStart"])
def test_receipt_beats_expiry_after_a_killed_consume(step, via, clone):
    """Killed after the receipt, and the message's expiry passes before anyone repairs: the
    expiring reader must finish the consumption (seen/), not expire it as unread."""
    c = clone
    msg_id = send(c)
    clean("SessionStart", c.web, S1)
    assert_killed(drain("Stop", c.web, S1, env=crash_env(step)), step)
    make_expired(c, msg_id)
    if via == "list":
        assert run_cli("list", cwd=c.main).returncode == 0
    else:
        assert "expired unread" not in answer_text(clean("SessionStart", c.web, S2))
    s = settle_and_check(c)
    assert state_of(c, msg_id) == ["seen"]
    assert s[box_dir(c).name]["receipts"][msg_id]["session"] == S1
    assert not ls(box_dir(c) / "notices")


# -- kills inside a write (no named step there): the file must not be left torn ---------------
def test_killed_inside_receipt_write(clone):
    """SIGKILL between the receipt's O_EXCL create and its bytes. The receipt is the proof of
    delivery (`status` reads who consumed and what was shown); it must never be left empty."""
    c = clone
    msg_id = send(c)
    clean("SessionStart", c.web, S1)
    proc = drain("Stop", c.web, S1, tear='"consumed_at"')
    assert_killed(proc, "inside the receipt write")
    clean("Stop", c.web, S1)
    clean("SessionStart", c.web, S2)
    s = settle_and_check(c, killed_debris_ok=True)  # its staging file, if any, is in tmp/ only
    assert state_of(c, msg_id) in (["seen"], ["inbox"])
    if state_of(c, msg_id) == ["seen"]:
        assert s[box_dir(c).name]["receipts"][msg_id]["session"] == S1
    else:  # left queued: a later Stop of a session that is shown it consumes it
        clean("SessionStart", c.web, S1)
        clean("Stop", c.web, S1)
        assert_consumed_once(c, msg_id, S1, killed_debris_ok=True)


def test_killed_inside_marker_write(clone):
    """SIGKILL between a display marker's O_EXCL create and its bytes. The message was shown;
    it must neither be lost nor be stuck for this session (never shown again, never consumed)."""
    c = clone
    msg_id = send(c)
    proc = drain("SessionStart", c.web, S1, tear='"truncated"')
    assert_killed(proc, "inside the marker write")
    assert msg_id in proc.stdout
    ans = clean("Stop", c.web, S1)
    if state_of(c, msg_id) != ["seen"]:
        clean("SessionStart", c.web, S1)
        ans = clean("Stop", c.web, S1)
    assert_consumed_once(c, msg_id, S1, killed_debris_ok=True)
    assert not (ans or {}).get("systemMessage"), ans
    settle_and_check(c, killed_debris_ok=True)


def test_killed_processes_staging_files_are_swept_after_36h(clone):
    """What a killed process leaves in tmp/ (a sender's staging copy, torn or complete) is swept
    at a SessionStart once older than 36 h, and not before (a live sender may still need it)."""
    c = clone
    proc = run_cli("send", "--to", str(c.web), "--", "killed", cwd=c.main, env=crash_env("send:tmp-written"))
    assert_killed(proc, "send:tmp-written")
    [staged] = ls(c.mail_root / "tmp")
    torn = c.mail_root / "tmp" / "msg.20000101T000000.000000Z-p1-0000000000000000"
    torn.write_bytes(b'{"v": 1, "id"')
    old = os.stat(torn).st_mtime - 37 * 3600
    os.utime(torn, (old, old))
    clean("SessionStart", c.web, S1)
    assert ls(c.mail_root / "tmp") == [staged], "the old torn file stays, or the recent one went"
    p = c.mail_root / "tmp" / staged
    os.utime(p, (old, old))
    clean("SessionStart", c.web, S2)
    assert ls(c.mail_root / "tmp") == []
    settle_and_check(c)


def test_a_copy_consumed_before_the_repair_is_never_placed_again(clone):
    """Killed after the copy reached the destination: the destination's session consumes it
    before anyone repairs the source. The repair then only unlinks the source entry."""
    c = clone
    gone = c.add_worktree("gone")
    proc = run_cli("send", "--to", "gone", "--json", "--", "copied, then killed", cwd=c.main, check=True)
    msg_id = json.loads(proc.stdout)["results"][0]["id"]
    old = c.mail_root / "box" / keys.key_for(str(gone)).name
    git("worktree", "remove", str(gone), cwd=c.main)
    assert_killed(run_cli("forward", old.name, "--to", "web", cwd=c.main, env=crash_env("forward:copied")),
                  "forward:copied")
    assert msg_id in answer_text(clean("SessionStart", c.web, S1))
    clean("Stop", c.web, S1)
    assert state_of(c, msg_id) == ["seen"]
    s = settle_and_check(c)  # `list` repairs the old box: the recorded move completes without a copy
    assert state_of(c, msg_id) == ["seen"] and msg_id not in s[old.name]["inbox"]
    assert not answer_text(clean("SessionStart", c.web, S2)).count(f"id {msg_id}")
