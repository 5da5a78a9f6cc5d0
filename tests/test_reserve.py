"""`reserve` as a session and a person run it, and the PreToolUse answer through the real hook
stub (issue 29): every command is the real one in a process of its own; the stub is run by sh
as Claude Code runs it, around a helper that logs each start (tests/stubworld.py)."""

import json
import os
import subprocess

import hermetic
from helpers import run_cli
from stubworld import Stub

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"


def reserve(cwd, *args, session=None, person=False):
    env = {SESSION_ENV: session} if session else {}
    if person:
        env = {"CLAUDE_PID": ""}  # no client process names itself: a terminal
    return run_cli("reserve", *args, cwd=cwd, env=env)


def records(clone):
    d = clone.mail_root / "reservations"
    return [json.loads((d / n).read_text()) for n in sorted(os.listdir(d))] if d.exists() else []


def journal(clone, event):
    path = clone.mail_root / "journal.jsonl"
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["event"] == event]


def test_a_session_reserves_for_itself_and_the_second_is_told_of_the_overlap(clone):
    first = reserve(clone.web, "src/db", "--note=moving the schema", session="s-web")
    assert first.returncode == 0, first.stderr
    assert "reserved src/db for session s-web until " in first.stdout
    [rec] = records(clone)
    assert rec["holder"]["session"] == "s-web" and rec["holder"]["client"] == "claude"
    assert rec["holder"]["launch"].startswith(f"claude:{os.getpid()}-")
    assert rec["worktree"] == str(clone.web) and rec["branch"] == "web"
    second = reserve(clone.main, "src", session="s-api")
    assert second.returncode == 0, second.stderr  # advisory: made anyway
    assert "this overlaps session s-web's reservation of src/db in ../web" in second.stdout
    assert "moving the schema" in second.stdout and "reserved anyway" in second.stdout
    assert f"git korus-mail send --to={clone.web} --session=s-web -- '<your message>'" in second.stdout
    assert len(records(clone)) == 2
    assert [r["paths"] for r in journal(clone, "reserved")] == [["src/db"], ["src"]]


def test_from_a_terminal_the_person_holds_it_and_lists_and_drops_it(clone):
    made = reserve(clone.main, "docs/*.md", "--ttl=30", person=True)
    assert made.returncode == 0, made.stderr
    assert "for you (the person)" in made.stdout
    [rec] = records(clone)
    assert rec["holder"]["session"] is None and rec["holder"]["launch"].startswith("session:")
    listed = run_cli("reserve", "--list", cwd=clone.web)
    assert "the person in ../api (main)" in listed.stdout and "docs/*.md" in listed.stdout
    assert "(29 min left)" in listed.stdout or "(30 min left)" in listed.stdout
    # a session cannot end the person's reservation without --force
    refused = reserve(clone.web, "--drop", "docs/*.md", session="s-web")
    assert refused.returncode == 1 and "not yours" in refused.stdout and len(records(clone)) == 1
    dropped = reserve(clone.main, "--drop", "docs/*.md", person=True)
    assert dropped.returncode == 0 and "released docs/*.md" in dropped.stdout
    assert records(clone) == [] and not (clone.mail_root / "RESERVED").exists()
    assert [r["id"] for r in journal(clone, "released")] == [rec["id"]]


def test_bad_input_gets_one_clear_line_and_a_non_zero_exit(clone):
    for args, code, words in ((["../elsewhere"], 1, "outside the repository"),
                              (["/etc/passwd"], 1, "relative to the repository root"),
                              ([":(attr:x)src"], 1, "not supported"),
                              (["--drop", "never-reserved"], 1, "no reservation of this clone"),
                              (["--note=" + "x" * 600, "src"], 1, "over 500"),
                              (["--ttl=0", "src"], 129, "1 to 10080 minutes"),
                              (["--ttl=soon", "src"], 129, "not a number")):
        proc = reserve(clone.main, *args, session="s-api")
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        assert proc.stderr.splitlines()[0].startswith("git korus-mail: ") and words in proc.stderr.splitlines()[0]
    assert records(clone) == []


