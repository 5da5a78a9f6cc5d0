"""The cross-vendor matrix: each ordered pair of {Claude Code, Codex CLI, Gemini CLI}, each the
real CLI offline against its own loopback mock, in two worktrees of one clone wired by
`git korus-mail install --client all`. The sender's model runs `git korus-mail` from its own
shell tool; the receiver is shown the mail by its hooks and consumes it at the end of its run.

Scenarios, per ordered pair (sender -> receiver):
- `message`: a note sent, shown to the receiver's model, consumed by the receiver's session;
- `auto`: a question the sender's model asks while the receiver works; the receiver never
  replies, and its run's final text comes back as the answer, in the asker's tool result;
- `reply`: the same question answered by the receiver's model running `git korus-mail reply`.

Codex runs in its DEFAULT sandbox (no -s, no bypass flag): the person trusted both worktrees in
Codex before install (their choice, never install's), so its default is workspace-write, and the
clone and CODEX_HOME live under /var/tmp, outside the roots Codex adds (/tmp, $TMPDIR) to the
workdir, whose .git it mounts read-only; install adds only the mail root to `writable_roots`
(docs/CLIENTS.md, "Codex CLI: the sandbox"). In a project the person has NOT trusted the default
is read-only: test_codex_read_only_default_* below proves what still works there and the one
line the model's command gets where it cannot. Gemini runs in its default approval mode with the
person's one allow line for `git korus-mail` (test_gemini_e2e.py); Claude Code in its default
permission mode (no --dangerously-skip-permissions) with the person's one allow rule,
`Bash(git korus-mail:*)` in its user settings, which install tells and never writes; without it
the model's send is refused (test_claude_default_mode_e2e.py). The permissive mode is the second
test everywhere else (test_scenarios.py and the other Claude Code e2e files).
A killed launch of each client, then its resume: test_resume_after_kill.py
(Claude Code, every way it starts), and here for each client alike
(test_a_killed_launch_then_its_resume).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from test_codex_sandbox_e2e import sandbox_of, tool_outputs  # what Codex's runs say, read alike

pytestmark = pytest.mark.e2e

HELPER_BIN = os.path.dirname(sys.executable)
HELPER = os.path.join(HELPER_BIN, "git-korus-mail")
PATH = HELPER_BIN + os.pathsep + os.environ.get("PATH", "")
CLIENTS = ("claude", "codex", "gemini")
PAIRS = [(a, b) for a in CLIENTS for b in CLIENTS if a != b]
REPLY_HINT = re.compile(r"git korus-mail reply (\S+) --")


@pytest.fixture
def clone(outside):
    """The clone (and CODEX_HOME beside it) outside every writable root of Codex's default
    sandbox, so that only the mail root install adds to writable_roots lets a send through."""
    from helpers import Clone
    c = Clone(outside)
    c.web = c.add_worktree("web")
    return c


class Agent:
    """One client's real CLI and its mock, driven by abstract turns: ("shell", cmd), ("text", t),
    or a callable (request text -> turn) computed when the request arrives."""

    def __init__(self, name, request, tmp_path, home, clone=None, codex_trusted=True):
        self.name = name
        self.sandboxes = []  # Codex: the sandbox each run reported (`sandbox: …` on its stderr)
        self.home = home if name == "gemini" else tmp_path / f"{name}-home"  # Gemini's config is $HOME/.gemini
        if name == "codex" and clone is not None:
            self.home = clone.base / "codex-home"  # outside the sandbox's writable roots, as the clone is
        if name == "claude":
            from driver import Claude
            from mockapi import MockAPI
            self.mock = MockAPI(log_path=str(tmp_path / "claude-mock.jsonl")).start()
            # Claude Code's default permission mode (no flag), with the person's one allow rule
            # that install tells (docs/CLIENTS.md, "Claude Code: its permission mode")
            self.cli = Claude(request.getfixturevalue("claude_bin"), self.mock, tmp_path / "claude-config",
                              env={"PATH": PATH})
            self.cli.allow_mail_commands()
        elif name == "codex":
            from codexdriver import Codex
            from codexmock import ResponsesMock
            self.mock = ResponsesMock()
            self.cli = Codex(request.getfixturevalue("codex_bin"), self.mock, self.home, path_prefix=HELPER_BIN)
            if clone is not None and codex_trusted:
                self.trust_in_codex(clone.main, clone.web)
        else:
            from geminidriver import Gemini
            from geminimock import GeminiMock
            self.mock = GeminiMock()
            self.cli = Gemini(request.getfixturevalue("gemini_bin"), self.mock, self.home, path_prefix=HELPER_BIN)
            self.cli.allow_mail_commands()

    def trust_in_codex(self, *worktrees):
        """The person's own choice, made in Codex before install: these projects are trusted, so
        Codex's default sandbox there is workspace-write (untrusted: read-only)."""
        with open(self.home / "config.toml", "a") as f:
            for wt in worktrees:
                f.write(f'\n[projects."{wt}"]\ntrust_level = "trusted"\n')

    # -- turns in the client's own mock vocabulary
    def turn(self, step):
        kind, arg = step
        if self.name == "claude":
            from mockapi import bash, text
            return bash(arg) if kind == "shell" else text(arg)
        if self.name == "codex":
            from codexmock import shell, text
            return shell(f"export PATH='{HELPER_BIN}':$PATH; " + arg) if kind == "shell" else text(arg)
        from geminimock import shell, text
        return shell(arg) if kind == "shell" else text(arg)

    def script(self, steps):
        items = []
        for step in steps:
            if callable(step):
                items.append(lambda request, f=step: self.turn(f(request.decoded_text())))
            else:
                items.append(self.turn(step))
        self.mock.set_script(items)

    def run(self, prompt, cwd, resume=None):
        if self.name == "codex":  # no -s: Codex's own default sandbox
            run = self.cli.run(prompt, cwd=cwd, resume=resume, sandbox=None).check()
            self.sandboxes.append(sandbox_of(run))
            self.outputs = tool_outputs(self.mock)
            return run.session_id
        run = self.cli.run(prompt, cwd=cwd, resume=resume).check()
        if self.name == "claude":  # its default permission mode refused nothing the allow rule covers
            assert "--dangerously-skip-permissions" not in run.argv and not run.data.get("permission_denials"), \
                run.describe()
        return run.session_id

    def start_doomed(self, prompt, cwd, resume):
        """A resumed run as a process group of its own, for the test to SIGKILL."""
        if self.name == "claude":
            argv, env = self.cli.argv(prompt, resume=resume), self.cli.env(None)
        elif self.name == "codex":
            argv, env = [self.cli.binary, "exec", "resume", resume, prompt], self.cli.env()
        else:
            argv, env = self.cli.argv(prompt, resume), self.cli.env()
        return subprocess.Popen(argv, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    def start(self, prompt, cwd):
        """A run in the background; returns a function that waits for it and gives its session id."""
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("sid", self.run(prompt, cwd)), daemon=True)
        t.start()

        def finish(timeout=180):
            t.join(timeout)
            assert not t.is_alive(), f"{self.name} did not finish"
            return box.get("sid")
        return finish

    def saw(self, needle):
        return any(needle in r.decoded_text() for r in self.mock.agent_requests())

    def env(self):
        return {"CODEX_HOME": str(self.home), "KORUS_MAIL_CODEX": self.cli.binary} if self.name == "codex" else {}

    def close(self):
        if self.name != "codex":
            self.cli.cleanup()
        self.mock.stop()


