"""Is the owner alive? One liveness rule for every record that names a process (docs/STORE.md,
"Liveness"): claims, an ask's wait, a watcher and its launch, the launch an ask answers.

Real processes throughout: a real zombie (a parent that never reaps its child), a real separate
pid namespace (`unshare --pid --fork --mount-proc`, as Codex's sandbox runs the model's commands)
killed with SIGKILL, and a stand-in for the client's process that is SIGKILLed mid-ask.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from asking import S_MAIN, answers_of, queued, reply, settle_and_check, start_ask, wait_question
from helpers import PYTHON, context_of, hook, proc_start_ticks, run_cli

import invariants

# A parent that never reaps: it forks (and, with argv, execs) a child, prints the child's pid
# and sleeps. Once the child exits it stays a zombie until this parent is killed.
NON_REAPING_PARENT = r"""
import os, sys, time
pid = os.fork()
if pid == 0:
    if len(sys.argv) > 1:
        os.execvpe(sys.argv[1], sys.argv[1:], os.environ)
    os._exit(0)
print(pid, flush=True)
time.sleep(600)
"""


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def wait_for(pred, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def zombies():
    """zombie(*argv, env=None, cwd=None) -> (pid of a zombie child, its start ticks): the child
    runs argv (or exits at once) and is never reaped while the test runs."""
    parents = []

    def make(*argv, env=None, cwd=None):
        parent = subprocess.Popen([PYTHON, "-c", NON_REAPING_PARENT, *argv], stdout=subprocess.PIPE, text=True,
                                  env=env, cwd=cwd)
        parents.append(parent)
        pid = int(parent.stdout.readline())
        start = proc_start_ticks(pid)
        wait_for(lambda: _state(pid) == "Z", what=f"pid {pid} to be a zombie")
        return pid, start
    yield make
    for p in parents:
        p.kill()
        p.wait()


def owner_of(pid, start):
    from git_korus_mail.store import claims
    owner = claims.me("consume", "s-z")
    owner.update(pid=pid, start=start)
    return owner


# -- a zombie is dead (issue 22, item 10) -----------------------------------------------------
def test_the_one_rule_judges_a_zombie_dead_everywhere(zombies):
    from git_korus_mail.store import claims, launch
    pid, start = zombies()
    assert os.kill(pid, 0) is None  # kill(pid, 0) still succeeds on a zombie: it is no proof
    verdict, known = claims.judge(owner_of(pid, start))
    assert verdict == "dead" and "zombie" in known, (verdict, known)
    assert claims.process_runs(pid, start)[0] is False
    assert claims.breaker_may_be_alive(f"x.claim.broken-{pid}-0a1b2c3d") is False
    boot = launch.boot_id()
    assert launch.ended(f"{pid}-{start}-{boot[:8]}") is True
    # and a live process stays alive by the same rule
    me = os.getpid()
    assert claims.judge(owner_of(me, proc_start_ticks(me)))[0] == "alive"
    assert launch.ended(f"{me}-{proc_start_ticks(me)}-{boot[:8]}") is False


def test_a_zombie_launch_ends_its_watcher(clone, tmp_path):
    """The launch (a stand-in for Claude Code) is SIGKILLed and its parent does not reap it: the
    watcher must end with it, not wait out its reach."""
    from install_fixtures import install
    from test_wake import armed, claim_path, fake_claude, start_watcher
    install(clone.main, "--urgent")
    cc, sid = fake_claude(tmp_path), "s-zombie"
    try:
        w = start_watcher(clone, clone.web, cc, sid, reach=60)
        wait_for(armed(clone, clone.web, sid, cc), what="the watcher's claim")
        claim = claim_path(clone, clone.web, sid, cc)
        os.kill(cc.pid, signal.SIGKILL)  # and not reaped: pytest is its parent, and waits below only
        wait_for(lambda: _state(cc.pid) == "Z", what="the launch to be a zombie")
        try:
            rc = w.wait(timeout=15)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()
            raise AssertionError("the watcher of a zombie launch kept running") from None
        assert rc == 0 and list(claim.parent.iterdir()) == []
    finally:
        cc.kill()
        cc.wait()
    invariants.check(clone.mail_root)


def test_a_claim_held_by_a_zombie_is_broken(clone, zombies):
    """`cancel`, killed while it holds the claim, is a zombie: the next mover breaks its claim."""
    mid = run_cli("send", "--to", "../web", "to withdraw", cwd=clone.main, check=True).stdout.split()[1]
    env = dict(os.environ, KORUS_MAIL_CRASH_AT="cancel:claimed")
    pid, _ = zombies(PYTHON, "-m", "git_korus_mail", "cancel", mid, env=env, cwd=str(clone.main))
    claim = [p for p in clone.mail_root.glob("box/*/claiming/*.claim")]
    assert [p.name for p in claim] == [f"{mid}.claim"] and json.loads(claim[0].read_text())["pid"] == pid
    again = run_cli("cancel", mid, cwd=clone.main)
    assert again.returncode == 0, again.stderr
    assert queued(clone, clone.web) == [] and list(clone.mail_root.glob(f"box/*/cancelled/{mid}.json"))
    settle_and_check(clone)


# -- another pid namespace (issue 21, item 3) -------------------------------------------------
def _unshare_works():
    try:
        return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True,
                              timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_pidns = pytest.mark.skipif(not _unshare_works(), reason="needs unshare --pid (root, or user namespaces)")


def in_pidns(argv, cwd, env=None):
    """argv in a new pid namespace with its own /proc, as Codex's sandbox runs a command. Not
    its init: the namespace's pid 1 is a shell, so the command can be SIGKILLed (even by itself)."""
    full = dict(os.environ, **(env or {}))
    script = " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv) + "; exit $?"
    return subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script], cwd=str(cwd),
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_namespace(unshare):
    """SIGKILL the namespace's init: the kernel then kills every process in it."""
    with open(f"/proc/{unshare.pid}/task/{unshare.pid}/children") as f:
        init = int(f.read().split()[0])
    os.kill(init, signal.SIGKILL)
    unshare.communicate(timeout=30)


