"""The told-once refusal (issue 29; docs/HOOKS.md, "Before an edit"): a session's first edit of
another's advisory reservation is refused through the client's decision field, its reason the
tell; the session is then recorded as told (a create-only record beside the reservation's) and
its later edits of those paths go on in silence. Every hook here is the real `drain` in a
process of its own, for each client's own payload and answer."""

import json
import os
import subprocess

import pytest

import invariants
from helpers import PYTHON, run_cli

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"

# (client, pre-edit event, tool, tool_input for `path`)
CLIENTS = {
    "claude": ("PreToolUse", "Write", lambda p: {"file_path": p, "content": "x\n"}),
    "codex": ("PreToolUse", "apply_patch", lambda p: {"command": f"*** Begin Patch\n*** Add File: {p}\n+x\n*** End Patch\n"}),
    "gemini": ("BeforeTool", "write_file", lambda p: {"file_path": p, "content": "x\n"}),
}


def reserve(cwd, *args, session="s-web"):
    return run_cli("reserve", *args, cwd=cwd, env={SESSION_ENV: session})


def edit(clone, client, path, session, env=None):
    """A pre-edit hook of `client` for an edit of `path` (relative to the main worktree): the
    parsed answer or None, and the process."""
    event, tool, args = CLIENTS[client]
    payload = {"session_id": session, "transcript_path": "", "cwd": str(clone.main), "hook_event_name": event,
               "tool_name": tool, "tool_input": args(path)}
    proc = run_cli("drain", f"--client={client}", cwd=clone.main, input=json.dumps(payload), env=env)
    out = proc.stdout.strip()
    return (json.loads(out) if out else None), proc


def refusal(client, answer):
    """The reason of a refusal in `client`'s own decision field; None when it is no refusal."""
    if answer is None:
        return None
    if client == "gemini":
        return answer["reason"] if answer.get("decision") == "deny" else None
    out = answer["hookSpecificOutput"]
    return out["permissionDecisionReason"] if out.get("permissionDecision") == "deny" else None


def told_files(clone):
    d = clone.mail_root / "reservations"
    return sorted(n for n in os.listdir(d) if ".told-" in n) if d.exists() else []


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_the_first_edit_is_refused_with_the_tell_and_the_same_edit_then_goes_through(clone, client):
    made = reserve(clone.web, "src/db", "--note=moving the schema")
    assert made.returncode == 0, made.stderr
    [rid] = [n[:-5] for n in os.listdir(clone.mail_root / "reservations")]
    answer, proc = edit(clone, client, "src/db/schema.sql", "s-api")
    assert proc.returncode == 0, proc.stderr
    reason = refusal(client, answer)
    assert reason is not None, answer
    assert "src/db/schema.sql is reserved by session s-web in worktree ../web on branch web" in reason
    assert "moving the schema" in reason and "until " in reason
    assert f"git korus-mail send --to={clone.web} --session=s-web -- '<your message>'" in reason
    assert f"reservation {rid} is advisory" in reason
    assert "repeat the same edit and it will go through" in reason
    assert told_files(clone) == [f"{rid}.told-s-api"]
    told_log = [json.loads(x) for x in (clone.mail_root / "journal.jsonl").read_text().splitlines()]
    assert [(r["id"], r["session"]) for r in told_log if r["event"] == "told"] == [(rid, "s-api")]
    logged = run_cli("log", cwd=clone.main).stdout
    assert f"told       …{rid[-8:]} to session s-api: its first edit refused once" in logged, logged
    # told: the same edit, and any other of that reservation's paths, goes on with no word
    assert edit(clone, client, "src/db/schema.sql", "s-api")[0] is None
    assert edit(clone, client, "src/db/other.sql", "s-api")[0] is None
    # another session is told in its turn; the holder never is
    assert refusal(client, edit(clone, client, "src/db/schema.sql", "s-third")[0]) is not None
    assert edit(clone, client, "src/db/schema.sql", "s-web")[0] is None
    invariants.check(clone.mail_root)