def cli(*args, cwd, env, check=True):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "GEMINI"))}
    full.update(PATH=PATH, **env)
    proc = subprocess.run([HELPER, *args], cwd=str(cwd), env=full, capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, f"git-korus-mail {args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@contextlib.contextmanager
def _installed(request, clone, tmp_path, names, codex_trusted=True):
    """The agents `names`, each client installed in the clone under one HOME (Gemini's, and the
    HOME every client runs under here), with the person's own choices made: Gemini trusts both
    worktrees (test_gemini_e2e.py), Codex trusts them when `codex_trusted`. Yields (agents, env)."""
    home = tmp_path / "home"
    home.mkdir()
    agents = {}
    try:
        for name in names:
            agents[name] = Agent(name, request, tmp_path, home, clone, codex_trusted=codex_trusted)
        env = {"HOME": str(home)}
        if "gemini" in agents:
            agents["gemini"].cli.trust(clone.main, clone.web)
        for agent in agents.values():
            env.update(agent.env())
        for name in sorted(agents):
            cli("install", "--client", name, cwd=clone.main, env=env)
        yield agents, env
    finally:
        for agent in agents.values():
            agent.close()


@pytest.fixture
def pair(request, clone, tmp_path):
    sender_name, receiver_name = request.param
    with _installed(request, clone, tmp_path, (sender_name, receiver_name)) as (agents, env):
        yield agents[sender_name], agents[receiver_name], env
        if "codex" in agents:  # every Codex run was in its default sandbox, workspace-write here
            assert agents["codex"].sandboxes and all((s or "").startswith("workspace-write")
                                                     for s in agents["codex"].sandboxes), agents["codex"].sandboxes


def _inbox_has_question(clone):
    return any('"question"' in p.read_text() or '"kind": "question"' in p.read_text()
               for p in (clone.mail_root / "box").glob("*/inbox/*.json"))


def _wait(pred, timeout=60, what="condition"):
    for _ in range(int(timeout * 20)):
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _working(clone):
    return any('"working"' in p.read_text() for p in (clone.mail_root / "box").glob("*/sessions/*.json"))


@pytest.mark.parametrize("pair", PAIRS, indirect=True, ids=[f"{a}-to-{b}" for a, b in PAIRS])
def test_message(pair, clone):
    sender, receiver, env = pair
    _note(sender, receiver, clone, env, f"matrix note from {sender.name} to {receiver.name}")


def _note(sender, receiver, clone, env, body):
    """The sender's model sends `body` to web; the receiver's next run is shown it and consumes it."""
    sender.script([("shell", f'git korus-mail send --to ../web "{body}"'), ("text", "sent")])
    sender.run("tell web", clone.main)
    receiver.script([("text", "noted")])
    sid = receiver.run("anything new?", clone.web)
    assert receiver.saw(body)
    [sent] = json.loads(cli("status", "--json", cwd=clone.main, env=env).stdout)["sent"]
    assert sent["fate"]["state"] == "consumed" and sent["fate"]["session"] == sid, sent


def _asked(sender, receiver, clone, env, answer_steps, expect):
    question = f"matrix question from {sender.name}: what is six times seven"

    def hold(_text):
        _wait(lambda: _inbox_has_question(clone), 90, "the question in web's inbox")
        return ("shell", "git korus-mail status")  # a tool call: the question is shown after it
    receiver.script([hold, *answer_steps])
    finish = receiver.start("work on it", clone.web)
    _wait(lambda: _working(clone), 90, f"{receiver.name} at work in web")
    sender.script([("shell", f'git korus-mail ask --to ../web --timeout 100 "{question}"'), ("text", "asked")])
    sender.run("ask web", clone.main)
    finish()
    assert receiver.saw(question)
    assert sender.saw(expect), f"{sender.name}'s model never saw {expect!r} in its tool result"


@pytest.mark.parametrize("pair", PAIRS, indirect=True, ids=[f"{a}-to-{b}" for a, b in PAIRS])
def test_ask_answered_by_the_automatic_answer(pair, clone):
    sender, receiver, env = pair
    final = f"{receiver.name} says forty-two"
    _asked(sender, receiver, clone, env, [("text", final)], final)


@pytest.mark.parametrize("pair", PAIRS, indirect=True, ids=[f"{a}-to-{b}" for a, b in PAIRS])
def test_ask_answered_by_reply(pair, clone):
    sender, receiver, env = pair
    answer = f"{receiver.name} replies forty-two"

    def reply(text):
        m = REPLY_HINT.search(text)
        assert m, "no reply hint shown to the receiver"
        return ("shell", f'git korus-mail reply {m.group(1)} -- "{answer}"')
    _asked(sender, receiver, clone, env, [reply, ("text", "replied, and this is not the answer")], answer)


@pytest.fixture
def one(request, clone, tmp_path):
    with _installed(request, clone, tmp_path, (request.param,)) as (agents, env):
        yield agents[request.param], env


@pytest.mark.parametrize("one", CLIENTS, indirect=True)
def test_a_killed_launch_then_its_resume_consumes_nothing_unseen(one, clone):
    """Mail shown to a resumed launch that is SIGKILLed before its run ends is not consumed;
    the next resume (a new launch of the same session) is shown it in its own requests, and only
    its end consumes it, naming that launch."""
    import invariants
    agent, env = one
    agent.script([("text", "first")])
    sid = agent.run("first", clone.web)
    body = f"for {agent.name}'s launch that lives"
    cli("send", "--to", "../web", body, cwd=clone.main, env=env)
    asked, release = [], threading.Event()

    def hang(text):
        asked.append(text)
        release.wait(60)
        return ("text", "never read")
    agent.script([hang])
    doomed = agent.start_doomed("second", clone.web, sid)
    try:
        _wait(lambda: asked, 90, f"the doomed {agent.name} launch asking its model")
        assert any(body in t for t in asked)  # shown to the doomed launch's model, in the request it hangs on
    finally:
        os.killpg(doomed.pid, 9)
        doomed.wait()
        release.set()
    inbox = list((clone.mail_root / "box").glob("*/inbox/*.json"))
    assert len(inbox) == 1 and not list((clone.mail_root / "box").glob("*/receipts/*"))
    before = len(agent.mock.agent_requests())
    agent.script([("text", "got it")])
    assert agent.run("third", clone.web, resume=sid) in (None, sid)
    assert any(body in r.decoded_text() for r in agent.mock.agent_requests()[before:])
    [receipt] = [json.loads(p.read_text()) for p in (clone.mail_root / "box").glob("*/receipts/*")]
    assert receipt["session"] == sid and receipt["launch"]["pid"] != doomed.pid, receipt
    invariants.check(str(clone.mail_root), killed_debris_ok=True)


READ_ONLY_LINE = ("git korus-mail: Codex runs this command in its read-only sandbox (CODEX_PERMISSION_PROFILE=:read-only), "
                  "where the mail root {root} cannot be written: start Codex with `--sandbox workspace-write` (or trust "
                  "this project in Codex); `git korus-mail install --client codex` makes the mail root writable there")


@pytest.fixture
def untrusted(request, clone, tmp_path):
    """A sender and Codex in a project the person has NOT trusted in Codex: Codex's default
    sandbox there is read-only."""
    with _installed(request, clone, tmp_path, (request.param, "codex"), codex_trusted=False) as (agents, env):
        yield agents[request.param], agents["codex"], env
        sandboxes = agents["codex"].sandboxes
        assert sandboxes and all(s == "read-only" for s in sandboxes), sandboxes


def _flat(text):
    return " ".join(text.split())


@pytest.mark.parametrize("untrusted", ("claude", "gemini"), indirect=True)
def test_codex_read_only_default_receives_consumes_and_answers_but_cannot_send(untrusted, clone):
    """Codex's default in a project nobody trusted is read-only: its hooks (outside the sandbox)
    still show mail, consume it and give the automatic answer; the model's own reply and ask
    fail with the one line that names the fix, and the asker still gets the automatic answer."""
    sender, codex, env = untrusted
    root = os.path.realpath(clone.mail_root)
    _note(sender, codex, clone, env, f"read-only note from {sender.name}")

    final = "codex says forty-two from read-only"

    def reply(text):
        m = REPLY_HINT.search(text)
        assert m, "no reply hint shown to Codex"
        return ("shell", f'git korus-mail reply {m.group(1)} -- "a reply"; '
                         'git korus-mail ask --to ../api --timeout 1 "a question back"; echo rc=$?')
    _asked(sender, codex, clone, env, [reply, ("text", final)], final)
    out = codex.outputs[-1]
    errors = [_flat(ln) for ln in out.splitlines() if ln.startswith("git korus-mail:")]
    assert errors == [_flat(READ_ONLY_LINE.format(root=root))] * 2 and "rc=1" in out, out
