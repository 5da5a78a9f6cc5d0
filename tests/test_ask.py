"""ask and reply between real processes: the answer on the asker's stdout, exactly one answer
per question, automatic answers at the recipient's run end, failed / stopped, refused waits."""

import json
import os
import signal
import subprocess
import time

import pytest

from asking import (S_MAIN, S_WEB, answers_of, ask_then_show, box_dir, queued, reply, settle_and_check,
                    start_ask, stop, wait_question, working)
from helpers import context_of, git, hook, reaped, run_cli

import invariants


def receipt(c, wt, msg_id):
    with open(os.path.join(box_dir(c, wt), "receipts", msg_id + ".json")) as f:
        return json.load(f)


def test_explicit_reply_reaches_the_waiting_ask_and_counts_as_delivered(clone):
    working(clone)
    p = start_ask(clone, "what is six times seven?")
    qid = wait_question(clone)[0]
    r = reply(clone, qid, "forty-two")
    assert r.returncode == 0 and r.stdout.startswith(f"answered {qid} with\n  "), r.stderr
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    head, body = out.split("\n", 1)
    assert head.startswith("status answered (an explicit reply) · answer to question " + qid)
    assert f"from (unverified) {clone.web}" in head and body == "forty-two\n"
    (sub, ans), = answers_of(clone, qid)
    assert sub == "seen" and ans["status"] == "answered" and ans["in_reply_to"] == qid and ans["thread"] == qid
    assert receipt(clone, clone.main, ans["id"])["session"] == "ask"  # delivered by ask: no drain shows it
    assert context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0]) is None
    again = reply(clone, qid, "forty-three")
    assert again.returncode == 1 and "already answered (explicit, status answered" in again.stderr
    events = [e["event"] for e in invariants.journal(str(clone.mail_root))]
    assert events.count("asked") == 1 and events.count("answered") == 1 and "answer-delivered" in events
    settle_and_check(clone)


def test_the_question_shows_its_id_and_the_reply_command(clone):
    p = start_ask(clone, "ready to merge?", timeout=1)
    p.communicate(timeout=30)
    qid = queued(clone, clone.web, "question")[0]
    text = context_of(hook("UserPromptSubmit", clone.web, S_WEB)[0])
    assert f"id {qid}" in text and f"Answer with: git korus-mail reply {qid} -- " in text


def test_no_answer_in_time_exits_2_and_the_answer_comes_later_as_mail(clone):
    from install_fixtures import install
    install(clone.main)  # wired: without a hook, the verdict says nothing is wired to show it
    working(clone)
    p = start_ask(clone, "slow one?", timeout=1)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 2 and all(len(line) < 100 for line in out.splitlines()), out
    flat = " ".join(out.split())
    assert "will arrive later as ordinary mail" in flat and "timeout 600000" in flat
    assert "\n  the question: queued, as of " in out and "a session there is working" in flat  # the verdict
    assert "to wait again: git korus-mail ask --again=…" in flat
    qid = queued(clone, clone.web, "question")[0]
    assert reply(clone, qid, "here it is").returncode == 0
    text = context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0])
    assert f"answer to {qid} · status answered" in text and "here it is" in text
    settle_and_check(clone)


WEEK = 7 * 24 * 3600  # ask's longest --timeout: an ask that waited it out would hang the test


class Launch:
    """A real process standing in for one Claude Code launch (its pid is the hooks' CLAUDE_PID)."""

    def __init__(self):
        import subprocess
        import sys
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        self.env = {"CLAUDE_PID": str(self.proc.pid)}

    def hook(self, event, cwd, session, **kw):
        return hook(event, cwd, session, env=self.env, **kw)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def finish(p, timeout=60):
    """(stdout, stderr) of an ask that must end by itself; killed if it does not, so a failing
    test leaves no week-long ask behind."""
    import subprocess
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise AssertionError("the ask was still waiting") from None


@pytest.fixture
def launches():
    made = []

    def make():
        made.append(Launch())
        return made[-1]
    yield make
    for launch in made:
        launch.kill()


