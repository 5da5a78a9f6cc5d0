"""File reservations (issue 29): the store's records and signal (docs/STORE.md, "Reservations"),
the pathspec matcher against git's own answers, lapsing, and the tell a model reads."""

import json
import os
import subprocess

import pytest

import invariants
from helpers import git

from git_korus_mail.core import reservations as core
from git_korus_mail.store import reservations as store
from git_korus_mail.store.files import MailRoot

T0 = 1_796_000_000.0  # 2026-11-30T00:53:20Z: a fixed clock


def open_root(clone):
    return MailRoot.open(str(clone.common_dir), create=True)


def holder(session="s-api", launch=None, client="claude"):
    return core.Holder(session, launch, client)


def test_a_record_is_pinned_byte_for_byte(clone):
    root = open_root(clone)
    r, over = core.reserve(root, ["src/db", "./docs/*.md"], holder(), "k" * 16, "/w/api", "main",
                           ttl_minutes=90, note="schema change", block=True, now=T0)
    assert over == []
    path = clone.mail_root / "reservations" / f"{r.id}.json"
    assert path.read_bytes() == (
        b'{"block": true, "box": "kkkkkkkkkkkkkkkk", "branch": "main", "holder": {"client": "claude", '
        b'"launch": null, "session": "s-api"}, "id": "' + r.id.encode() + b'", "note": "schema change", '
        b'"paths": ["src/db", "docs/*.md"], "since": "2026-11-30T00:53:20.000000Z", '
        b'"until": "2026-11-30T02:23:20.000000Z", "v": 1, "worktree": "/w/api"}\n')
    assert r.id.startswith("20261130T005320Z-") and len(r.id) == 25
    assert (clone.mail_root / "RESERVED").exists()
    # the record reads back as the same value
    assert core.all_stored(root) == [r]


def test_the_signal_stands_while_a_record_does_and_goes_with_the_last(clone):
    root = open_root(clone)
    assert not (clone.mail_root / "RESERVED").exists()
    a, _ = core.reserve(root, ["a"], holder("s1"), "k", "/w", None, now=T0)
    b, _ = core.reserve(root, ["b"], holder("s2"), "k", "/w", None, now=T0)
    ended, unmatched, refused = core.drop(root, ["a"], "s1", now=T0)
    assert [r.id for r in ended] == [a.id] and unmatched == [] and refused == []
    assert (clone.mail_root / "RESERVED").exists()
    ended, _, refused = core.drop(root, ["b"], "s1", now=T0)
    assert ended == [] and [r.id for r in refused] == [b.id]  # another's: not without --force
    ended, _, _ = core.drop(root, [b.id], "s1", force=True, now=T0)
    assert [r.id for r in ended] == [b.id]
    assert not (clone.mail_root / "RESERVED").exists()
    assert os.listdir(clone.mail_root / "reservations") == []


def test_a_crash_leaves_a_signal_without_records_never_a_record_without_the_signal(clone, monkeypatch):
    root = open_root(clone)

    def crash(*a, **k):
        raise KeyboardInterrupt("killed between the signal and the record")
    monkeypatch.setattr(type(root.dir), "create_staged", crash)
    with pytest.raises(KeyboardInterrupt):
        core.reserve(root, ["a"], holder(), "k", "/w", None, now=T0)
    monkeypatch.undo()
    assert store.counts(root) == (True, 0)  # the signal alone: costs a Python start, hides nothing
    assert core.active(root, T0) == []
    # the next look that finds nothing clears the stale signal
    core.sweep(root, T0)
    assert not (clone.mail_root / "RESERVED").exists()