def waits(clone):
    d = clone.mail_root / "waits"
    return [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))] if d.exists() else []


def ask_back(clone):
    """web asks main, and gives up after 1 s: refused (1) while main's wait counts, else 2."""
    return run_cli("ask", f"--to={clone.main}", "--timeout=1", "--", "are you free?", cwd=clone.web)


@needs_pidns
def test_an_ask_killed_in_another_pid_namespace_no_longer_refuses_asks(clone):
    my_ns = os.readlink("/proc/self/ns/pid")
    ask = in_pidns([PYTHON, "-m", "git_korus_mail", "ask", f"--to={clone.web}", "--timeout=600", "--", "q?"],
                   cwd=clone.main)
    try:
        wait_for(lambda: waits(clone), what="the sandboxed ask's wait")
        [w] = waits(clone)
        assert w["owner"]["pidns"] != my_ns and w["owner"]["pid"] < 10  # a pid as seen inside
        assert isinstance(w["owner"].get("life"), str), w["owner"]
        live = ask_back(clone)  # its owner provably runs: the cycle is refused
        assert live.returncode == 1 and f"refused: {clone.main} is waiting on an answer" in live.stderr, live.stderr
    finally:
        kill_namespace(ask)
    dead = ask_back(clone)
    assert dead.returncode == 2 and "refused" not in dead.stderr, (dead.returncode, dead.stderr)
    assert waits(clone) == []  # the dead ask's wait was swept by the next reader
    settle_and_check(clone)


@needs_pidns
def test_a_claim_left_in_another_pid_namespace_is_broken(clone):
    mid = run_cli("send", "--to", "../web", "to withdraw", cwd=clone.main, check=True).stdout.split()[1]
    p = in_pidns([PYTHON, "-m", "git_korus_mail", "cancel", mid], cwd=clone.main,
                 env={"KORUS_MAIL_CRASH_AT": "cancel:claimed"})
    p.communicate(timeout=60)
    [claim] = clone.mail_root.glob("box/*/claiming/*.claim")
    owner = json.loads(claim.read_text())
    assert owner["pidns"] != os.readlink("/proc/self/ns/pid") and "life" in owner
    again = run_cli("cancel", mid, cwd=clone.main)
    assert again.returncode == 0, again.stderr
    assert list(clone.mail_root.glob(f"box/*/cancelled/{mid}.json"))
    settle_and_check(clone)


LIFE_OWNER = r"""
import os, sys, time
from git_korus_mail.store import life
from git_korus_mail.store.files import MailRoot
print(life.hold(MailRoot.open(sys.argv[1], create=True)), flush=True)
if os.fork() == 0:  # a child that outlives its parent, without exec: it must not keep the lock
    time.sleep(600)
    os._exit(0)
time.sleep(600)
"""


