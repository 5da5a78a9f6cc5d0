"""`who`: the roster of every session the clone knows, and `send --to <session name>` (issue 13).

Real clones with real linked worktrees; every hook event is its own `git-korus-mail drain`
process, and each Claude Code launch is stood in for by a real process whose pid the hooks get
as CLAUDE_PID (its start time read from /proc here, not by the product). Claude Code's own
registry, `<config dir>/sessions/<pid>.json`, is written by the tests in the shape 2.1.332
writes it (docs/CLIENTS.md), so each claim it makes can be true or false on purpose.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from helpers import context_of, hook, proc_start_ticks, run_cli
from git_korus_mail.core import keys

S1 = "3a41ebd9-4ef9-482f-bdd5-d8b563fac427"
S2 = "5b52fcea-5f0a-493a-8ce6-e9c674fbd538"
S3 = "6c63adfb-6a1b-4a4b-9df7-fad785acd649"
LONG_AGO = "2026-01-01T00:00:00.000000Z"  # a hook event far older than NOT_RESPONDING_SECONDS


class FakeClaude:
    """A real process standing in for one Claude Code launch, under config root `config`."""

    def __init__(self, config):
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        self.pid = self.proc.pid
        self.start = proc_start_ticks(self.pid)
        self.config = str(config)

    def env(self, entrypoint="cli"):
        return {"CLAUDE_PID": str(self.pid), "CLAUDE_CONFIG_DIR": self.config,
                "CLAUDE_CODE_ENTRYPOINT": entrypoint}

    def hook(self, event, cwd, session, entrypoint="cli"):
        return hook(event, cwd, session, env=self.env(entrypoint))

    def register(self, session, cwd, name, status="idle", start=None, updated_ms=1):
        """Write this process's registry entry as Claude Code 2.1.332 does."""
        folder = os.path.join(self.config, "sessions")
        os.makedirs(folder, exist_ok=True)
        entry = {"pid": self.pid, "sessionId": session, "cwd": str(cwd), "startedAt": 1796104896634,
                 "procStart": str(self.start if start is None else start), "version": "2.1.332",
                 "kind": "interactive", "entrypoint": "cli", "name": name, "nameSource": "derived",
                 # as observed: its boot id is not /proc's boot_id, so it proves nothing here
                 "pidDomain": "linux:3d1219c7c4c5404aaa1f6d2a48adfda4:pid:[4026531836]",
                 "status": status, "updatedAt": updated_ms, "statusUpdatedAt": updated_ms}
        with open(os.path.join(folder, f"{self.pid}.json"), "w") as f:
            json.dump(entry, f)

    def sigkill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def launch(tmp_path):
    made = []

    def make(config="cfg-a"):
        f = FakeClaude(tmp_path / config)
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()


def who(clone, cwd=None):
    proc = run_cli("who", "--json", cwd=cwd or clone.main)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def row(data, session):
    rows = [r for r in data["sessions"] if r["session"] == session]
    assert len(rows) == 1, data["sessions"]
    return rows[0]


def presence_file(clone, wt, session):
    return clone.mail_root / "box" / keys.key_for(str(wt)).name / "sessions" / (session + ".json")