def test_lapsed_at_ttl_and_when_the_holders_client_is_gone(clone):
    root = open_root(clone)
    dead = subprocess.Popen(["true"])
    dead.wait()
    r1, _ = core.reserve(root, ["a"], holder("s1"), "k", "/w", None, ttl_minutes=1, now=T0)
    r2, _ = core.reserve(root, ["b"], holder("s2", launch=f"claude:{dead.pid}-1-x"), "k", "/w", None, now=T0)
    r3, _ = core.reserve(root, ["c"], holder(None, launch=f"session:{dead.pid}-1-x", client=None), "k",
                         "/w", None, now=T0)
    assert r1.lapsed(T0 + 59) is None and r1.lapsed(T0 + 60) == "ttl"
    assert r2.lapsed(T0) == "gone"
    assert r3.lapsed(T0) is None  # the person's reservation ends at its TTL only
    assert {r.id for r in core.active(root, T0)} == {r1.id, r3.id}
    kept = core.sweep(root, T0 + 61)
    assert [r.id for r in kept] == [r3.id]
    lines = [x for x in root.read_journal() if x.get("event") == "lapsed"]
    assert {(x["id"], x["why"]) for x in lines} == {(r1.id, "ttl"), (r2.id, "gone")}


def test_conflicts_name_others_reservations_only(clone):
    root = open_root(clone)
    mine, _ = core.reserve(root, ["src"], holder("me"), "k", "/w", None, now=T0)
    theirs, over = core.reserve(root, ["src/db/**", ":!src/db/gen"], holder("them"), "k", "/w", None, now=T0)
    assert [r.id for r in over] == [mine.id]  # the second is told of the first
    found = core.conflicts(root, ["src/db/x.py", "src/db/gen/y.py", "README"], mine="me", now=T0)
    assert [(r.id, paths) for r, paths in found] == [(theirs.id, ["src/db/x.py"])]
    assert [r.id for r, _ in core.conflicts(root, ["src/a.py"], mine="them", now=T0)] == [mine.id]


PATHS = ["README", "readme.md", "src/a.py", "src/db/x.py", "src/db/gen/y.py", "docs/a.md",
         "docs/sub/b.md", "a*b", "weird[1].txt", "srcx/z.py"]
SPECS = ["src", "src/", "src/db", "*.py", "src/*.py", "docs/*.md", ":(glob)docs/*.md", ":(glob)**/*.md",
         ":(glob)src/**", ":(glob)src/**/x.py", ":(icase)README*", ":(literal)a*b", "a?b", "weird\\[1].txt",
         "s[r]c/*", ":/docs", ".", ":(glob)*", "[!s]*"]


@pytest.mark.parametrize("spec", SPECS)
def test_the_matcher_agrees_with_git(clone, spec):
    for p in PATHS:
        full = clone.main / p
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text("x\n")
    git("add", "-A", cwd=clone.main)
    out = subprocess.run(["git", "ls-files", "-z", "--", spec], cwd=clone.main, capture_output=True, check=True)
    want = sorted(p for p in out.stdout.decode().split("\0") if p)
    got = sorted(p for p in PATHS if core.pathspecs_match([spec], p))
    assert got == want


def test_bad_pathspecs_get_one_clear_line():
    for spec, words in ((":(attr:x)a", "not supported"), ("/etc/passwd", "not absolute"),
                        ("../other", "outside the repository"), (":!gen", "reserves nothing"),
                        ("x" * 600, "over 512")):
        with pytest.raises(core.BadPathspec) as e:
            core.check_pathspecs([spec])
        assert words in str(e.value) or words.replace("not ", "") in str(e.value)


def test_the_tell_names_who_why_until_and_how_to_reach_them(clone):
    root = open_root(clone)
    r, _ = core.reserve(root, ["src/db"], holder("s-web"), "k", str(clone.web), "web", note="\x1b]2;x\x07 migrating",
                        now=T0)
    text = core.tell(core.conflicts(root, ["src/db/x.py"], mine="s-api", now=T0), str(clone.main), now=T0)
    assert "src/db/x.py is reserved by session s-web in worktree ../web on branch web" in text
    assert "until 2026-11-30T04:53:20Z" in text
    assert "\\u001b]2;x\\u0007 migrating" in text and "\x1b" not in text
    assert f"git korus-mail send --to={clone.web} --session=s-web -- '<your message>'" in text
    assert f"git korus-mail ask --to={clone.web} -- '<your question>'" in text


