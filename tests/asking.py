"""Helpers for the ask/reply tests (tests/test_ask.py, and the ask/answer crash scenarios that
tests/test_crash.py runs): real `ask`, `reply` and `drain` processes in a real clone."""

import glob
import json
import os
import subprocess
import time

from helpers import PYTHON, hook, run_cli

import invariants

S_WEB = "sess-web-3333"
S_MAIN = "sess-main-4444"


def working(c, wt=None, session=None):
    """A session at work in `wt` (web by default): one that can answer, so an ask to it waits.
    With none there, ask does not wait at all (it leaves the question queued: core/ask.py)."""
    wt = wt or c.web
    hook("UserPromptSubmit", wt, session or (S_WEB if str(wt) == str(c.web) else S_MAIN))


def start_ask(c, question, dest=None, timeout=30, cwd=None, env=None, json_out=False):
    """`ask` as its own process (it blocks); returns the Popen."""
    full = dict(os.environ)
    full.update(env or {})
    args = [PYTHON, "-m", "git_korus_mail", "ask", f"--to={dest or c.web}", f"--timeout={timeout}"]
    args += (["--json"] if json_out else []) + ["--", question]
    return subprocess.Popen(args, cwd=str(cwd or c.main), env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def box_dir(c, wt):
    for p in glob.glob(str(c.mail_root / "box" / "*" / "path")):
        if open(p).read().strip() == os.path.realpath(str(wt)):
            return os.path.dirname(p)
    return None


def queued(c, wt, kind=None):
    """Ids in `wt`'s inbox (of `kind`, when given), read as plain files."""
    d = box_dir(c, wt)
    out = []
    for p in sorted(glob.glob(os.path.join(d, "inbox", "*.json"))) if d else []:
        msg = json.load(open(p))
        if kind is None or msg.get("kind") == kind:
            out.append(msg["id"])
    return out


def wait_question(c, wt=None, n=1, timeout=20.0):
    """Wait until `wt`'s inbox holds n questions; their ids."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ids = queued(c, wt or c.web, "question")
        if len(ids) >= n:
            return ids
        time.sleep(0.02)
    raise AssertionError("no question was queued")


def reply(c, qid, body, cwd=None, env=None):
    return run_cli("reply", qid, "--", body, cwd=str(cwd or c.web), env=env)


def stop(cwd, session, final, env=None):
    return hook("Stop", cwd, session, env=env, extra={"last_assistant_message": final, "stop_hook_active": False})


def ask_then_show(c, text="what is six times seven?", timeout=1):
    """A question queued by an ask that gave up (exit 2), then shown to web's session."""
    p = start_ask(c, text, timeout=timeout)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 2, (out, err)
    qid = queued(c, c.web, "question")[0]
    hook("UserPromptSubmit", c.web, S_WEB)
    return qid


def settle_and_check(c):
    """A clean drain of both worktrees (the readers that repair), then the invariants."""
    for wt, s in ((c.web, S_WEB), (c.main, S_MAIN)):
        hook("UserPromptSubmit", wt, s)
        stop(wt, s, "settled")
    return invariants.check(c.mail_root, killed_debris_ok=True)


def answers_of(c, qid):
    """Every answer message to `qid` in any state of any box (plain reads)."""
    out = []
    for p in glob.glob(str(c.mail_root / "box" / "*" / "*" / "*.json")):
        sub = os.path.basename(os.path.dirname(p))
        if sub in ("inbox", "seen", "expired", "cancelled"):
            msg = json.load(open(p))
            if msg.get("kind") == "answer" and msg.get("in_reply_to") == qid:
                out.append((sub, msg))
    return out


# -- crash scenarios (tests/test_crash.py runs one per step) ------------------------------
def scenario_ask(c, step):
    from test_crash import assert_killed
    working(c)
    p = start_ask(c, "killed ask?", timeout=20, env={"KORUS_MAIL_CRASH_AT": step})
    if step == "ask:delivered":
        qid = wait_question(c)[0]
        assert reply(c, qid, "the answer").returncode == 0
    out, err = p.communicate(timeout=30)
    assert_killed(subprocess.CompletedProcess(p.args, p.returncode, out, err), step)
    qid = queued(c, c.web, "question")[0] if step == "ask:published" else None
    if qid:  # the question stays open: a killed ask loses nothing; its answer comes as mail
        assert reply(c, qid, "later").returncode == 0
        assert [s for s, _ in answers_of(c, qid)] == ["inbox"]
        # and its dead wait does not count: web may ask main now
        q = start_ask(c, "back?", dest=c.main, timeout=1, cwd=c.web)
        out, err = q.communicate(timeout=30)
        assert q.returncode == 2 and out.startswith("question "), ("a dead ask's wait still counted", out, err)
    settle_and_check(c)


def scenario_answer(c, step):
    from test_crash import assert_killed
    for killed in ("reply", "stop"):
        # a question of its own each round: the same text twice within 10 s is dropped as a loop
        qid = ask_then_show(c, f"what is six times seven? ({killed})")
        env = {"KORUS_MAIL_CRASH_AT": step}
        proc = reply(c, qid, "by reply", env=env) if killed == "reply" else _stop_killed(c, env)
        assert_killed(proc, f"{step} ({killed})")
        stop(c.web, S_WEB, "the next run's text")  # the next reader delivers the decided answer
        found = answers_of(c, qid)
        assert len(found) == 1, (killed, found)
        want = "by reply" if killed == "reply" else "killed stop's text"
        assert found[0][1]["body"] == want, (killed, found)
    settle_and_check(c)


def _stop_killed(c, env):
    payload = {"session_id": S_WEB, "transcript_path": "", "cwd": str(c.web), "hook_event_name": "Stop",
               "last_assistant_message": "killed stop's text", "stop_hook_active": False}
    full = dict(os.environ)
    full.update(env)
    return subprocess.run([PYTHON, "-m", "git_korus_mail", "drain"], cwd=str(c.web), input=json.dumps(payload),
                          capture_output=True, text=True, env=full)