# -- each state ------------------------------------------------------------------------
def test_idle_then_working_then_closed_each_with_the_time_of_its_event(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    r = row(who(clone), S1)
    rec = json.loads(presence_file(clone, clone.web, S1).read_text())
    assert (r["state"], r["as_of"], r["worktree"], r["branch"]) == ("idle", rec["at"], str(clone.web), "web")
    assert (r["config_root"], r["surface"], r["pid"], r["hooks"]) == (c.config, "terminal", c.pid, True)
    c.hook("UserPromptSubmit", clone.web, S1)
    assert row(who(clone), S1)["state"] == "working"
    c.hook("SessionEnd", clone.web, S1)
    r = row(who(clone), S1)
    assert r["state"] == "closed"
    text = run_cli("who", cwd=clone.main).stdout
    assert f"{S1}  closed " in text and " ago" in text


def test_a_session_whose_process_was_killed_without_ending_is_gone(clone, launch):
    c = launch()
    c.hook("UserPromptSubmit", clone.web, S1)
    assert row(who(clone), S1)["state"] == "working"
    c.sigkill()
    assert row(who(clone), S1)["state"] == "gone"
    assert "gone" in run_cli("who", cwd=clone.main).stdout


def test_a_reused_pid_does_not_keep_a_session_alive(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    path = presence_file(clone, clone.web, S1)
    rec = json.loads(path.read_text())
    pid, start, boot = rec["launch"].split("-")
    rec["launch"] = f"{pid}-{int(start) - 1}-{boot}"  # the same pid, an older process
    path.write_text(json.dumps(rec))
    assert row(who(clone), S1)["state"] == "gone"


def test_working_with_no_hook_event_for_long_is_not_responding(clone, launch):
    c = launch()
    c.hook("UserPromptSubmit", clone.web, S1)
    path = presence_file(clone, clone.web, S1)
    rec = json.loads(path.read_text())
    rec["at"] = LONG_AGO
    path.write_text(json.dumps(rec))
    r = row(who(clone), S1)
    assert (r["state"], r["as_of"]) == ("not responding", LONG_AGO)
    rec["state"] = "idle"  # idle that long is just idle
    path.write_text(json.dumps(rec))
    assert row(who(clone), S1)["state"] == "idle"


def test_tool_calls_that_leave_no_hook_event_still_show_in_the_transcript(clone, launch):
    """The stub answers a tool call with nothing new without Python (docs/HOOKS.md, "The fast
    path"), so presence keeps the time of an older event; Claude Code's transcript still grows."""
    c = launch()
    c.hook("UserPromptSubmit", clone.web, S1)
    path = presence_file(clone, clone.web, S1)
    rec = json.loads(path.read_text())
    rec["at"] = LONG_AGO
    path.write_text(json.dumps(rec))
    slug = "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in str(clone.web))
    transcript = os.path.join(c.config, "projects", slug, S1 + ".jsonl")
    os.makedirs(os.path.dirname(transcript))
    with open(transcript, "w") as f:
        f.write('{"type": "assistant"}\n')  # written just now
    r = row(who(clone), S1)
    assert (r["state"], r["as_of"]) == ("working", LONG_AGO) and r["last_activity"] is not None, r
    os.utime(transcript, (1767225600, 1767225600))  # 2026-01-01T00:00:00Z: as old as the event
    r = row(who(clone), S1)
    assert (r["state"], r["last_activity"]) == ("not responding", "2026-01-01T00:00:00.000000Z"), r


def test_waiting_and_wakeable_come_from_the_hooks_ask_and_wake_fill(clone, launch, monkeypatch):
    from git_korus_mail.core import roster, roster_hooks
    from git_korus_mail.core.clone import Clone
    from git_korus_mail import clients
    a, b = launch(), launch()
    a.hook("SessionStart", clone.web, S1)
    b.hook("SessionStart", clone.main, S2)
    monkeypatch.setattr(roster_hooks, "waiting_for",
                        lambda box, rec: {"id": "q-1"} if rec["session"] == S1 else None)
    monkeypatch.setattr(roster_hooks, "wakeable_until", lambda box, rec: "2026-12-01T12:00:00.000000Z")
    data = roster.collect(Clone(cwd=str(clone.main)), clients.sessions)
    assert (row(data, S1)["state"], row(data, S1)["waiting_for"]) == ("waiting", {"id": "q-1"})
    assert (row(data, S2)["state"], row(data, S2)["wakeable_until"]) == ("idle", "2026-12-01T12:00:00.000000Z")


def test_before_wake_and_ask_fill_their_hooks_nobody_is_waiting_or_wakeable(clone, launch):
    launch().hook("SessionStart", clone.web, S1)
    r = row(who(clone), S1)
    assert (r["state"], r["wakeable_until"], r["waiting_for"]) == ("idle", None, None)


# -- the client's registry: a claim, checked --------------------------------------------
def test_the_registry_names_a_running_session_and_its_newer_status_wins(clone, launch):
    c = launch()
    c.hook("UserPromptSubmit", clone.web, S1)
    c.register(S1, clone.web, "web-4f", status="idle", updated_ms=4102444800000)  # 2100: newer than the hook
    r = row(who(clone), S1)
    assert (r["name"], r["state"], r["as_of"]) == ("web-4f", "idle", "2100-01-01T00:00:00.000000Z")
    c.register(S1, clone.web, "web-4f", status="idle", updated_ms=1000)  # 1970: older than the hook
    assert row(who(clone), S1)["state"] == "working"


def test_a_ghost_entry_names_nobody(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    c.register(S1, clone.web, "real")
    ghost = launch()
    ghost.register(S2, clone.web, "ghost")
    ghost.sigkill()  # its file stays, as a crashed Claude Code's does
    reused = launch()
    reused.register(S3, clone.web, "reused", start=reused.start + 1)  # its pid, another process's start
    data = who(clone)
    assert [r["name"] for r in data["sessions"]] == ["real"]
    assert data["config_roots"] == [{"path": c.config, "client": "claude", "ghosts": 2}]


def test_after_clear_the_new_id_is_shown_not_the_registrys_stale_one(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    c.hook("SessionEnd", clone.web, S1)    # /clear ends the old id ...
    c.hook("SessionStart", clone.web, S2)  # ... and starts a new one in the same process
    c.register(S1, clone.web, "web-1")     # a registry that still says the old id
    data = who(clone)
    assert (row(data, S2)["state"], row(data, S2)["name"]) == ("idle", "web-1")
    assert row(data, S1)["state"] == "closed"
    assert data["worktrees"][0]["live_sessions"] == 1


def test_a_running_session_our_hooks_never_saw_is_listed_as_unreachable(clone, launch):
    launch().hook("SessionStart", clone.main, S1)
    stranger = launch()
    stranger.register(S2, clone.web / "sub", "web-9")
    r = row(who(clone), S2)
    assert (r["hooks"], r["worktree"], r["name"]) == (False, str(clone.web), "web-9")
    assert "mail does not reach it" in run_cli("who", cwd=clone.main).stdout


def test_two_config_roots_are_both_read(clone, launch):
    a, b = launch("cfg-a"), launch("cfg-b")
    a.hook("SessionStart", clone.web, S1)
    b.hook("SessionStart", clone.main, S2, entrypoint="sdk-cli")
    a.register(S1, clone.web, "web-a")
    b.register(S2, clone.main, "api-b")
    data = who(clone)
    assert {(r["name"], r["config_root"], r["surface"]) for r in data["sessions"]} == \
        {("web-a", a.config, "terminal"), ("api-b", b.config, "sdk")}
    assert "-p/SDK" in run_cli("who", cwd=clone.main).stdout


# -- two live sessions in one worktree --------------------------------------------------
def test_two_live_sessions_in_one_worktree_are_flagged_with_what_it_means(clone, launch):
    a, b = launch(), launch()
    a.hook("SessionStart", clone.web, S1)
    b.hook("SessionStart", clone.web, S2)
    warning = ("2 live sessions share this worktree's mail: both are shown each message, "
               "and only one of them consumes it")
    assert who(clone)["worktrees"][0]["shared"] == warning
    assert warning in " ".join(run_cli("who", cwd=clone.main).stdout.split())  # wrapped at 100 columns
    assert warning in " ".join(run_cli("list", cwd=clone.main).stdout.split())
    b.sigkill()
    assert who(clone)["worktrees"][0]["shared"] is None


# -- send --to <session name> -----------------------------------------------------------
def send(clone, *args, cwd=None):
    return run_cli("send", "--json", *args, cwd=cwd or clone.main)


def test_a_session_name_resolves_to_its_worktree_with_a_session_filter(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    c.register(S1, clone.web, "reviewer")
    proc = send(clone, "--to", "reviewer", "--", "for the reviewer only")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)["results"][0]
    assert (res["path"], res["session"]) == (str(clone.web), S1)
    box = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    msg = json.loads((box / "inbox" / (res["id"] + ".json")).read_text())
    assert (msg["to"]["path"], msg["session"]) == (str(clone.web), S1)
    other, _ = hook("UserPromptSubmit", clone.web, S2)  # another session of that worktree
    assert "for the reviewer only" not in (context_of(other) or "")
    mine, _ = c.hook("UserPromptSubmit", clone.web, S1)
    assert "for the reviewer only" in context_of(mine)


def test_ask_addresses_a_session_name_as_send_does(clone, launch):
    """ask --to <name>: the question goes to that session's worktree with its session filter."""
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    c.register(S1, clone.web, "reviewer")
    proc = run_cli("ask", "--to", "reviewer", "--timeout=1", "--json", "--", "which schema?", cwd=clone.main)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)  # nobody answered within the second
    inbox = clone.mail_root / "box" / keys.key_for(str(clone.web)).name / "inbox"
    [msg] = [json.loads(p.read_text()) for p in inbox.glob("*.json")]
    assert (msg["kind"], msg["to"]["path"], msg["session"]) == ("question", str(clone.web), S1)
    other, _ = hook("UserPromptSubmit", clone.web, S2)  # another session of that worktree
    assert "which schema?" not in (context_of(other) or "")


def test_two_running_sessions_with_one_name_are_refused_with_the_candidates(clone, launch):
    a, b = launch(), launch()
    a.hook("SessionStart", clone.web, S1)
    b.hook("SessionStart", clone.main, S2)
    a.register(S1, clone.web, "twin")
    b.register(S2, clone.main, "twin")
    proc = send(clone, "--to", "twin", "--", "hello", cwd=clone.web)
    assert proc.returncode == 1
    err = json.loads(proc.stdout)["results"][0]["error"]
    assert "2 sessions are named twin" in err and S1 in err and S2 in err, err


def test_a_running_session_wins_over_a_closed_one_of_the_same_name(clone, launch):
    old, new = launch(), launch()
    old.hook("SessionStart", clone.web, S1)
    old.register(S1, clone.web, "builder")
    assert row(who(clone), S1)["name"] == "builder"  # who remembers the name ...
    old.hook("SessionEnd", clone.web, S1)
    os.unlink(os.path.join(old.config, "sessions", f"{old.pid}.json"))  # ... as Claude Code forgets it at exit
    assert row(who(clone), S1)["name"] == "builder"
    new.hook("SessionStart", clone.main, S2)
    new.register(S2, clone.main, "builder")
    proc = send(clone, "--to", "builder", "--", "hello", cwd=clone.web)
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["results"][0]["session"] == S2
    new.hook("SessionEnd", clone.main, S2)  # now two closed ones: ambiguous
    proc = send(clone, "--to", "builder", "--", "hello", cwd=clone.web)
    assert "2 sessions are named builder" in json.loads(proc.stdout)["results"][0]["error"]


@pytest.mark.parametrize("how", ["killed", "ended"])
def test_a_name_whose_session_no_longer_runs_is_refused_naming_both_choices(clone, launch, how):
    """Issue 21, item 9: mail sent by name to a session that is gone was filtered to it alone,
    so a new session in that worktree never saw it, while send said "shown when one starts"."""
    from install_fixtures import install
    install(clone.main)  # wired: without a hook, the verdict says nothing is wired to show it
    old = launch()
    old.hook("SessionStart", clone.web, S1)
    old.register(S1, clone.web, "builder")
    assert row(who(clone), S1)["name"] == "builder"
    if how == "killed":
        old.sigkill()
    else:
        old.hook("SessionEnd", clone.web, S1)
    state = row(who(clone), S1)["state"]
    assert state == ("gone" if how == "killed" else "closed")
    for dest in ("@builder", "builder"):
        proc = run_cli("send", "--to", dest, "--", "for the builder", cwd=clone.main)
        assert proc.returncode == 1 and proc.stdout == "", proc.stdout
        [line] = proc.stderr.splitlines()
        assert line.startswith(f"git korus-mail: not queued: {dest}: session builder ({S1}) is {state} since "), line
        assert line.endswith(f"; nothing queued: --to {clone.web} mails the worktree (any session there), or "
                             f"--to {clone.web} --session {S1} keeps it for a resume of that session alone"), line
    proc = run_cli("ask", "--to", "@builder", "--timeout=1", "--", "still there?", cwd=clone.main)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert f"nothing asked: ask --to {clone.web} asks whoever runs there" in proc.stderr, proc.stderr
    box = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    assert not list((box / "inbox").glob("*.json"))
    # choice 1, the worktree: a new session there is shown it
    assert run_cli("send", "--to", str(clone.web), "--", "for whoever works there", cwd=clone.main).returncode == 0
    # choice 2, a resume of that session alone: send says so, and so does the recipient's inbox
    proc = send(clone, "--to", str(clone.web), "--session", S1, "--", "for the builder's resume")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)["results"][0]
    assert res["verdict"] == "queued" and res["why"] == (
        f"for session {S1} alone, which is not running: it is shown only when that session is resumed; "
        f"no other session there is shown it"), res
    listed = run_cli("inbox", cwd=clone.web).stdout
    assert f"only for session {S1}, not shown yet; no other session sees it" in listed, listed
    new = launch()
    text = context_of(new.hook("UserPromptSubmit", clone.web, S2)[0])
    assert "for whoever works there" in text and "for the builder's resume" not in text
    resumed = launch()
    assert "for the builder's resume" in context_of(resumed.hook("SessionStart", clone.web, S1)[0])


def test_an_unknown_name_is_refused(clone, launch):
    launch().hook("SessionStart", clone.web, S1)
    proc = send(clone, "--to", "nobody", "--", "hello")
    assert proc.returncode == 1
    assert "no worktree, session name or box key matches" in json.loads(proc.stdout)["results"][0]["error"]
    proc = send(clone, "--to", "@nobody", "--", "hello")
    assert "no session is named nobody" in json.loads(proc.stdout)["results"][0]["error"]


def test_a_session_name_never_shadows_a_worktree_name_silently(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.main, S1)
    c.register(S1, clone.main, "web")  # a session in api named like the worktree web
    proc = send(clone, "--to", "web", "--", "hello")
    assert proc.returncode == 1
    err = json.loads(proc.stdout)["results"][0]["error"]
    assert "ambiguous" in err and "--to @web" in err, err
    by_path = json.loads(send(clone, "--to", "../web", "--", "hello", cwd=clone.main).stdout)["results"][0]
    assert (by_path["path"], by_path["session"]) == (str(clone.web), None)
    by_name = json.loads(send(clone, "--to", "@web", "--", "hello", cwd=clone.web).stdout)["results"][0]
    assert (by_name["path"], by_name["session"]) == (str(clone.main), S1)


def test_a_name_and_a_different_session_option_conflict(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    c.register(S1, clone.web, "reviewer")
    proc = send(clone, "--to", "reviewer", "--session", S2, "--", "hello")
    assert proc.returncode == 1 and "but --session says" in proc.stdout


def test_send_to_all_uses_the_same_liveness(clone, launch):
    third = clone.add_worktree("third")
    a, b = launch(), launch()
    a.hook("SessionStart", clone.web, S1)
    b.hook("SessionStart", third, S2)
    b.sigkill()  # gone in who: not mailed by --to all
    assert row(who(clone), S2)["state"] == "gone"
    res = json.loads(send(clone, "--to", "all", "--", "hello").stdout)["results"]
    assert [r["path"] for r in res] == [str(clone.web)]


# -- the registry reader (clients/claude/registry.py) ------------------------------------
# An entry as Claude Code 2.1.332 wrote it (docs/CLIENTS.md), pid and start made up.
OBSERVED = ('{"pid":25124,"sessionId":"841f6b54-7585-4dc0-bac2-bd414a18cd9c","cwd":"/tmp/who-probe/proj",'
            '"startedAt":1796121693609,"procStart":"1170610","version":"2.1.332","peerProtocol":1,'
            '"kind":"interactive","entrypoint":"sdk-cli","pidDomain":"linux:3d1219c7c4c5404aaa1f6d2a48adfda4:'
            'pid:[4026531836]","messagingSocketPath":"/tmp/cc-socks/25124.sock","name":"proj-2f",'
            '"nameSource":"derived","status":"busy","updatedAt":1796121697357,"statusUpdatedAt":1796121697357}')


def test_the_registry_reader_takes_claude_codes_entry_and_skips_what_is_not_one(tmp_path):
    from git_korus_mail.clients.claude import registry
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "25124.json").write_text(OBSERVED)
    (folder / "25124.7abfc6f8.key").write_text('{"peerToken": "x"}')  # the key file beside it
    (folder / "777.json").write_text('{"pid": 777, "sessionId": ')      # torn mid-write
    (folder / "notes.json").write_text('{"pid": 5}')                     # no pid in its name
    (folder / "888.json").write_text('{"pid": "888"}')                   # a pid that is no number
    assert registry.sessions(str(tmp_path)) == [{
        "client": "claude", "config_root": str(tmp_path), "pid": 25124, "start": 1170610,
        "session": "841f6b54-7585-4dc0-bac2-bd414a18cd9c", "cwd": "/tmp/who-probe/proj", "name": "proj-2f",
        "status": "working", "surface": "sdk", "kind": "interactive", "updated_at": 1796121697.357}]
    assert registry.sessions(str(tmp_path / "nowhere")) == []


@pytest.mark.parametrize("entrypoint, surface", [("cli", "terminal"), ("sdk-cli", "sdk"), ("sdk-ts", "sdk"),
                                                 ("claude-vscode", "editor"), (None, None)])
def test_the_surface_follows_claude_codes_entrypoint(entrypoint, surface):
    from git_korus_mail.clients.claude import protocol
    assert protocol.surface_of(entrypoint) == surface


def test_a_session_ending_keeps_the_name_its_registry_entry_had(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    c.register(S1, clone.web, "renamed-at-the-end")  # no `who` runs while it lives
    c.hook("SessionEnd", clone.web, S1)
    os.unlink(os.path.join(c.config, "sessions", f"{c.pid}.json"))  # Claude Code removes it at exit
    r = row(who(clone), S1)
    assert (r["state"], r["name"]) == ("closed", "renamed-at-the-end")
    other = launch()
    other.hook("SessionStart", clone.main, S2)
    other.register(S2, clone.main, "someone", start=other.start + 1)  # not this process's entry
    other.hook("SessionEnd", clone.main, S2)
    assert row(who(clone), S2)["name"] is None


def test_a_pid_with_no_launch_identity_does_not_keep_a_session_alive(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    path = presence_file(clone, clone.web, S1)
    rec = json.loads(path.read_text())
    rec["launch"] = "unknown"  # what a drain writes when the pid it was given ran no process it could see
    path.write_text(json.dumps(rec))
    assert row(who(clone), S1)["state"] == "gone"  # the pid runs now, but nothing says it is that process


def test_a_config_root_is_read_only_by_the_registry_of_the_client_that_recorded_it(clone, launch):
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    c.register(S1, clone.web, "claude-shaped")
    path = presence_file(clone, clone.web, S1)
    rec = json.loads(path.read_text())
    rec["client"] = "codex"  # a Codex session whose home happens to hold a file of that shape
    path.write_text(json.dumps(rec))
    data = who(clone)
    assert row(data, S1)["name"] is None
    assert data["config_roots"] == [{"path": c.config, "client": "codex", "ghosts": 0}]


def test_a_session_whose_ask_waits_for_its_answer_is_waiting(clone, launch):
    import time
    from git_korus_mail.store import answers
    from git_korus_mail.store.files import MailRoot
    c = launch()
    c.hook("SessionStart", clone.web, S1)
    rec = json.loads(presence_file(clone, clone.web, S1).read_text())
    root = MailRoot.open(str(clone.common_dir))
    api_box = keys.key_for(str(clone.main)).name
    # what `ask` run in that session's Bash tool records (its owner: this process, alive)
    answers.open_wait(root, "20261201T120000Z-00000000000000aa", rec["box"], api_box, time.time() + 600,
                      rec["launch"])
    r = row(who(clone), S1)
    assert r["state"] == "waiting" and r["waiting_for"]["id"] == "20261201T120000Z-00000000000000aa", r
    assert r["waiting_for"]["to"] == api_box
    assert "waiting as of" in run_cli("who", cwd=clone.main).stdout
    answers.close_wait(root, "20261201T120000Z-00000000000000aa")
    assert row(who(clone), S1)["state"] == "idle"


# -- the backlog judges what a recipient can read (issue 22, item 5) -------------------------
def test_a_full_backlog_for_an_ended_named_session_blocks_no_one_else(clone, launch):
    """Mail for `@builder` is filtered for its session: only it can read it. When builder ends
    with a full backlog, the worktree's other senders and its running session go on; builder's
    own sends stay refused, and its mail waits for its resume."""
    from helpers import git
    git("config", "korus-mail.backlog", "3", cwd=clone.main)  # the rule is the same at 50
    old = launch()
    old.hook("SessionStart", clone.web, S1)
    old.register(S1, clone.web, "builder")
    assert row(who(clone), S1)["name"] == "builder"
    for n in range(3):
        proc = send(clone, "--to", "@builder", "--", f"for builder {n}")
        assert proc.returncode == 0, proc.stdout
    full = send(clone, "--to", "@builder", "--", "for builder 3")  # builder's own backlog is full
    err = json.loads(full.stdout)["results"][0]["error"]
    assert full.returncode == 1 and "holds 3 unread" in err and "not queued" not in err, err
    old.hook("SessionEnd", clone.web, S1)
    old.sigkill()
    assert row(who(clone), S1)["state"] in ("closed", "gone")

    proc = send(clone, "--to", "web", "--", "for whoever works in web")
    assert proc.returncode == 0, proc.stdout  # refused before: "send again once they are read"
    live = launch()
    ctx = context_of(live.hook("SessionStart", clone.web, S2)[0])
    assert "for whoever works in web" in ctx and "held back" not in ctx and "for builder" not in ctx, ctx
    for body in ("second for web", "third for web"):
        proc = send(clone, "--to", "web", "--", body)
        assert proc.returncode == 0, proc.stdout
    ctx = context_of(live.hook("UserPromptSubmit", clone.web, S2)[0])  # builder's mail is skip-marked by now
    assert "second for web" in ctx and "third for web" in ctx and "held back" not in ctx, ctx
    refused = send(clone, "--to", "web", "--", "fourth for web")  # three queued that S2 can read: full
    assert refused.returncode == 1 and "holds 3 unread messages," in json.loads(refused.stdout)["results"][0]["error"]
    live.hook("Stop", clone.web, S2)

    resumed = launch()  # `claude --resume` keeps the session id: builder's mail was waiting for it
    ctx = context_of(resumed.hook("SessionStart", clone.web, S1)[0])
    assert all(f"for builder {n}" in ctx for n in range(3)), ctx
    import invariants
    invariants.check(clone.mail_root)