def test_before_edit_takes_the_tools_paths_in_any_worktree_of_the_clone(clone, tmp_path):
    root = open_root(clone)
    r, _ = core.reserve(root, ["src/db"], holder("s-web"), "k", str(clone.web), "web", now=T0)
    blocker, _ = core.reserve(root, ["secret.txt"], holder("s-web"), "k", str(clone.web), "web", block=True, now=T0)
    main = str(clone.main)
    # an absolute path in another worktree, a relative one in this one, a file not yet written
    assert core.repo_relative(str(clone.web / "src/db/x.py"), main, root.common_dir) == "src/db/x.py"
    assert core.repo_relative("src/db/new/y.py", main, root.common_dir) == "src/db/new/y.py"
    assert core.repo_relative(str(tmp_path / "elsewhere.py"), main, root.common_dir) is None
    told = core.before_edit(root, [str(clone.main / "src/db/x.py")], main, "s-api", now=T0)
    assert told is not None and told.refuse is True and told.told == (r.id,) and r.id in told.text  # told once
    assert core.before_edit(root, ["src/db/x.py"], main, "s-web", now=T0) is None  # its own
    assert core.before_edit(root, ["README"], main, "s-api", now=T0) is None
    told = core.before_edit(root, ["secret.txt"], main, "s-api", now=T0)
    assert told is not None and told[1] is True
    assert f"git korus-mail reserve --drop {blocker.id} --force" in told[0]


CHURN = """
import sys, time
from git_korus_mail.core import reservations as core
from git_korus_mail.store.files import MailRoot
root = MailRoot.open(sys.argv[1], create=True)
me = sys.argv[2]
end = time.time() + float(sys.argv[3])
n = 0
while time.time() < end:
    core.reserve(root, [f"{me}/{n}"], core.Holder(me, None, None), "k", "/w", None)
    core.drop(root, [f"{me}/{n}"], me)
    n += 1
print(n)
"""