def test_the_told_record_is_pinned_byte_for_byte_and_ends_with_its_reservation(clone):
    from git_korus_mail.core import reservations as core
    from git_korus_mail.store import reservations as store
    from git_korus_mail.store.files import MailRoot
    assert reserve(clone.web, "src").returncode == 0
    root = MailRoot.open(str(clone.mail_root.parent), create=False)
    [r] = core.active(root)
    assert core.record_told(root, [r.id], "s-api", now=1_700_000_000.25) == [r.id]
    assert core.record_told(root, [r.id], "s-api") == []  # create-only: made once
    path = clone.mail_root / "reservations" / f"{r.id}.told-s-api"
    assert path.read_bytes() == (b'{"at": "2023-11-14T22:13:20.250000Z", "id": "' + r.id.encode()
                                 + b'", "session": "s-api", "v": 1}\n')
    # a session id that is no plain name is named by a digest, never by itself
    odd = "../x y"
    assert store.told_key(odd).startswith("h") and len(store.told_key(odd)) == 41
    assert core.record_told(root, [r.id], odd) == [r.id]
    assert store.was_told(root, r.id, odd) and not store.was_told(root, r.id, "s-other")
    # dropped and made again: a new id, told again; the told records went with the old one
    assert reserve(clone.web, "--drop", "src").returncode == 0
    assert told_files(clone) == []
    assert reserve(clone.web, "src").returncode == 0
    answer, _ = edit(clone, "claude", "src/a.py", "s-api")
    assert refusal("claude", answer) is not None
    # a reservation gone before its told record is made: none is made (no orphan)
    [r2] = core.active(root)
    assert store.remove(root, [r2.id]) == [r2.id]
    assert core.record_told(root, [r2.id], "s-late") == []
    assert told_files(clone) == []
    invariants.check(clone.mail_root)


def test_a_block_reservation_refuses_every_time_and_a_person_is_never_refused(clone):
    from git_korus_mail.core import reservations as core
    from git_korus_mail.store.files import MailRoot
    assert reserve(clone.web, "migrations", "--block").returncode == 0
    for _ in range(2):
        reason = refusal("claude", edit(clone, "claude", "migrations/1.sql", "s-api")[0])
        assert reason is not None and "--force" in reason and "repeat the same edit" not in reason
    assert told_files(clone) == []
    # no session (nothing to record a telling against): the tell as context, never a refusal
    assert reserve(clone.web, "src").returncode == 0
    root = MailRoot.open(str(clone.mail_root.parent), create=False)
    said = core.before_edit(root, ["src/a.py"], str(clone.main), None)
    assert said is not None and said.refuse is False and said.told == () and "reserved by session s-web" in said.text


def test_two_reservations_each_told_once(clone):
    """An edit naming paths of two reservations: refused with the tell of the ones not yet told."""
    assert reserve(clone.web, "src").returncode == 0
    assert refusal("claude", edit(clone, "claude", "src/a.py", "s-api")[0]) is not None
    assert reserve(clone.web, "src/db", session="s-db").returncode == 0
    reason = refusal("claude", edit(clone, "claude", "src/db/x.sql", "s-api")[0])
    assert reason is not None and "session s-db" in reason and "session s-web" not in reason
    assert edit(clone, "claude", "src/db/x.sql", "s-api")[0] is None
    assert len(told_files(clone)) == 2