def pre_edit(stub, tool, path, session):
    """(parsed answer or None, whether Python started) for a PreToolUse of `tool` on `path`."""
    payload = hermetic.payload("PreToolUse", session, stub.cwd)
    payload.update({"tool_name": tool, "tool_input": {"file_path": path, "old_string": "a", "new_string": "b"},
                    "tool_use_id": "toolu_1"})
    before = stub.starts()
    proc = subprocess.run(["sh", str(stub.path), "PreToolUse"], input=json.dumps(payload), capture_output=True,
                          text=True, cwd=stub.cwd, env=dict(os.environ, **{SESSION_ENV: session}))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    return (json.loads(out) if out else None), stub.starts() > before


def test_pre_tool_use_costs_no_python_with_nothing_reserved_and_tells_with_something(clone):
    stub = Stub(clone, clone.main, session="s-api")
    target = str(clone.main / "src" / "db" / "schema.sql")
    assert pre_edit(stub, "Edit", target, "s-api") == (None, False)  # one shell test, no Python
    assert reserve(clone.web, "src/db", "--note=moving it", session="s-web").returncode == 0
    answer, started = pre_edit(stub, "Edit", target, "s-api")
    assert started
    out = answer["hookSpecificOutput"]
    # the first edit is refused, its reason the tell (told once: tests/test_reserve_told.py)
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    reason = out["permissionDecisionReason"]
    assert "src/db/schema.sql is reserved by session s-web in worktree ../web on branch web" in reason
    assert "moving it" in reason
    assert f"git korus-mail ask --to={clone.web} -- '<your question>'" in reason
    assert pre_edit(stub, "Edit", target, "s-api") == (None, True)  # told: the retry goes on, Python ran
    # the holder itself, and a path nobody reserved: nothing said
    assert pre_edit(stub, "Write", target, "s-web")[0] is None
    assert pre_edit(stub, "Write", str(clone.main / "README"), "s-api")[0] is None
    # the last reservation gone, the signal goes with it: no Python again
    assert reserve(clone.web, "--drop", "src/db", session="s-web").returncode == 0
    assert pre_edit(stub, "Edit", target, "s-api") == (None, False)


def test_a_block_reservation_refuses_the_edit_with_the_way_round_it(clone):
    stub = Stub(clone, clone.main, session="s-api")
    assert reserve(clone.web, "migrations/", "--block", "--note=do not touch", session="s-web").returncode == 0
    [rec] = records(clone)
    answer, _ = pre_edit(stub, "MultiEdit", str(clone.main / "migrations" / "0001.sql"), "s-api")
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    reason = out["permissionDecisionReason"]
    assert "reserved by session s-web" in reason and "do not touch" in reason
    assert f"git korus-mail reserve --drop {rec['id']} --force" in reason
    assert answer["systemMessage"].startswith("refused an edit: ")
    # the person lifts it as the reason says; the edit then goes through in silence
    assert run_cli("reserve", "--drop", rec["id"], "--force", cwd=clone.main).returncode == 0
    assert pre_edit(stub, "MultiEdit", str(clone.main / "migrations" / "0001.sql"), "s-api") == (None, False)


def test_a_lapsed_reservation_tells_nothing_and_is_swept(clone):
    stub = Stub(clone, clone.main, session="s-api")
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()
    # a session whose Claude Code process has ended: its reservation no longer holds
    made = reserve(clone.web, "src", session="s-web")
    assert made.returncode == 0
    path = clone.mail_root / "reservations" / os.listdir(clone.mail_root / "reservations")[0]
    rec = json.loads(path.read_text())
    rec["holder"]["launch"] = f"claude:{dead.pid}-1-x"
    path.write_text(json.dumps(rec, sort_keys=True) + "\n")
    assert "no reservations" in run_cli("reserve", "--list", cwd=clone.main).stdout  # a report: it only reads
    assert records(clone) != []
    # the next edit's hook tells nothing and sweeps it (journaled), the signal with it: the edit
    # after that costs no Python again
    assert pre_edit(stub, "Edit", str(clone.main / "src" / "a.py"), "s-api") == (None, True)
    assert [r["why"] for r in journal(clone, "lapsed")] == ["gone"]
    assert records(clone) == [] and not (clone.mail_root / "RESERVED").exists()
    assert pre_edit(stub, "Edit", str(clone.main / "src" / "a.py"), "s-api") == (None, False)