def test_a_life_lock_dies_with_its_owner_and_not_with_a_child_it_left(clone):
    """The lock is the process's own (POSIX, not flock): a forked child that outlives its parent
    does not keep a dead owner looking alive. Judged as a record from another pid namespace."""
    from git_korus_mail.store import claims, life
    from git_korus_mail.store.files import MailRoot
    owner_proc = subprocess.Popen([PYTHON, "-c", LIFE_OWNER, str(clone.common_dir)], stdout=subprocess.PIPE, text=True)
    tok = owner_proc.stdout.readline().strip()
    root = MailRoot.open(str(clone.common_dir))
    owner = owner_of(owner_proc.pid, proc_start_ticks(owner_proc.pid))
    owner.update(pidns="pid:[4026599999]", life=tok)
    child = []
    try:
        assert life.valid(tok) and (clone.mail_root / "live" / tok).is_file()
        assert claims.judge(owner, root) == ("alive", f"pid {owner_proc.pid} runs: it holds its life lock")
        assert claims.judge(owner)[0] == "unknown"  # without the root, the pid alone: another namespace
        child = [int(c) for c in open(f"/proc/{owner_proc.pid}/task/{owner_proc.pid}/children").read().split()]
        os.kill(owner_proc.pid, signal.SIGKILL)
        owner_proc.wait()
        assert child and _state(child[0]) not in (None, "Z")  # the child still runs
        assert claims.judge(owner, root) == ("dead", f"pid {owner_proc.pid} has ended: its life lock is free")
    finally:
        for c in child:
            os.kill(c, signal.SIGKILL)
        owner_proc.kill()
        owner_proc.wait()
    # the next lock taken sweeps the dead owner's file
    assert subprocess.run([PYTHON, "-c", "import sys\nfrom git_korus_mail.store import life\n"
                           "from git_korus_mail.store.files import MailRoot\n"
                           "assert life.hold(MailRoot.open(sys.argv[1]))", str(clone.common_dir)]).returncode == 0
    assert [p.name for p in (clone.mail_root / "live").iterdir()] == []
    invariants.check(clone.mail_root)


def _write_wait(clone, qid, owner):
    from git_korus_mail.core import keys
    rec = {"question": qid, "asker": keys.key_for(str(clone.main)).name, "target": keys.key_for(str(clone.web)).name,
           "deadline": time.time() + 3600, "launch": None, "owner": owner}
    d = clone.mail_root / "waits"
    d.mkdir(mode=0o700, exist_ok=True)
    (d / f"{qid}.json").write_text(json.dumps(rec))
    os.chmod(d / f"{qid}.json", 0o600)


def test_a_wait_whose_question_is_answered_counts_for_nothing(clone):
    p = start_ask(clone, "answered while nobody waits?", timeout=1)
    p.communicate(timeout=30)
    qid = wait_question(clone)[0]
    assert reply(clone, qid, "yes").returncode == 0
    # a wait on that answered question, owned by a process that provably runs
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        _write_wait(clone, qid, owner_of(sleeper.pid, proc_start_ticks(sleeper.pid)))
        back = ask_back(clone)
        assert back.returncode == 2 and "refused" not in back.stderr, back.stderr
    finally:
        sleeper.kill()
        sleeper.wait()
    settle_and_check(clone)


def test_release_frees_a_wait_nothing_can_prove_dead(clone):
    from git_korus_mail.store import claims
    qid = "20260101T000000.000000Z-p72-0123456789abcdef"
    owner = claims.me("ask")
    owner.update(pid=72, pidns="pid:[4026599999]")  # an older record: another namespace, no life lock
    run_cli("send", "--to", "../web", "the store exists", cwd=clone.main, check=True)
    _write_wait(clone, qid, owner)
    assert ask_back(clone).returncode == 1
    doctor = json.loads(run_cli("doctor", "--json", cwd=clone.main).stdout)
    [named] = [f for f in doctor["findings"] if f["check"] == "waits"]
    assert not named["ok"] and f"question {qid}: ask pid 72 waits until" in named["detail"]
    assert "another pid namespace" in named["detail"] and named["fix"].endswith(f"git korus-mail release {qid}")
    rel = run_cli("release", qid, cwd=clone.web)
    assert rel.returncode == 0, rel.stderr
    assert rel.stdout.startswith(f"released the wait on question {qid}, held by ask pid 72") \
        and "not provably dead" in rel.stdout
    assert waits(clone) == [] and ask_back(clone).returncode == 2
    assert [e for e in invariants.journal(str(clone.mail_root)) if e["event"] == "wait-released"][0]["id"] == qid
    settle_and_check(clone)


def test_release_refuses_the_wait_of_a_running_ask(clone):
    p = start_ask(clone, "still waiting?", timeout=60)
    try:
        qid = wait_question(clone)[0]
        wait_for(lambda: waits(clone), what="the ask's wait")
        rel = run_cli("release", qid, cwd=clone.web)
        assert rel.returncode == 1 and "not released: the wait on question" in rel.stderr, rel.stderr
        assert "holds its life lock" in rel.stderr and waits(clone)
    finally:
        p.kill()
        p.communicate(timeout=30)
    settle_and_check(clone)