def test_two_parallel_hooks_of_one_session_are_both_refused_and_recorded_once(clone, tmp_path):
    """Claude Code runs a tool's hooks in parallel (reference claude-code-hooks.md §12): two hooks
    of one session that both decided before either recorded are both refused (harmless); the
    told record is made once, by whichever links first, and neither fails."""
    assert reserve(clone.web, "src").returncode == 0
    gate = tmp_path / "gate"
    event, tool, args = CLIENTS["claude"]
    procs = []
    for name in ("a.py", "b.py"):
        payload = {"session_id": "s-api", "transcript_path": "", "cwd": str(clone.main), "hook_event_name": event,
                   "tool_name": tool, "tool_input": args(f"src/{name}")}
        env = dict(os.environ, KORUS_MAIL_PAUSE_AT=f"told:answered:{gate}")
        env.pop("KORUS_MAIL_CRASH_AT", None)
        procs.append(subprocess.Popen([PYTHON, "-m", "git_korus_mail", "drain"], cwd=clone.main, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        procs[-1].stdin.write(json.dumps(payload).encode())
        procs[-1].stdin.close()
        procs[-1].stdin = None  # written whole: communicate() below only reads
        # this one has answered and waits before its record: the next decides with no record made
        _wait_for(gate.with_name("gate.reached"))
        gate.with_name("gate.reached").unlink()
    gate.write_text("")
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and err == b"", err  # the second finds the record made: no fault
        outs.append(json.loads(out))
    assert all(refusal("claude", a) is not None for a in outs)
    assert len(told_files(clone)) == 1
    assert edit(clone, "claude", "src/c.py", "s-api")[0] is None
    invariants.check(clone.mail_root)


def _wait_for(path, limit=60.0):
    import time
    end = time.time() + limit
    while not path.exists():
        assert time.time() < end, f"{path} never appeared"
        time.sleep(0.01)


# -- killed between the answer and the told record (crash.STEPS told:*; tests/test_crash.py runs it) --
def scenario_told(clone, step):
    """A hook killed after its refusal was written, before the told record: the model read the
    tell, nothing is recorded, and the next edit is refused once more (harmless), then recorded.
    The answer is out before the kill: the order never records a session that was not told."""
    assert reserve(clone.web, "src").returncode == 0
    answer, proc = edit(clone, "claude", "src/a.py", "s-api", env={"KORUS_MAIL_CRASH_AT": step})
    assert proc.returncode == -9, (step, proc.returncode, proc.stderr)
    assert refusal("claude", answer) is not None  # told before the kill
    assert told_files(clone) == []
    invariants.check(clone.mail_root)
    answer, proc = edit(clone, "claude", "src/a.py", "s-api")
    assert proc.returncode == 0 and refusal("claude", answer) is not None  # refused once more
    assert len(told_files(clone)) == 1
    assert edit(clone, "claude", "src/a.py", "s-api")[0] is None
    invariants.check(clone.mail_root)


def test_killed_between_the_answer_and_the_told_record(clone):
    scenario_told(clone, "told:answered")



def doctor_reserve(clone):
    proc = run_cli("doctor", "--json", cwd=clone.main)
    data = json.loads(proc.stdout)
    return [f for f in data["findings"] if f["check"] == "reserve"]


def test_doctor_reports_reservations_lapsed_ones_a_stale_signal_and_foreign_files_and_changes_nothing(clone):
    from git_korus_mail.core import reservations as core
    from git_korus_mail.store.files import MailRoot
    root = MailRoot.open(str(clone.mail_root.parent), create=True)
    [none] = doctor_reserve(clone)
    assert none["ok"] and "no reservations" in none["detail"]
    assert reserve(clone.web, "src", "--block").returncode == 0
    assert refusal("claude", edit(clone, "claude", "src/a.py", "s-api")[0]) is not None  # --block: not recorded
    assert reserve(clone.web, "docs").returncode == 0
    assert refusal("claude", edit(clone, "claude", "docs/a.md", "s-api")[0]) is not None  # told once
    old, _ = core.reserve(root, ["old"], core.Holder(None, "session:1", None), "k", str(clone.main), "main",
                          ttl_minutes=1, now=1_700_000_000.0)
    held, lapsed = doctor_reserve(clone)
    assert held["ok"] and held["detail"].startswith("2 reservation(s) hold (2 by sessions, 0 by the person, "
                                                    "1 blocking edits); 1 session(s) told of them")
    assert lapsed["ok"] and "1 lapsed reservation(s)" in lapsed["detail"] and f"{old.id} (past its TTL)" in lapsed["detail"]
    assert (clone.mail_root / "reservations" / f"{old.id}.json").exists()  # a report: nothing swept
    # a file named like a record that is none of ours keeps the signal up: a problem
    junk = clone.mail_root / "reservations" / "20260101T000000Z-deadbeef.json"
    junk.write_text("not json\n")
    assert any(not f["ok"] and "no record of ours" in f["detail"] for f in doctor_reserve(clone))
    junk.unlink()
    # every reservation gone, the signal left behind (as a crash leaves it): a problem, named
    assert run_cli("reserve", "--drop", "src", "docs", "--force", cwd=clone.main).returncode == 0  # sweeps old too
    (clone.mail_root / "RESERVED").write_text("")
    [stale] = doctor_reserve(clone)
    assert not stale["ok"] and "RESERVED signal stands with no reservation" in stale["detail"]
    assert "never rm it by hand" in stale["fix"].lower()
    assert (clone.mail_root / "RESERVED").exists()
    assert edit(clone, "claude", "src/a.py", "s-api")[0] is None  # the next edit's hook clears it
    [none] = doctor_reserve(clone)
    assert none["ok"] and "no reservations" in none["detail"]