def test_the_signal_never_hides_a_record_while_processes_reserve_and_drop(clone):
    """Four processes reserve and drop in a loop, each leaving the clone empty in turn, so the
    signal is made and removed again and again. A watcher looks at a record, then at the signal,
    then at the record again: a record present before and after a look that found no signal
    stood through that look (ids are never reused), which the stub would have skipped."""
    import sys
    common = str(clone.common_dir)
    open_root(clone)
    (clone.mail_root / "reservations").mkdir(mode=0o700, exist_ok=True)
    procs = [subprocess.Popen([sys.executable, "-c", CHURN, common, f"s{i}", "4"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    d, signal = clone.mail_root / "reservations", clone.mail_root / "RESERVED"
    looks = hidden = 0
    while any(p.poll() is None for p in procs):
        for name in os.listdir(d):
            if not name.endswith(".json"):
                continue
            if not signal.exists() and (d / name).exists():
                hidden += 1
            looks += 1
    said = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-500:] for _out, err in said]
    rounds = [int(out) for out, _err in said]
    assert hidden == 0
    assert looks > 100 and min(rounds) > 0 and sum(rounds) > 40, (looks, rounds)  # the race was really run
    assert os.listdir(d) == [] and not signal.exists()
    invariants.check(clone.mail_root)


def test_stored_times_read_by_slices_equal_the_strict_reader():
    from git_korus_mail.stamps import parse_stamp, utc_stamp
    for t in (0.0, 1_796_000_000.123456, 1_796_000_000.999999, 4_102_444_800.5):
        assert core._when(utc_stamp(t)) == parse_stamp(utc_stamp(t))
    for bad in ("2026-11-30T00:53:20.00000aZ", "\uff12026-11-30T00:53:20.000000Z", "2026-11-30", 5, None):
        with pytest.raises(ValueError):
            core._when(bad)


# -- killed between two steps (crash.STEPS reserve:* and release:*; tests/test_crash.py runs these) --
def _edit_hook(clone, path):
    """A PreToolUse for an Edit of `path`, through the real drain; its parsed answer or None."""
    from helpers import hook
    answer, _proc = hook("PreToolUse", clone.main, "s-edit", extra={"tool_name": "Edit",
                                                                  "tool_input": {"file_path": str(path)}})
    return answer


def scenario_reserve(clone, step):
    """`reserve` killed after the signal, before its record: the signal alone is left (it hides
    nothing), the next edit's hook removes it, and a reserve after that works."""
    from helpers import run_cli
    proc = run_cli("reserve", "src", cwd=clone.web, env={"KORUS_MAIL_CRASH_AT": step})
    assert proc.returncode == -9, (step, proc.returncode, proc.stderr)
    assert (clone.mail_root / "RESERVED").exists() and os.listdir(clone.mail_root / "reservations") == []
    invariants.check(clone.mail_root)
    assert _edit_hook(clone, clone.main / "src" / "a.py") is None
    assert not (clone.mail_root / "RESERVED").exists()
    assert run_cli("reserve", "src", cwd=clone.web).returncode == 0
    invariants.check(clone.mail_root)


def scenario_release(clone, step):
    """`reserve --drop` killed after its record's unlink (or after it saw none left), before the
    signal's: the reservation is ended, the signal stale, the next edit's hook clears it."""
    from helpers import run_cli
    assert run_cli("reserve", "src", cwd=clone.web, env={"CLAUDE_PID": ""}).returncode == 0
    proc = run_cli("reserve", "--drop", "src", cwd=clone.web, env={"CLAUDE_PID": "", "KORUS_MAIL_CRASH_AT": step})
    assert proc.returncode == -9, (step, proc.returncode, proc.stderr)
    assert os.listdir(clone.mail_root / "reservations") == [] and (clone.mail_root / "RESERVED").exists()
    invariants.check(clone.mail_root)
    assert _edit_hook(clone, clone.main / "src" / "a.py") is None
    assert not (clone.mail_root / "RESERVED").exists()


def test_a_reserve_waits_while_a_drop_that_saw_no_record_left_removes_the_signal(clone, tmp_path):
    """The gap the lock closes, made deterministic: a drop pauses after it saw no record left
    (crash point release:looked) while holding the lock; a reserve started then waits for it,
    so its record is linked after the drop removed the signal, and its own signal stands. Seen red
    with the lock taken out: the reserve lands in the gap and the drop removes its signal."""
    import time
    from helpers import PYTHON
    assert subprocess.run([PYTHON, "-m", "git_korus_mail", "reserve", "old"], cwd=clone.web,
                          env=dict(os.environ, CLAUDE_PID="")).returncode == 0
    gate = tmp_path / "go"
    dropper = subprocess.Popen([PYTHON, "-m", "git_korus_mail", "reserve", "--drop", "old"], cwd=clone.web,
                               env=dict(os.environ, CLAUDE_PID="", KORUS_MAIL_PAUSE_AT=f"release:looked:{gate}"))
    deadline = time.time() + 30
    while not (tmp_path / "go.reached").exists():
        assert dropper.poll() is None and time.time() < deadline
        time.sleep(0.02)
    reserver = subprocess.Popen([PYTHON, "-m", "git_korus_mail", "reserve", "new"], cwd=clone.main,
                                env=dict(os.environ, CLAUDE_PID=""), stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    waited = reserver.poll() is None  # it waits on the lock the paused drop holds
    gate.touch()
    assert dropper.wait(30) == 0 and reserver.wait(30) == 0
    d = clone.mail_root / "reservations"
    assert [json.loads((d / n).read_text())["paths"] for n in os.listdir(d)] == [["new"]]
    invariants.check(clone.mail_root)  # I8: the record has its signal
    assert waited, "the reserve did not wait for the drop's lock"