@pytest.mark.parametrize("there", ["nobody", "idle", "closed"])
def test_with_nobody_there_to_answer_the_question_is_queued_and_ask_returns_at_once(clone, launches, there):
    """Issue 21, item 10 (omp-mail's rule): no session that can answer or be woken, so the
    question is queued and ask exits 2 without waiting its timeout; the answer comes as mail."""
    if there != "nobody":
        b = launches()
        b.hook("SessionStart", clone.web, S_WEB)          # idle, and no wake-up tier armed
        if there == "closed":
            b.hook("SessionEnd", clone.web, S_WEB)
    p = start_ask(clone, f"anyone there? ({there})", timeout=WEEK)
    out, err = finish(p)                                 # it never waits out its week
    assert p.returncode == 2, (out, err)
    qid = queued(clone, clone.web, "question")[0]
    why = ("the session there is idle and cannot be woken (install --urgent arms the wake-up tier); the "
           "question is shown at the next prompt") if there == "idle" else "no session runs there"
    first, verdict = out.split("\n  the question: ")
    assert " ".join(first.split()) == (f"question {qid} is queued, and no answer can come soon: {why}; the "
                                       f"answer will arrive later as ordinary mail"), out
    assert verdict.startswith("queued, as of ") and all(len(line) < 100 for line in out.splitlines()), out
    # its wait is closed: web may ask main back at once, not refused as a cycle
    back = run_cli("ask", f"--to={clone.main}", "--timeout=5", "--", "back?", cwd=str(clone.web))
    assert back.returncode == 2 and "refused" not in back.stderr, (back.stdout, back.stderr)
    # the question is shown to the next session there, and its answer reaches the asker as mail
    shown = context_of(launches().hook("SessionStart", clone.web, "sess-web-next")[0])
    assert f"id {qid}" in shown
    assert reply(clone, qid, "here now").returncode == 0
    text = context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0])
    assert f"answer to {qid} · status answered" in text and "here now" in text
    settle_and_check(clone)


@pytest.mark.parametrize("shown", [True, False])
def test_when_the_session_that_holds_the_question_dies_the_wait_ends_at_once(clone, launches, shown):
    """Issue 21, item 10: the ask waited 38 s after the only session shown the question was
    killed. A killed client runs no Stop, so no automatic answer can come: the wait ends."""
    b = launches()
    b.hook("UserPromptSubmit", clone.web, S_WEB)           # working: the ask waits for it
    p = start_ask(clone, f"are you alive? ({shown})", timeout=WEEK)
    qid = wait_question(clone)[0]
    if shown:
        assert f"id {qid}" in context_of(b.hook("PostToolUse", clone.web, S_WEB)[0])
    time.sleep(1)                                          # it is waiting, past its first look
    assert p.poll() is None, p.communicate()
    b.kill()                                               # SIGKILL: no SessionEnd, no Stop
    out, err = finish(p)
    assert p.returncode == 2, (out, err)
    why = f"session {S_WEB}, which was shown it, stopped running" if shown else "no session runs there any more"
    assert " ".join(out.split("\n  the question: ")[0].split()) == (
        f"question {qid} is queued, and no answer can come soon: {why}; the answer will arrive later as "
        f"ordinary mail"), out
    # the question waits for the resumed session, and its answer comes to the asker as mail
    assert queued(clone, clone.web, "question") == [qid]
    assert f"id {qid}" in context_of(launches().hook("SessionStart", clone.web, S_WEB)[0])
    assert reply(clone, qid, "back again").returncode == 0
    assert "back again" in context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0])
    settle_and_check(clone)


def test_a_killed_ask_loses_nothing(clone):
    working(clone)
    p = start_ask(clone, "will you see this?", timeout=60)
    qid = wait_question(clone)[0]
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    assert reply(clone, qid, "yes").returncode == 0
    assert "yes" in context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0])
    settle_and_check(clone)


