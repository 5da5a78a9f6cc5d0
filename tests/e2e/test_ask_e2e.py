"""ask and reply with real Claude Code sessions (2.1.332, offline, one mock API per session).

Each test runs two real sessions in two linked worktrees wired by `install`: the asker's
scripted Bash call runs `git korus-mail ask`, and what its tool result holds is read from the
asker's next request to its mock API. The recipient waits in a Bash call until the question is
queued, so the question arrives between its tool calls (PostToolUse), as for a busy session.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from driver import Claude
from mockapi import MockAPI, bash, error, text
from test_scenarios import HELPER, Mail, _path_with_helper, cli  # noqa: F401 - the shared harness

from git_korus_mail.core import keys

pytestmark = pytest.mark.e2e
QID = re.compile(r"git korus-mail reply (\d{8}T\d{6}\.\d{6}Z-p\d+-[0-9a-f]{16}) -- ")


@pytest.fixture
def mail(clone) -> Mail:
    m = Mail(clone)
    m.install()
    return m


@pytest.fixture
def pair(claude_bin, tmp_path):
    """(api_a, claude_a, api_b, claude_b): one mock API and one config dir per session."""
    made = []

    def make(name):
        api = MockAPI(log_path=str(tmp_path / f"mock-{name}.jsonl")).start()
        runner = Claude(claude_bin, api, tmp_path / f"claude-config-{name}", env={"PATH": _path_with_helper()}, skip_permissions=True)
        made.append((api, runner))
        return api, runner
    (api_a, a), (api_b, b) = make("a"), make("b")
    yield api_a, a, api_b, b
    for api, runner in made:
        runner.cleanup()
        api.stop()


def wait_for_question(mail: Mail, wt) -> str:
    inbox = mail.root / "box" / keys.key_for(str(wt)).name / "inbox"
    return f"until ls {inbox}/*.json >/dev/null 2>&1; do sleep 0.05; done; echo queued"


def ask_cmd(to, question: str, timeout: int = 60) -> str:
    return f"{HELPER} ask --to {to} --timeout={timeout} -- '{question}'; echo ask-exit=$?"


def qid_in(req) -> str:
    m = QID.search(req.decoded_text())
    assert m, "the question's rendering shows no reply command"
    return m.group(1)


def wait_working(mail: Mail, timeout: float = 60) -> None:
    """Until b's session is at work (its presence says so): an ask to a worktree where no
    session can answer or be woken leaves the question queued and returns at once (core/ask.py)."""
    import json
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = mail.box_b.dir
        for f in (d / "sessions").glob("*.json") if d is not None and (d / "sessions").is_dir() else []:
            try:
                if json.loads(f.read_text()).get("state") == "working":
                    return
            except ValueError:
                pass
        time.sleep(0.05)
    raise AssertionError("b's session never reached work")


def tool_result_after(api: MockAPI, needle: str) -> str:
    """The decoded text of the first request whose body holds `needle` (a tool result)."""
    hits = [r for r in api.agent_requests() if r.contains(needle)]
    assert hits, f"{needle!r} reached no request:\n{api.summary()}"
    return hits[0].decoded_text()


def test_busy_recipient_replies_and_the_answer_is_the_askers_tool_result(mail, pair):
    api_a, a, api_b, b = pair
    api_b.set_script([
        bash(wait_for_question(mail, mail.b)),
        # while the asker waits on b, b asking the asker back is refused at once
        lambda req: bash(ask_cmd(mail.a, "do you wait on me?", timeout=5)),
        lambda req: bash(f"{HELPER} reply {qid_in(req)} -- \"forty-$((40+2))\""),
        text("replied"),
    ])
    api_a.set_script([bash(ask_cmd(mail.b, "what is six times seven?")), text("got it")])
    pb = b.start("work on the schema", mail.b)
    wait_working(mail)
    ra = a.run("ask b", mail.a, timeout=120)
    rb = pb.finish(120)
    assert ra.rc == 0 and rb.rc == 0, (ra.describe(), rb.describe())
    result = tool_result_after(api_a, "ask-exit=")
    assert "status answered (an explicit reply)" in result and "forty-42" in result and "ask-exit=0" in result
    refused = tool_result_after(api_b, "ask-exit=1")
    assert f"refused: {mail.a} is waiting on an answer" in refused
    # the Bash tool's timeouts, as Claude Code 2.1.332 tells the model (docs/HOOKS.md, "Questions")
    first = api_a.agent_requests()[0]
    assert first.contains("`timeout` is in milliseconds: default 120000, max 600000 for a foreground command.")
    assert first.contains("Optional timeout in milliseconds (max 600000 for a foreground command)")
    # delivered by ask: the answer was marked shown to a's launch (its tool result), so a's drain
    # showed it no more, and a's own Stop consumed it (docs/DESIGN.md R5a)
    assert mail.box_a.ids("inbox") == []
    [receipt] = mail.box_a.receipts().values()
    assert receipt["observed"]["event"] == "ask" and receipt["session"] == ra.session_id
    assert receipt["launch"]["client"] == "claude"


def test_recipient_that_never_replies_answers_with_its_final_message(mail, pair):
    api_a, a, api_b, b = pair
    api_b.set_script([bash(wait_for_question(mail, mail.b)), text("The final answer is 42, see schema.sql.")])
    api_a.set_script([bash(ask_cmd(mail.b, "what did you find?")), text("ok")])
    pb = b.start("work", mail.b)
    wait_working(mail)
    ra = a.run("ask b", mail.a, timeout=120)
    pb.finish(120)
    result = tool_result_after(api_a, "ask-exit=")
    assert "status done (automatic: the recipient's final message of its run)" in result, result[-800:]
    assert "The final answer is 42, see schema.sql." in result and ra.rc == 0


def test_recipient_whose_run_fails_ends_the_wait_with_failed(mail, pair):
    api_a, a, api_b, b = pair
    too_long = error(400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum")
    api_b.set_script([bash(wait_for_question(mail, mail.b))] + [too_long] * 8)
    api_a.set_script([bash(ask_cmd(mail.b, "are you there?")), text("ok")])
    pb = b.start("work", mail.b)
    wait_working(mail)
    a.run("ask b", mail.a, timeout=120)
    pb.finish(120)
    result = tool_result_after(api_a, "ask-exit=")
    assert "status failed" in result and "ask-exit=3" in result, result[-800:]


def test_closed_recipient_answers_at_resume_and_the_asker_gets_it_as_mail(mail, pair):
    api_a, a, api_b, b = pair
    api_b.set_script([text("first run")])
    sid_b = b.run("hello", mail.b, timeout=60).session_id
    api_a.set_script([bash(ask_cmd(mail.b, "migrations applied?", timeout=2)), text("will look later")])
    ra = a.run("ask b", mail.a, timeout=60)
    timed_out = tool_result_after(api_a, "ask-exit=")
    assert "ask-exit=2" in timed_out and "the answer will arrive later as ordinary mail" in timed_out
    api_b.set_script([text("Resumed: all 12 migrations applied.")])
    b.resume(sid_b, "continue", mail.b, timeout=60)   # its SessionStart shows the queued question
    api_a.set_script([text("thanks")])
    a.resume(ra.session_id, "anything new?", mail.a, timeout=60)
    later = [r for r in api_a.agent_requests() if r.contains("Resumed: all 12 migrations applied.")]
    assert later and later[0].contains("status done"), api_a.summary()


def test_cli_ask_from_a_plain_shell_prints_the_answer(mail, pair):
    _api_a, _a, api_b, b = pair
    api_b.set_script([bash(wait_for_question(mail, mail.b)),
                      lambda req: bash(f"{HELPER} reply {qid_in(req)} -- 'from b'"), text("done")])
    pb = b.start("work", mail.b)
    wait_working(mail)
    proc = subprocess.run([HELPER, "ask", f"--to={mail.b}", "--timeout=60", "--", "cli question?"],
                          cwd=str(mail.a), capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in __import__("os").environ.items() if not k.startswith("CLAUDE")})
    pb.finish(120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("status answered") and proc.stdout.endswith("from b\n")
    assert sys.executable  # the helper is this interpreter's console script (test_scenarios.HELPER)


def test_stop_continued_by_another_hook_answers_with_the_first_stops_text(mail, pair, tmp_path):
    """Another Stop hook blocks once: Claude Code runs one more turn and fires Stop again with
    stop_hook_active true. A hook cannot know at a Stop that another will block it, so the
    question shown in the run is answered at the first Stop, with the text that Stop carries
    (docs/HOOKS.md, "Questions"); the second Stop finds it answered and sends nothing more."""
    import json as _json
    from driver import write_hooks
    api_a, a, api_b, b = pair
    log, flag = tmp_path / "stops.jsonl", tmp_path / "blocked-once"
    write_hooks(mail.b, {"Stop": f"tee -a {log} >/dev/null; echo >> {log}; test -e {flag} || "
                                 f"{{ touch {flag}; echo '{{\"decision\":\"block\",\"reason\":\"one more\"}}'; }}"},
                file="settings.json")
    api_b.set_script([bash(wait_for_question(mail, mail.b)), text("first final"), text("second final")])
    api_a.set_script([bash(ask_cmd(mail.b, "which final?")), text("ok")])
    pb = b.start("work", mail.b)
    wait_working(mail)
    a.run("ask b", mail.a, timeout=120)
    pb.finish(120)
    stops = [_json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    assert [s["last_assistant_message"] for s in stops] == ["first final", "second final"]
    result = tool_result_after(api_a, "ask-exit=")
    assert "status done" in result and "first final" in result and "second final" not in result


def test_user_interrupt_ends_the_wait_with_stopped_at_the_next_prompt(mail, pair):
    """Esc in the terminal UI during a tool call fires no hook (observed: no PostToolUse, no
    Stop); the launch's next prompt fires UserPromptSubmit, and only then can the question the
    interrupted run was shown be answered: `stopped`."""
    import time
    api_a, a, api_b, b = pair
    api_b.set_script([bash(wait_for_question(mail, mail.b)), bash("python3 -c 'import time; time.sleep(60)'; echo slept"), text("next run")])
    api_a.set_script([bash(ask_cmd(mail.b, "still working?", timeout=100)), text("ok")])
    with b.terminal(mail.b, args=["--dangerously-skip-permissions"]) as t:
        t.wait_until(lambda: "Yes, I accept" in t.screen_text(), 60, "the bypass dialog")
        t.type("\x1b[B")
        time.sleep(0.3)
        t.type("\r")
        t.wait_until(lambda: "shift+tab" in t.screen_text(), 60, "the prompt")
        t.type("work on it")
        t.type("\r")
        wait_working(mail)
        pa = a.start("ask b", mail.a)
        t.wait_until(lambda: any("time.sleep(60)" in r.reply for r in api_b.agent_requests()), 60, "the slow tool call")
        time.sleep(1.5)
        t.type("\x1b")  # Esc: the run is interrupted, and no hook says so
        t.wait_until(lambda: "Interrupted" in t.screen_text(), 30, "the interrupt")
        t.type("go on")
        t.type("\r")
        ra = pa.finish(120)
        t.kill()
    result = tool_result_after(api_a, "ask-exit=")
    assert "status stopped" in result and "ask-exit=3" in result, (result[-800:], ra.describe())


def test_idle_recipient_is_woken_and_answers_in_the_askers_turn(clone, pair):
    """With the wake-up tier (install --urgent), an idle session with its input open is woken by
    the question; the woken turn's final message comes back to the ask that waits (status done)."""
    import time
    urgent = Mail(clone)
    assert "the wake-up tier is armed" in cli("install", "--urgent", cwd=clone.main).stdout
    api_a, a, api_b, b = pair
    api_b.set_script([text("idle now"), text("Woken: the schema is unchanged.")])
    with b.stream(cwd=urgent.b) as s:
        s.send("hello")
        s.read_result()
        watch = urgent.box_b.dir / "watch"
        deadline = time.monotonic() + 20
        while not (watch.is_dir() and [n for n in watch.iterdir() if not n.name.endswith(".wakes")]):
            assert time.monotonic() < deadline, "no watcher armed at Stop"
            time.sleep(0.05)
        api_a.set_script([bash(ask_cmd(urgent.b, "is the schema unchanged?")), text("ok")])
        a.run("ask b", urgent.a, timeout=120)
        s.read_result(timeout=30)
    result = tool_result_after(api_a, "ask-exit=")
    assert "status done" in result and "Woken: the schema is unchanged." in result and "ask-exit=0" in result