def test_who_status_and_log_show_reservations(clone):
    assert reserve(clone.web, "src/db", "--block", "--note=moving the schema", session="s-web").returncode == 0
    assert reserve(clone.main, "docs", "--ttl=1", person=True).returncode == 0
    who = run_cli("who", cwd=clone.main)
    assert "reservations: 2" in who.stdout
    assert "session s-web in ../web (web)  blocks edits" in who.stdout and "note: moving the schema" in who.stdout
    assert "the person in . (main)" in who.stdout
    paths = {tuple(r["paths"]) for r in json.loads(run_cli("who", "--json", cwd=clone.main).stdout)["reservations"]}
    assert paths == {("src/db",), ("docs",)}
    status = run_cli("status", cwd=clone.web)
    assert "reservations of the clone: 2" in status.stdout and "session s-web in . (web)" in status.stdout
    assert len(json.loads(run_cli("status", "--json", cwd=clone.web).stdout)["reservations"]) == 2
    assert reserve(clone.web, "--drop", "src/db", session="s-web").returncode == 0
    # the person's lapses at its TTL: a minute from now, as the store's sweep sees it
    from git_korus_mail.core import reservations
    from git_korus_mail.store.files import MailRoot
    import time
    reservations.sweep(MailRoot.open(str(clone.common_dir)), time.time() + 61)
    log = run_cli("log", cwd=clone.main).stdout.splitlines()
    said = [ln.split(None, 3)[2:] for ln in log]
    assert [w[0] for w in said] == ["reserved", "reserved", "released", "lapsed"]
    assert " src/db by session s-web in ../web for 4h00m, blocking: " in said[0][1]  # the note cut at 100
    assert said[1][1].endswith(" docs by the person in . for 1m")
    assert said[2][1].endswith(" src/db of session s-web") and said[3][1].endswith(" docs of the person: its TTL passed")
    assert all(len(ln) <= 100 for ln in log)


def test_pre_tool_use_with_reservations_imports_nothing_heavy(clone):
    """A bounded match: no pygit2, docopt, json or re on the edit's hook path (python -X importtime)."""
    import sys
    assert reserve(clone.web, "src", session="s-web").returncode == 0
    payload = hermetic.payload("PreToolUse", "s-api", clone.main)
    payload.update({"tool_name": "Edit", "tool_input": {"file_path": str(clone.main / "src" / "a.py")}})
    # -c, not -m: runpy itself loads typing and re on 3.9 (importlib.util); the stub does not
    start = "import sys; from git_korus_mail.cli import main; raise SystemExit(main())"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", start, "drain"],
                          input=json.dumps(payload), capture_output=True, text=True, cwd=clone.main)
    assert proc.returncode == 0 and "reserved by session s-web" in proc.stdout
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    heavy = {"pygit2", "docopt", "portalocker", "json", "re", "fnmatch", "subprocess", "hashlib", "typing"}
    assert not imported & heavy, imported & heavy
    assert "git_korus_mail.core.drain" not in imported  # no mail drain at an edit


def test_install_wires_pre_tool_use_for_the_editing_tools_and_doctor_knows_it():
    from git_korus_mail.clients.claude import settings
    stub = "/r/.git/mail/hooks/claude-hook"
    merged = settings.merge_settings({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": []}]}}, stub)
    ours = merged["hooks"]["PreToolUse"][1]
    assert ours == {"matcher": "Edit|Write|MultiEdit|NotebookEdit",
                    "hooks": [{"type": "command", "command": f"'{stub}' PreToolUse", "timeout": 30}]}
    assert settings.check_settings(merged, stub) == []
    removed, n = settings.remove_settings(merged, stub)
    assert removed == {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": []}]}} and n == 7
    older = settings.merge_settings({}, stub)
    del older["hooks"]["PreToolUse"]  # an install from before reservations
    assert settings.check_settings(older, stub) == ["PreToolUse: no entry"]


def test_from_a_subdirectory_the_pathspecs_still_start_at_the_root_and_that_is_said(clone):
    sub = clone.web / "src"
    sub.mkdir()
    made = reserve(sub, "db", session="s-web")
    assert made.returncode == 0
    assert "note: pathspecs start at the repository root, not at src/ (here): src/<path> names a path here" \
        in made.stdout
    assert [r["paths"] for r in records(clone)] == [["db"]]
    outside = reserve(clone.common_dir, "db", session="s-web")
    assert outside.returncode == 1 and "not in a worktree of this clone" in outside.stderr
