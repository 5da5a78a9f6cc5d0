"""The real Gemini CLI (0.61.0, pinned by install-gemini.sh), offline against geminimock on
127.0.0.1, in a worktree wired by `git korus-mail install --client gemini`, in Gemini's DEFAULT
approval mode unless a test says otherwise (docs/CLIENTS.md, "Gemini CLI").

The person's own choices are made as a person would make them, never by install: the folder is
trusted in ~/.gemini/trustedFolders.json (Gemini runs no hook in an untrusted folder), and where
the model must run `git korus-mail`, the one setting that allows it (tools.allowed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from geminidriver import Gemini
from geminimock import call, shell, text

pytestmark = pytest.mark.e2e

HELPER_BIN = os.path.dirname(sys.executable)
HELPER = os.path.join(HELPER_BIN, "git-korus-mail")
PATH = HELPER_BIN + os.pathsep + os.environ.get("PATH", "")


def cli(*args, cwd, home, check=True, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "GEMINI"))}
    full.update(PATH=PATH, HOME=str(home), **(env or {}))
    proc = subprocess.run([HELPER, *args], cwd=str(cwd), env=full, capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, f"git-korus-mail {args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def gemini(gemini_bin, geminimock, home):
    g = Gemini(gemini_bin, geminimock, home, path_prefix=HELPER_BIN)
    yield g
    g.cleanup()


@pytest.fixture
def wired(clone, gemini, home):
    """The clone wired for Gemini (local scope), and every worktree trusted by the person."""
    out = cli("install", "--client", "gemini", cwd=clone.main, home=home).stdout
    assert "install trusted nothing" in out and "run_shell_command(git korus-mail)" in out
    gemini.trust(clone.main, clone.web)
    return out


def hook_texts(mock, needle):
    return [t for r in mock.agent_requests() for t in r.texts("user") + r.function_responses() if needle in t]


def test_gemini_is_shown_mail_once_consumes_it_at_after_agent_and_a_resume_sees_nothing_new(
        clone, gemini, geminimock, home, wired):
    cli("send", "--to", "../web", "the build is green, says api", cwd=clone.main, home=home)
    geminimock.set_script([text("noted")])
    run = gemini.run("what is new?", cwd=clone.web).check()
    seen = hook_texts(geminimock, "the build is green, says api")
    assert seen and "<hook_context>" in seen[0]  # shown as hook context, at SessionStart or BeforeAgent
    assert any("1 message from ../api" in line and "shown to the model" in line for line in run.person_lines()), run.stderr
    assert geminimock.peers == {"127.0.0.1"}
    status = json.loads(cli("status", "--json", cwd=clone.main, home=home).stdout)
    [sent] = status["sent"]
    assert sent["fate"]["state"] == "consumed" and sent["fate"]["session"] == run.session_id
    # the resumed session: Gemini replays its history (the mail is in it), but nothing is shown anew
    before = len(geminimock.agent_requests())
    geminimock.set_script([text("still nothing")])
    again = gemini.run("anything else?", cwd=clone.web, resume=run.session_id).check()
    assert again.session_id == run.session_id
    assert not any("shown to the model" in line for line in again.person_lines())
    later = geminimock.agent_requests()[before:]
    assert later and not any("[mail 1/1" in t and "begin]" in t for r in later for t in r.texts("user")[-1:])
    box = json.loads(cli("inbox", "--json", cwd=clone.web, home=home).stdout)
    assert not [m for m in box.get("messages", []) if m.get("state") in ("queued", "seen")]


def test_a_question_to_gemini_is_answered_by_its_final_text(clone, gemini, geminimock, home, wired):
    """`ask` from main while Gemini works in web: shown at AfterTool, answered by AfterAgent's
    prompt_response (the automatic answer)."""
    def wait_for_question(_request):
        for _ in range(600):
            inbox = [p for p in (clone.mail_root / "box").glob("*/inbox/*.json")]
            if inbox:
                break
            time.sleep(0.05)
        return call("list_directory", {"dir_path": str(clone.web)})
    geminimock.set_script([wait_for_question, text("forty-two, says gemini")])
    worker = gemini.start("work on it", cwd=clone.web)
    presence = list((clone.mail_root / "box").glob("*/sessions/*.json"))
    for _ in range(600):
        presence = [p for p in (clone.mail_root / "box").glob("*/sessions/*.json") if '"working"' in p.read_text()]
        if presence:
            break
        time.sleep(0.05)
    assert presence, "Gemini's session never said it was working"
    asked = cli("ask", "--to", "../web", "--timeout", "90", "--json", "what is six times seven?",
                cwd=clone.main, home=home)
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert hook_texts(geminimock, "what is six times seven?")
    answer = json.loads(asked.stdout)
    assert answer["status"] == "done" and "forty-two, says gemini" in json.dumps(answer), asked.stdout


def test_send_from_geminis_shell_tool_in_its_default_approval_mode(clone, gemini, geminimock, home, wired):
    """Headless, Gemini's default approval mode offers no shell tool at all; the person's one
    setting (tools.allowed) lets the model run `git korus-mail` and nothing else."""
    geminimock.set_script([shell("git korus-mail send --to ../api \"from gemini, with love\""), text("sent")])
    gemini.run("tell api", cwd=clone.web).check()
    assert not list((clone.mail_root / "box").glob("*/inbox/*.json"))  # no shell tool: nothing sent
    assert hook_texts(geminimock, 'Tool "run_shell_command" not found')
    gemini.allow_mail_commands()
    geminimock.set_script([shell("git korus-mail send --to ../api \"from gemini, with love\""),
                           shell("echo not ours"), text("sent")])
    run = gemini.run("tell api", cwd=clone.web).check()
    assert hook_texts(geminimock, "Tool execution denied by policy")  # anything else is still asked for
    inbox = json.loads(cli("inbox", "--json", cwd=clone.main, home=home).stdout)["messages"]
    assert len(inbox) == 1, [r.function_responses() for r in geminimock.agent_requests()]
    assert "from gemini, with love" in json.dumps(inbox)
    msg = json.loads(next((clone.mail_root / "box").glob("*/inbox/*.json")).read_text())
    assert msg["from"]["launch"].startswith("gemini:"), msg["from"]
    assert run.session_id


def test_who_shows_a_gemini_session_and_its_surface(clone, gemini, geminimock, home, wired):
    geminimock.set_script([text("hello")])
    run = gemini.run("hi", cwd=clone.web).check()
    who = json.loads(cli("who", "--json", cwd=clone.main, home=home).stdout)
    mine = [s for s in who["sessions"] if s.get("session") == run.session_id]
    assert mine, who
    assert mine[0].get("client") == "gemini" and mine[0].get("surface") == "headless", mine[0]


def test_a_broken_helper_is_said_at_session_start_and_after_agent_by_geminis_stub(
        clone, gemini, geminimock, home, wired, tmp_path):
    """The helper baked into Gemini's stub (the one template with Gemini's values) has lost its
    interpreter (a Python upgrade under a venv): the stub's own fault report reaches the model
    and the person at SessionStart, the person again at AfterAgent (the run's end), and nothing
    at BeforeAgent; Gemini's run goes on (docs/HOOKS.md, "The stub")."""
    from git_korus_mail.clients.gemini import stub
    broken = tmp_path / "venv" / "bin" / "git-korus-mail"
    broken.parent.mkdir(parents=True)
    broken.write_text(f"#!{tmp_path / 'venv' / 'bin' / 'python3'}\nimport sys\n")  # that python is gone
    broken.chmod(0o755)
    hook = clone.mail_root / "hooks" / "gemini-hook"
    hook.write_text(stub.STUB.render(str(broken)))
    geminimock.set_script([text("carrying on")])
    run = gemini.run("hi", cwd=clone.web).check()
    said = [line for line in run.person_lines() if "mail is not being delivered" in line]
    assert len(said) == 2, run.stderr  # SessionStart's and AfterAgent's: not BeforeAgent's
    assert all("its Python interpreter" in line and "is gone" in line for line in said), said
    # SessionStart's context, headless, is put before the prompt in its part; BeforeAgent's would
    # be a part of its own after it (docs/CLIENTS.md, "Gemini CLI")
    parts = [part.get("text", "") for r in geminimock.agent_requests() for c in r.contents
             for part in (c.get("parts") or []) if "mail is not being delivered" in part.get("text", "")]
    assert len(parts) == 1 and parts[0].startswith("<hook_context>git korus-mail: ") \
        and parts[0].endswith("</hook_context>\n\nhi"), parts
    assert run.response == "carrying on"


@pytest.mark.skipif(__import__("shutil").which("tmux") is None, reason="tmux is not installed")
def test_an_idle_gemini_session_cannot_be_woken_send_says_so_and_its_next_prompt_shows_the_mail(
        clone, gemini, geminimock, home, wired, tmp_path):
    """The terminal UI in tmux: idle after SessionStart; send's verdict says it is not wakeable;
    the next prompt shows the mail with our line to the person under the prompt."""
    from tmuxpane import UNKNOWN, Pane
    env = gemini.env()
    argv = " ".join(f"{k}='{v}'" for k, v in env.items() if k in ("HOME", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL",
                                                                   "GEMINI_CLI_NO_RELAUNCH", "PATH", "NO_COLOR"))
    geminimock.set_script([text("read it")])
    # CI=true: Gemini's UI would not start
    pane = Pane.start(f"korus-gemini-{os.getpid()}-{tmp_path.name}",
                      f"env -u CI {argv} '{gemini.binary}' -m gemini-2.5-flash", cwd=clone.web, width=200, height=50)
    try:
        pane.wait_for("Type your message", timeout=60)
        for _ in range(300):
            who = json.loads(cli("who", "--json", cwd=clone.main, home=home).stdout)["sessions"]
            live = [s for s in who if s.get("client") == "gemini" and s.get("state") == "idle"]
            if live:
                break
            time.sleep(0.1)
        assert live and live[0].get("surface") == "terminal", who
        sent = cli("send", "--to", "../web", "--json", "the idle one gets it later", cwd=clone.main, home=home)
        [verdict] = json.loads(sent.stdout)["results"]
        assert verdict["verdict"] == "queued", verdict
        assert verdict["why"] == "the sessions there are idle and not wakeable; it is shown at their next prompt"
        time.sleep(2)
        assert not hook_texts(geminimock, "the idle one gets it later")  # no hook could wake it
        pane.keys("hello")
        pane.wait_for("> hello")  # in the input box
        # keys that arrive in one burst read as a paste, and for 40 ms after one Gemini's Enter
        # inserts a newline (InputPrompt: recentUnsafePasteTime)
        time.sleep(0.5)
        pane.keys("Enter")
        screen = pane.wait_for("shown to the model", timeout=60)
        assert "korus-mail: 1 message from ../api" in screen  # the person's line, in the terminal UI
        pane.wait_for("read it", timeout=60)  # the model answered: its request (drawn after our line) is logged
        assert hook_texts(geminimock, "the idle one gets it later")
        pane.wait_for("Type your message", timeout=60)  # the run is over: the prompt is back
        # /quit, and one Enter once Gemini's completion list is closed. While the list shows, an
        # Enter may complete "/quit " instead of running it (seen under load with the list
        # narrowed to quit alone); with the list closed by Esc, Enter submits the input. Never a
        # second Enter "in case": in CI run 14 the screen still showed "> /quit" a second after
        # the Enter that had quit, and the next send-keys met a pane that was gone.
        pane.keys("/quit")
        pane.wait_for("Exit the cli")  # the list is open (Esc before it opens would close nothing)
        pane.keys("Escape")
        for _ in range(600):
            screen = pane.screen()
            if "> /quit" in screen and "Exit the cli" not in screen:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(pane.why("the completion list never closed"))
        time.sleep(0.5)  # past the paste window (above)
        pane.keys("Enter")
        assert pane.wait_dead(60) in (0, UNKNOWN), pane.last_screen()
        for _ in range(100):  # SessionEnd is Gemini's best effort, not awaited: its hook may outlive it
            who = json.loads(cli("who", "--json", cwd=clone.main, home=home).stdout)["sessions"]
            if any(s.get("client") == "gemini" and s.get("state") == "closed" for s in who):
                break
            time.sleep(0.1)
        assert [s.get("last_event") for s in who if s.get("client") == "gemini"] == ["SessionEnd"], pane.last_screen()
        status = json.loads(cli("status", "--json", cwd=clone.main, home=home).stdout)
        assert status["sent"][0]["fate"]["state"] == "consumed"
    finally:
        pane.kill()


def test_a_sigkilled_gemini_launch_consumes_nothing_and_its_resume_is_shown_the_mail_before_consuming_it(
        clone, gemini, geminimock, home, wired):
    """Shown by a launch that is then SIGKILLed (no AfterAgent): the mail stays queued; the resumed
    session is a new launch, is shown it again in its own request, and only then consumes it."""
    import invariants
    geminimock.set_script([text("first")])
    sid = gemini.run("first", cwd=clone.web).check().session_id
    cli("send", "--to", "../web", "for the launch that lives", cwd=clone.main, home=home)
    import threading
    started, release = [], threading.Event()

    def hang(_request):
        started.append(time.monotonic())
        release.wait(60)  # the doomed launch's model never answers; the test kills it first
        return text("never")
    geminimock.set_script([hang])
    doomed = gemini.start("second", cwd=clone.web, resume=sid)
    for _ in range(600):
        if started:
            break
        time.sleep(0.05)
    assert started, "the doomed launch never asked its model"
    assert hook_texts(geminimock, "for the launch that lives")  # shown to the doomed launch's model
    os.killpg(doomed.pid, 9)
    doomed.wait()
    release.set()
    [msg] = [p for p in (clone.mail_root / "box").glob("*/inbox/*.json")]  # not consumed: no AfterAgent ran
    assert not list((clone.mail_root / "box").glob("*/receipts/*"))
    before = len(geminimock.agent_requests())
    geminimock.set_script([text("got it")])
    gemini.run("third", cwd=clone.web, resume=sid).check()
    resumed = geminimock.agent_requests()[before:]
    # shown anew to this launch, in its own hook context (not only in the replayed history)
    assert any("for the launch that lives" in t and "<hook_context>" in t
               for t in resumed[0].texts("user")[-2:]), [r.texts("user")[-2:] for r in resumed]
    [receipt] = [json.loads(p.read_text()) for p in (clone.mail_root / "box").glob("*/receipts/*")]
    assert receipt["session"] == sid and str(receipt["launch"]["pid"]) != str(doomed.pid)
    assert not msg.exists()
    invariants.check(str(clone.mail_root), killed_debris_ok=True)


def test_mail_at_after_tool_survives_geminis_cut_of_a_long_shell_output_whole_frames_only(
        clone, gemini, geminimock, home, wired, tmp_path):
    """AfterTool's context is appended to the shell tool's output, which Gemini cuts above 40,000
    UTF-16 units to its first 20% and last 80%; Gemini also escapes each `<` to `&lt;` (4 units).
    The batch is fitted at whole messages in UTF-16 units under 7,000 (clients/gemini), so even
    bodies made of `<` stay whole frames in the kept tail (measured: 7,124 units after escaping).
    (--approval-mode yolo: the command is not `git korus-mail` alone; a permissive second test.)"""
    script = tmp_path / "mid-run.sh"  # Gemini refuses a command with $(...) in it, yolo or not
    script.write_text('cd ../api && for i in 1 2 3; do git korus-mail send --to ../web "lt-$i $(printf "%03000d" 0 | '
                      'tr 0 "<")" >/dev/null; done; printf "%045000d\\n" 0\n')
    send = f"sh {script}"
    geminimock.set_script([shell(send), text("read them")])
    gemini.run("work", cwd=clone.web, yolo=True).check()
    [resp] = [r for r in geminimock.agent_requests() if r.function_responses()][:1]
    out = resp.function_responses()[0]
    assert "Output too large" in out  # Gemini did cut the tool's output ...
    tail = out[out.index("characters omitted"):]
    context = tail[tail.index("<hook_context>"):tail.index("</hook_context>") + len("</hook_context>")]
    # ... and our context, at its end, is whole in the kept tail: every frame opened is closed, and
    # each long body is cut by the core at its own note, never by Gemini
    lines = context.split("\n")
    begins = [ln for ln in lines if ln.startswith("[mail ") and ln.endswith(" begin]")]
    ends = [ln.replace("</hook_context>", "") for ln in lines if ln.startswith("[mail ") and " end]" in ln]
    assert len(begins) == len(ends) == 3 and [b[:-len("begin]")] for b in begins] == [e[:-len("end]")] for e in ends]
    assert [n for n in (1, 2, 3) if f"| lt-{n} &lt;&lt;" in context] == [1, 2, 3]  # escaped by Gemini
    assert context.count("[body cut: ") == 3
    assert len(context) < 32000 - 1000  # the kept tail's 80%, with the tool's last lines beside it


# -- stop_hook_active: another AfterAgent hook of the person's own that continues the run once, and
# logs every AfterAgent payload it is given (docs/CLIENTS.md, "Gemini CLI: events")
DENY_ONCE = r'''
import json, os, sys
payload = json.load(sys.stdin)
log, mark = sys.argv[1], sys.argv[2]
with open(log, "a") as f:
    f.write(json.dumps({k: payload.get(k) for k in ("stop_hook_active", "prompt_response", "prompt")}) + "\n")
if not os.path.exists(mark):
    open(mark, "w").close()
    print(json.dumps({"decision": "deny", "reason": "check your answer once more"}))
'''


def _add_deny_once_hook(home, tmp_path):
    script, log, mark = tmp_path / "deny_once.py", tmp_path / "after_agent.jsonl", tmp_path / "denied"
    script.write_text(DENY_ONCE)
    path = home / ".gemini" / "settings.json"
    data = json.loads(path.read_text())
    data.setdefault("hooks", {}).setdefault("AfterAgent", []).append(
        {"hooks": [{"type": "command", "command": f"{sys.executable} {script} {log} {mark}", "timeout": 30000}]})
    path.write_text(json.dumps(data, indent=2) + "\n")
    return log


def test_another_after_agent_hook_that_continues_the_run_what_ours_sees_and_answers(
        clone, gemini, geminimock, home, wired, tmp_path):
    """Observed on 0.61.0: the hooks of one event run together and none learns another's
    decision, so at the first AfterAgent (stop_hook_active false, the text so far) ours cannot know
    the run will go on; the continued run's AfterAgent has stop_hook_active true and the WHOLE
    run's text (Gemini's cumulative response), and the original prompt. The question is answered
    once, at the first AfterAgent, with the text so far; the continuation answers nothing again
    and consumes nothing twice. (docs/CLIENTS.md says why no client can do better here.)"""
    log = _add_deny_once_hook(home, tmp_path)
    cli("send", "--to", "../web", "a note before the run", cwd=clone.main, home=home)

    def wait_for_question(_request):
        for _ in range(600):
            if len(list((clone.mail_root / "box").glob("*/inbox/*.json"))) >= 2:
                break
            time.sleep(0.05)
        return call("list_directory", {"dir_path": str(clone.web)})
    geminimock.set_script([wait_for_question, text("a first draft: forty"), text("checked again: forty-two")])
    worker = gemini.start("work on it", cwd=clone.web)
    for _ in range(600):
        if [p for p in (clone.mail_root / "box").glob("*/sessions/*.json") if '"working"' in p.read_text()]:
            break
        time.sleep(0.05)
    asked = cli("ask", "--to", "../web", "--timeout", "90", "--json", "what is six times seven?",
                cwd=clone.main, home=home)
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(s["stop_hook_active"], s["prompt_response"]) for s in seen] == [
        (False, "a first draft: forty"),
        (True, "a first draft: forty\nchecked again: forty-two")], seen
    assert seen[0]["prompt"] == seen[1]["prompt"] and seen[1]["prompt"].endswith("work on it"), seen
    answer = json.loads(asked.stdout)
    assert (answer["status"], answer["how"], answer["body"]) == ("done", "automatic", "a first draft: forty"), answer
    # web's box: one receipt per message (the note, the question), none again at the continuation;
    # the asker's box: the one answer, which its `ask` took
    box = clone.mail_root / "box"
    [web] = box.glob("web-*")
    assert len(list((web / "receipts").iterdir())) == 2, sorted(p.name for p in (web / "receipts").iterdir())
    assert len([p for p in box.glob("api-*/receipts/*")]) == 1
    import invariants
    invariants.check(str(clone.mail_root))