# -- an ask whose launch ended keeps its answer as mail (issue 21, item 4) -------------------
def test_an_ask_whose_launch_was_killed_leaves_the_answer_for_the_resumed_launch(clone, tmp_path):
    """The client's process (a stand-in) is SIGKILLed while its `ask` waits, as Claude Code's
    Bash command outlives a SIGKILLed claude; the orphaned ask gets the answer but must not
    consume it: the session's next launch is shown it."""
    launch = subprocess.Popen(["sleep", "600"])
    try:
        env = {"CLAUDE_PID": str(launch.pid), "CLAUDE_CODE_SESSION_ID": S_MAIN}
        p = start_ask(clone, "still there after the kill?", timeout=60, env=env)
        qid = wait_question(clone)[0]
        os.kill(launch.pid, signal.SIGKILL)
        launch.wait()
        assert reply(clone, qid, "the answer survives").returncode == 0
        out, err = p.communicate(timeout=30)
        assert p.returncode == 0 and out.endswith("the answer survives\n"), (out, err)
        assert "the launch that asked" in err and "has ended" in err
    finally:
        launch.kill()
        launch.wait()
    [(sub, ans)] = answers_of(clone, qid)
    assert sub == "inbox", sub  # not consumed by the orphaned ask
    # the resumed launch (this pytest process is every drain's CLAUDE_PID) is shown it
    text = context_of(hook("SessionStart", clone.main, S_MAIN, extra={"source": "resume"})[0])
    assert text and "the answer survives" in text and f"answer to {qid}" in text
    events = [e["event"] for e in invariants.journal(str(clone.mail_root))]
    assert "answer-kept" in events and "answer-delivered" not in events
    settle_and_check(clone)
    assert [s for s, _ in answers_of(clone, qid)] == ["seen"]


def _answered_ask(clone, launch, body):
    """An ask run by `launch` (a stand-in for Claude Code) in session S_MAIN, answered by reply."""
    env = {"CLAUDE_PID": str(launch.pid), "CLAUDE_CODE_SESSION_ID": S_MAIN}
    p = start_ask(clone, "and now?", timeout=60, env=env)
    qid = wait_question(clone)[0]
    assert reply(clone, qid, body).returncode == 0
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and out.endswith(body + "\n") and err == "", (out, err)
    [(sub, ans)] = answers_of(clone, qid)
    return qid, sub, ans, env


def test_an_ask_marks_its_answer_shown_to_its_launch_and_that_launchs_stop_consumes_it(clone):
    launch = subprocess.Popen(["sleep", "600"])
    try:
        qid, sub, ans, env = _answered_ask(clone, launch, "consumed at the asker's Stop")
        assert sub == "inbox"  # shown to the asking launch (its tool output), not consumed yet
        # that launch's next event does not show it again; its Stop consumes it, naming it
        assert context_of(hook("PostToolUse", clone.main, S_MAIN, env=env)[0]) is None
        hook("Stop", clone.main, S_MAIN, env=env, extra={"last_assistant_message": "ok", "stop_hook_active": False})
        [(sub, _)] = answers_of(clone, qid)
        assert sub == "seen"
        receipt = json.loads(next(clone.mail_root.glob(f"box/*/receipts/{ans['id']}.json")).read_text())
        assert receipt["session"] == S_MAIN and receipt["launch"]["pid"] == launch.pid
        assert receipt["observed"]["event"] == "ask" and receipt["observed"]["question_of"] == qid
    finally:
        launch.kill()
        launch.wait()
    settle_and_check(clone)


def test_a_launch_killed_after_its_ask_returned_but_before_its_stop_leaves_the_answer_to_the_next(clone):
    """The window `answer-kept` alone cannot close: the launch dies after the ask printed the
    answer (its model may never have read it). Its marker authorizes nothing: the next launch
    of the session is shown the answer, and consumes it."""
    launch = subprocess.Popen(["sleep", "600"])
    try:
        qid, sub, ans, _env = _answered_ask(clone, launch, "shown again after the kill")
        assert sub == "inbox"
    finally:
        launch.kill()
        launch.wait()
    text = context_of(hook("SessionStart", clone.main, S_MAIN, extra={"source": "resume"})[0])
    assert text and "shown again after the kill" in text
    settle_and_check(clone)
    assert [s for s, _ in answers_of(clone, qid)] == ["seen"]