@pytest.mark.parametrize("killed", ["reply", "stop"])
def test_an_answerer_killed_between_staging_and_linking_the_answer_still_delivers_it(clone, killed):
    """Killed after the answer's file is complete in tmp/ and before its link into the asker's
    inbox: the staging file outlives the answerer (swept only after 36 h), and the next reader
    that republishes the decided answer must not take that leftover for a racing publisher."""
    from asking import _stop_killed
    qid = ask_then_show(clone, f"killed while staging? ({killed})")
    env = {"KORUS_MAIL_CRASH_AT": "send:tmp-written"}
    proc = reply(clone, qid, "by reply", env=env) if killed == "reply" else _stop_killed(clone, env)
    assert proc.returncode == -9, (proc.returncode, proc.stderr)
    assert list((clone.mail_root / "tmp").glob("msg.*")), "the kill left no staging file"
    assert answers_of(clone, qid) == []  # decided, not yet delivered
    stop(clone.web, S_WEB, "the next run's text")  # the next reader delivers the decided answer
    found = answers_of(clone, qid)
    want = "by reply" if killed == "reply" else "killed stop's text"
    assert [(sub, msg["body"]) for sub, msg in found] == [("inbox", want)], found
    text = context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0])
    assert want in text
    settle_and_check(clone)


def test_unanswered_question_gets_the_runs_final_text_at_stop(clone):
    working(clone)
    p = start_ask(clone, "how did it go?")
    wait_question(clone)
    hook("PostToolUse", clone.web, S_WEB)  # shown between tool calls
    stop(clone.web, S_WEB, "It went fine: 3 files changed.")
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert out.startswith("status done (automatic: the recipient's final message of its run)")
    assert out.endswith("It went fine: 3 files changed.\n")
    settle_and_check(clone)


def test_stop_does_not_answer_a_question_the_launch_was_never_shown(clone):
    working(clone)
    p = start_ask(clone, "unseen?", timeout=2)
    qid = wait_question(clone)[0]
    stop(clone.web, S_WEB, "a run that never saw it")
    hook("SessionEnd", clone.web, S_WEB)
    p.communicate(timeout=30)
    assert p.returncode == 2 and answers_of(clone, qid) == [] and queued(clone, clone.web, "question") == [qid]


@pytest.mark.parametrize("event, status, code", [("SessionEnd", "failed", 3), ("StopFailure", "failed", 3),
                                                 ("UserPromptSubmit", "stopped", 3)])
def test_a_run_that_ends_without_answering_ends_the_wait(clone, event, status, code):
    working(clone)
    p = start_ask(clone, "still there?")
    wait_question(clone)
    hook("PostToolUse", clone.web, S_WEB)
    hook(event, clone.web, S_WEB)  # UserPromptSubmit: a new run, after one that never reached Stop
    out, _ = p.communicate(timeout=30)
    assert p.returncode == code and out.startswith(f"status {status} "), out
    settle_and_check(clone)


def test_mutual_and_longer_waits_are_refused(clone):
    docs = clone.add_worktree("docs")
    working(clone)
    working(clone, docs, "sess-docs-5555")
    a = start_ask(clone, "A asks web", timeout=60)                     # main -> web
    wait_question(clone)
    refused = run_cli("ask", f"--to={clone.main}", "--timeout=5", "--", "web asks main", cwd=str(clone.web))
    assert refused.returncode == 1 and "refused: " + str(clone.main) + " is waiting on an answer" in refused.stderr
    assert "waits " + f"{clone.main} -> {clone.web}" in refused.stderr
    b = start_ask(clone, "web asks docs", dest=docs, cwd=clone.web, timeout=60)   # web -> docs
    wait_question(clone, docs)
    cycle = run_cli("ask", f"--to={clone.main}", "--timeout=5", "--", "docs asks main", cwd=str(docs))
    assert cycle.returncode == 1 and f"waits {clone.web} -> {docs}" in cycle.stderr or \
        f"{clone.main} -> {clone.web} -> {docs}" in cycle.stderr, cycle.stderr
    assert queued(clone, clone.main) == []  # nothing was queued by a refused ask
    for p in (a, b):
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=30)
    # the dead asks' waits no longer count
    ok = run_cli("ask", f"--to={clone.main}", "--timeout=1", "--", "now?", cwd=str(docs))
    assert ok.returncode == 2, ok.stderr


def test_reply_to_an_ordinary_message_goes_to_its_sender_in_its_thread(clone):
    sent = json.loads(run_cli("send", f"--to={clone.web}", "--json", "--", "hello", cwd=str(clone.main),
                              check=True).stdout)["results"][0]["id"]
    r = reply(clone, sent, "hello back")
    assert r.returncode == 0, r.stderr
    mid = queued(clone, clone.main, "reply")[0]
    msg = json.load(open(os.path.join(box_dir(clone, clone.main), "inbox", mid + ".json")))
    assert (msg["in_reply_to"], msg["thread"], msg["body"]) == (sent, sent, "hello back")
    assert f"reply to {sent}" in context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0])