def test_an_ask_orphaned_by_a_sigkilled_claude_leaves_the_answer_to_the_resumed_launch(mail, pair):
    """Claude Code 2.1.332 runs a Bash command in its own process group with its output in a file:
    a SIGKILL of claude's whole process group leaves `git korus-mail ask` running (reference
    §12). That orphan gets the answer, but its output reaches no model, so it must not consume
    the answer: the answer stays mail in a's box, and `claude --resume` of the session is shown it."""
    import json as _json
    import time
    from driver import descendants
    api_a, a, _api_b, _b = pair
    api_a.set_script([text("first run")])
    sid = a.run("hello", mail.a, timeout=60).check().session_id
    api_a.set_script([bash(ask_cmd(mail.b, "is the migration safe?", timeout=90)), text("never reached", delay=30)])
    # a session at work in b (this test process as its client), so the ask waits for the answer
    # (with nobody there to answer it, it would leave the question queued at once: core/ask.py)
    at_work = {"session_id": "b-at-work", "transcript_path": "", "cwd": str(mail.b),
               "hook_event_name": "UserPromptSubmit", "prompt": "working"}
    subprocess.run([sys.executable, "-m", "git_korus_mail", "drain"], input=_json.dumps(at_work), cwd=mail.b,
                   env=dict(os.environ, CLAUDE_PID=str(os.getpid())), capture_output=True, text=True, check=True)
    pa = a.start("ask b", mail.a, resume=sid)
    inbox_b = mail.root / "box" / keys.key_for(str(mail.b)).name / "inbox"
    pa.wait_until(lambda: list(inbox_b.glob("*.json")), 60, "the question in b's inbox")
    asks = [p for p in descendants(pa.pid) if b"ask" in open(f"/proc/{p}/cmdline", "rb").read()]
    assert asks, "no ask process under claude"
    assert pa.kill(tree=False) == -9  # claude's whole process group, as an OOM kill or a crash would
    qid = _json.loads(next(inbox_b.glob("*.json")).read_text())["id"]
    assert any(os.path.exists(f"/proc/{p}") for p in asks), "the ask did not outlive claude (reference §12)"
    cli("reply", qid, "--", "safe: it only adds a column", cwd=mail.b)
    deadline = time.monotonic() + 30
    while any(_runs(p) for p in asks):  # the orphan gets the answer, writes it into the void, exits
        assert time.monotonic() < deadline, "the orphaned ask never ended"
        time.sleep(0.05)
    [answer_id] = mail.box_a.ids("inbox")  # the orphan did not consume it
    assert '"answer-kept"' in (mail.root / "journal.jsonl").read_text()
    api_a.clear_log()
    api_a.set_script([text("noted")])
    a.resume(sid, "anything new?", mail.a, timeout=60).check()
    reqs = [r for r in api_a.agent_requests() if r.session_id == sid]
    assert reqs and reqs[0].contains("safe: it only adds a column"), api_a.summary()
    receipts = mail.box_a.receipts()
    assert list(receipts) == [answer_id] and receipts[answer_id]["session"] == sid
    assert receipts[answer_id]["launch"]["client"] == "claude"
    import invariants  # tests/: the store's invariants after the kill
    invariants.check(str(mail.root), killed_debris_ok=True)


def _runs(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False