def test_status_shows_questions_asked_and_received(clone):
    working(clone)
    p = start_ask(clone, "status?")
    qid = wait_question(clone)[0]
    reply(clone, qid, "fine")
    p.communicate(timeout=30)
    mine = json.loads(run_cli("status", "--json", cwd=str(clone.main), check=True).stdout)["questions"]
    assert mine["asked"][0]["id"] == qid and mine["asked"][0]["state"] == "answered"
    assert mine["asked"][0]["answer"]["how"] == "explicit" and mine["asked"][0]["answer"]["by"] == str(clone.web)
    theirs = json.loads(run_cli("status", "--json", cwd=str(clone.web), check=True).stdout)["questions"]
    assert theirs["received"][0]["id"] == qid and theirs["received"][0]["answered"] is True
    text = run_cli("status", cwd=str(clone.web), check=True).stdout
    assert "questions this worktree was asked" in text and "answered answered (explicit)" in text


def test_ask_refuses_itself_and_all(clone):
    own = run_cli("ask", "--to=.", "--", "me?", cwd=str(clone.main))
    assert own.returncode == 1 and "would wait on its own answer" in own.stderr
    every = run_cli("ask", "--to=all", "--", "all?", cwd=str(clone.main))
    assert every.returncode == 129 and "exactly one worktree" in every.stderr


# Each racer waits for the same go-file, then runs the real command: a reply and a Stop drain
# (the automatic answer) start within a millisecond of each other, in separate processes.
_RACER = ("import os, sys, time\n"
          "while not os.path.exists(sys.argv[1]):\n    time.sleep(0.0005)\n"
          "from git_korus_mail import cli\nsys.exit(cli.main(sys.argv[2:]))\n")


@pytest.mark.slow  # slow tier (docs/TESTING.md): many rounds of a race over the kernel's link/rename, same on every CPython
def test_reply_and_the_automatic_answer_race_and_exactly_one_wins(clone, tmp_path):
    import subprocess
    from helpers import PYTHON
    from helpers import no_limits
    no_limits(clone)  # twelve questions from one sender in seconds: the race is measured, not the rate
    winners = {"reply": 0, "stop": 0}
    rounds = 12
    for n in range(rounds):
        qid = ask_then_show(clone, f"race {n}?")
        go = tmp_path / f"go-{n}"
        payload = json.dumps({"session_id": S_WEB, "transcript_path": "", "cwd": str(clone.web),
                              "hook_event_name": "Stop", "last_assistant_message": "automatic",
                              "stop_hook_active": False})
        procs = [subprocess.Popen([PYTHON, "-c", _RACER, str(go), "reply", qid, "--", "explicit"], cwd=str(clone.web),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
                 subprocess.Popen([PYTHON, "-c", _RACER, str(go), "drain"], cwd=str(clone.web), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
        procs[1].stdin.write(payload)
        procs[1].stdin.close()
        time.sleep(0.3)  # both are up and polling
        go.touch()
        rc = [p.wait(timeout=60) for p in procs]
        assert rc[1] == 0
        found = answers_of(clone, qid)
        assert len(found) == 1, (n, found)  # never doubled, never lost
        body = found[0][1]["body"]
        assert (rc[0] == 0) == (body == "explicit"), (n, rc, body)  # the reply says whether it won
        winners["reply" if body == "explicit" else "stop"] += 1
    assert sum(winners.values()) == rounds
    settle_and_check(clone)


def test_a_question_the_receivers_limits_drop_ends_the_wait_at_once(clone):
    first = start_ask(clone, "the same words", timeout=1)
    first.communicate(timeout=30)
    working(clone)
    second = start_ask(clone, "the same words", timeout=60)  # a repeat within the loop window
    wait_question(clone, n=2)
    hook("UserPromptSubmit", clone.web, S_WEB)  # the receiver's drain judges it a loop and drops it
    out, _ = second.communicate(timeout=30)
    assert second.returncode == 3 and out.startswith("status dropped: question "), out
    assert "the receiver's limits dropped the question" in out


def test_a_reply_stalled_before_its_link_never_publishes_the_answer_again(clone, tmp_path):
    """Issue 22, item 2. The reply decides, finds its answer not yet in the asker's box, and stops
    right before linking it (held at the crash step `send:tmp-written`, in its own process); the
    waiting ask meanwhile sees the decision. Before the fix the ask published and consumed the
    answer itself, and the reply's link then put it back: in inbox/ and seen/ at once, shown to
    the asker's next prompt again. The check and the link are now one decision under the answer's
    claim: the ask waits for the reply's link and consumes that."""
    from pausing import Paused
    from helpers import PYTHON
    working(clone)  # a session at work there, so the ask waits (core/ask.py)
    # the reply must take the answer's claim before the ask looks: the ask's signal (which would
    # wake it the moment the reply decides, and race the reply for the claim) is left out and its
    # looks are a second apart, so the stall below always comes first
    slow = ("import sys; from git_korus_mail.core import ask; from git_korus_mail.store import answers; "
            "answers.open_signal = lambda root, qid: None; ask.POLL_FIRST = ask.POLL_MAX = 1.0; "
            "from git_korus_mail.cli import main; sys.argv[0] = 'git-korus-mail'; sys.exit(main())")
    p = subprocess.Popen([PYTHON, "-c", slow, "ask", f"--to={clone.web}", "--timeout=60", "--", "stalled reply?"],
                         cwd=str(clone.main), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    qid = wait_question(clone)[0]
    hook("UserPromptSubmit", clone.web, S_WEB)
    r = Paused(tmp_path, ["reply", qid, "--", "the one answer"], clone.web, {"send:tmp-written": "r-linking"})
    assert r.reach("send:tmp-written")  # decided, checked, staged: about to link
    try:
        p.wait(timeout=4)  # before the fix the ask is done by now; after it, it waits (10 s) for the link
    except subprocess.TimeoutExpired:
        pass
    assert r.finish() == 0, r.err
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and "the one answer" in out, (out, err)
    found = answers_of(clone, qid)
    assert [(sub, msg["body"]) for sub, msg in found] == [("seen", "the one answer")], found
    text = context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0]) or ""
    assert "the one answer" not in text  # on the ask's stdout once, never shown again
    s = settle_and_check(clone)
    assert len([r for r in invariants.journal(clone.mail_root) if r.get("event") == "consumed"
                and r.get("id") == found[0][1]["id"]]) == 1
    assert s is not None


def test_a_late_refused_reply_never_delivers_the_pruned_answer_again(clone):
    """Issue 22, item 3. An answer delivered, consumed by the ask, then pruned after its
    retention: a late `reply` is refused ("already answered") and must not queue the old answer
    again, as it did once its fate read "gone"."""
    working(clone)  # a session at work there, so the ask waits (core/ask.py)
    p = start_ask(clone, "pruned then refused?", timeout=60)
    qid = wait_question(clone)[0]
    assert reply(clone, qid, "first and only").returncode == 0
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and "first and only" in out, (out, err)
    [(sub, msg)] = answers_of(clone, qid)
    assert sub == "seen"
    rcpt = os.path.join(box_dir(clone, clone.main), "receipts", msg["id"] + ".json")
    git("config", "korus-mail.retention-days", "0", cwd=clone.main)  # kept no longer than until consumed
    hook("SessionStart", clone.main, S_MAIN)  # an opening show prunes it
    assert answers_of(clone, qid) == [] and not os.path.exists(rcpt)
    late = reply(clone, qid, "too late")
    assert late.returncode != 0 and "already answered" in late.stdout + late.stderr, (late.stdout, late.stderr)
    assert answers_of(clone, qid) == []  # neither the old answer nor the new one is queued
    text = context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0]) or ""
    assert "first and only" not in text and "too late" not in text
    invariants.check(clone.mail_root)


def test_an_answer_whose_publisher_died_after_its_link_is_never_published_again(clone):
    """Item 3's record when the first reply is killed after linking the answer and before
    recording it (crash step `answer:published`), and no ask waits any more: the asker's drain
    breaks the dead claim (that repair records the publication), shows and consumes the answer;
    retention prunes it; a late reply is refused and queues nothing."""
    qid = ask_then_show(clone, "killed after its link?")  # the ask gave up: nobody publishes again
    killed = reply(clone, qid, "first and only", env={"KORUS_MAIL_CRASH_AT": "answer:published"})
    assert killed.returncode == -9, killed.stderr
    assert [sub for sub, _ in answers_of(clone, qid)] == ["inbox"]
    assert "first and only" in (context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0]) or "")
    stop(clone.main, S_MAIN, "read it")
    assert [sub for sub, _ in answers_of(clone, qid)] == ["seen"]
    git("config", "korus-mail.retention-days", "0", cwd=clone.main)
    hook("SessionStart", clone.main, "sess-main-5555")  # an opening show prunes it
    assert answers_of(clone, qid) == []
    late = reply(clone, qid, "too late")
    assert late.returncode != 0 and "already answered" in late.stdout + late.stderr, (late.stdout, late.stderr)
    assert answers_of(clone, qid) == []
    invariants.check(clone.mail_root)


# -- the answer's signal (store/answers.py open_signal, issue 26): no poll's wait --------------
_SLOW_POLLS = ("import sys; from git_korus_mail.core import ask; "
               "ask.POLL_FIRST = ask.POLL_MAX = ask.SIGNAL_POLL = ask.ENDED_EVERY = 3600.0; "
               "from git_korus_mail.cli import main; sys.argv[0] = 'git-korus-mail'; sys.exit(main())")


def _signal_of(c, qid):
    return c.mail_root / "waits" / (qid + ".signal")


def test_a_waiting_ask_is_woken_by_the_answer_itself_not_by_a_later_look(clone):
    """With every periodic look of the ask set to an hour, only the answerer's signal can end
    its wait: the answer reaches stdout as soon as `reply` has decided it."""
    from helpers import PYTHON
    working(clone)
    p = subprocess.Popen([PYTHON, "-c", _SLOW_POLLS, "ask", f"--to={clone.web}", "--timeout=600", "--", "ready?"],
                         cwd=str(clone.main), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: os.umask(0o477))  # a harsh umask: the FIFO is 0600 all the same
    with reaped(p):
        qid = wait_question(clone)[0]
        deadline = time.time() + 20
        while not _signal_of(clone, qid).exists() and time.time() < deadline:
            time.sleep(0.02)  # the ask opens its signal once the question is queued
        import stat
        st = os.lstat(_signal_of(clone, qid))
        assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600  # pinned: waits/<id>.signal, a FIFO
        assert reply(clone, qid, "yes").returncode == 0
        out, err = p.communicate(timeout=60)  # an hour's look would not come in time
    assert p.returncode == 0, err
    assert out.startswith("status answered (an explicit reply)") and out.endswith("\nyes\n")
    assert not _signal_of(clone, qid).exists()  # closed with the wait
    settle_and_check(clone)


def test_a_killed_asks_signal_never_holds_up_the_answer_and_is_swept_with_its_wait(clone):
    """A SIGKILLed ask leaves its FIFO with no reader: the answer is decided and published at
    once all the same (the signal is never waited for), comes as mail, and the next ask's look
    at the open waits removes the FIFO with the dead ask's wait."""
    working(clone)
    p = start_ask(clone, "are you there?", timeout=60)
    qid = wait_question(clone)[0]
    deadline = time.time() + 20
    while not _signal_of(clone, qid).exists() and time.time() < deadline:
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    assert _signal_of(clone, qid).exists()  # nobody reads it now
    r = subprocess.run([__import__("helpers").PYTHON, "-m", "git_korus_mail", "reply", qid, "--", "yes"],
                       cwd=str(clone.web), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "yes" in context_of(hook("UserPromptSubmit", clone.main, S_MAIN)[0])  # the answer is mail
    working(clone)
    p2 = start_ask(clone, "and now?", timeout=1)  # looks at the open waits before it queues
    p2.communicate(timeout=30)
    assert not _signal_of(clone, qid).exists()
    assert not (clone.mail_root / "waits" / (qid + ".json")).exists()
    settle_and_check(clone)
