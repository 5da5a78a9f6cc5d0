"""Gemini CLI's client module (clients/gemini/): its events through the client-free core, the
launch it proves from /proc, the guard cut in its own unit, and install's wiring of
.gemini/settings.json (milliseconds, byte-for-byte uninstall, nothing trusted for the person).

The Gemini process is played by a copy of bash named `node` running a script named `gemini`
(launch.py looks for node running Gemini's script), which runs each hook as a real child
process with GEMINI_SESSION_ID set, as Gemini CLI 0.61.0 does. The real Gemini CLI runs in
tests/e2e/test_gemini_e2e.py.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PYTHON, REPO_ROOT, git, run_cli
from git_korus_mail.clients.gemini import protocol, settingsfile
from git_korus_mail.core import keys
from git_korus_mail.core.drain_context import DrainFacts

sys.path.insert(0, os.path.dirname(__file__))
from test_codex_client import balanced, frames, hostile_batch  # noqa: E402  (the same hostile batch)


@pytest.fixture
def fake_node(tmp_path):
    """A bash binary under the name `node`."""
    path = tmp_path / "bin" / "node"
    path.parent.mkdir()
    shutil.copy(shutil.which("bash"), path)
    return path


def gemini_session(fake_node, cwd, session, steps, tmp, env_session=None):
    """Run `steps` inside one `node .../gemini` process, as one launch of Gemini CLI runs its
    hooks: each step is (event, extra payload fields) or a str, a shell command run between
    events. Returns the parsed answer of each event (None for no output), in order."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "GEMINI"))}
    env.update(PYTHONPATH=str(REPO_ROOT), PY=PYTHON, GEMINI_SESSION_ID=env_session or session)
    lines, outs = [], []
    for i, step in enumerate(steps):
        if isinstance(step, str):
            lines.append(step)
            continue
        event, extra = step
        payload = {"session_id": session, "transcript_path": str(tmp / f"session-{session}.jsonl"),
                   "cwd": str(cwd), "hook_event_name": event, "timestamp": "2027-01-15T08:00:00.000Z", **extra}
        src = tmp / f"payload-{i}.json"
        src.write_text(json.dumps(payload))
        out = tmp / f"answer-{i}.json"
        outs.append(out)
        lines.append(f'"$PY" -m git_korus_mail drain --client=gemini <"{src}" >"{out}" || exit 9')
    lines.append("true")  # keeps the last command a child, not an exec of bash
    script = tmp / "scripts" / "gemini"
    script.parent.mkdir(exist_ok=True)
    script.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([str(fake_node), str(script), "-p", "hi"], capture_output=True, text=True,
                          cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(o.read_text()) if o.read_text().strip() else None for o in outs]


def context(answer):
    return (answer or {}).get("hookSpecificOutput", {}).get("additionalContext")


def box_of(clone):
    return clone.mail_root / "box" / keys.key_for(str(clone.web)).name


def test_events_map_onto_the_drains_phases():
    p = protocol.read_payload(json.dumps({"session_id": "s", "cwd": "/x", "hook_event_name": "AfterAgent",
                                          "transcript_path": "/t", "prompt_response": "done",
                                          "stop_hook_active": False}).encode())
    assert (p.event, p.session, p.cwd, p.transcript) == ("AfterAgent", "s", "/x", "/t")
    assert {e: protocol.PHASE_OF[e][0] for e in protocol.EVENTS} == {
        "SessionStart": "show", "BeforeAgent": "show", "AfterTool": "show",
        "AfterAgent": "consume", "SessionEnd": "end"}
    facts = protocol.drain_facts(p, {"HOME": "/home/u"})
    assert isinstance(facts, DrainFacts)
    assert (facts.phase, facts.session, facts.cwd, facts.label) == ("consume", "s", "/x", "AfterAgent")
    assert facts.final_text == "done" and facts.account == "/home/u/.gemini"
    assert (facts.context_unit, facts.context_limit) == ("utf-16", 7000)
    assert facts.launch is None and facts.find_launch is not None  # proved on first need only
    none = protocol.read_payload(json.dumps({"session_id": "s", "cwd": "/x", "hook_event_name": "AfterAgent",
                                             "prompt_response": "[no response text]"}).encode())
    assert protocol.drain_facts(none, {}).final_text is None  # Gemini's filler is no final text
    # the show events' flags: SessionStart opens, AfterTool is frequent, BeforeAgent starts a run;
    # SessionStart and SessionEnd prove the launch at once (for the surface): none here (no gemini parent)
    by_event = {e: protocol.drain_facts(protocol.read_payload(json.dumps(
        {"session_id": "s", "cwd": "/x", "hook_event_name": e, "prompt_response": "x"}).encode()), {})
        for e in protocol.EVENTS}
    assert {e: (f.opening, f.frequent, f.run_start, f.final_text) for e, f in by_event.items()} == {
        "SessionStart": (True, False, False, None), "BeforeAgent": (False, False, True, None),
        "AfterTool": (False, True, False, None), "AfterAgent": (False, False, False, "x"),
        "SessionEnd": (False, False, False, None)}
    assert [e for e, f in by_event.items() if f.launch is not None] == ["SessionStart", "SessionEnd"]
    assert not by_event["SessionStart"].launch.known and by_event["SessionStart"].surface is None
    assert protocol.drain_facts(protocol.read_payload(json.dumps(
        {"session_id": "s", "cwd": "/x", "hook_event_name": "Notification"}).encode()), {}).phase is None
    # the model's shell commands carry GEMINI_CLI=1 and no session: nothing is taken from a stray variable
    assert protocol.session_of({"GEMINI_CLI": "1", "GEMINI_SESSION_ID": "s"}) is None
    with pytest.raises(protocol.BadPayload):
        protocol.read_payload(b'{"session_id": "s", "cwd": "/x"}')


def test_after_agent_never_carries_context_and_show_events_do():
    out = json.loads(protocol.answer("AfterTool", "mail", None))
    assert out == {"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "mail"}}
    # a `decision: deny` at AfterAgent would make a new user turn: the drain never answers so
    assert protocol.answer("AfterAgent", "mail", None) is None
    assert json.loads(protocol.answer("AfterAgent", None, "late")) == {"systemMessage": "late"}


def send_line(body):
    return f'"$PY" -m git_korus_mail send --to ../web "{body}" >/dev/null || exit 8'


def test_gemini_shows_at_its_events_and_consumes_once_at_after_agent(clone, fake_node, tmp_path):
    first, shown, tool, stop, stop2, end = gemini_session(fake_node, clone.web, "g1", [
        ("SessionStart", {"source": "startup"}),
        f"(cd ../api && {send_line('from codex to gemini')})",
        ("BeforeAgent", {"prompt": "hi"}),
        ("AfterTool", {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
        ("AfterAgent", {"prompt": "hi", "prompt_response": "ok", "stop_hook_active": False}),
        ("AfterAgent", {"prompt": "hi", "prompt_response": "ok", "stop_hook_active": True}),
        ("SessionEnd", {"reason": "exit"})], tmp=tmp_path)
    assert "is empty (as of 20" in context(first)
    assert "| from codex to gemini" in context(shown)
    assert shown["systemMessage"].startswith("korus-mail: 1 message from ") and "shown to the model" in shown["systemMessage"]
    assert tool is None and stop is None and stop2 is None and end is None
    box = box_of(clone)
    receipts = list((box / "receipts").iterdir())
    assert len(receipts) == 1  # consumed exactly once, at the first AfterAgent
    receipt = json.loads(receipts[0].read_text())
    assert receipt["session"] == "g1" and receipt["launch"]["client"] == "gemini"
    assert list((box / "inbox").iterdir()) == []
    presence = json.loads((box / "sessions" / "g1.json").read_text())
    assert presence["state"] == "closed" and presence.get("surface") == "headless"


def test_a_hook_whose_environment_names_another_session_shows_but_never_consumes(clone, fake_node, tmp_path):
    run_cli("send", "--to", "../web", "wait for a proven launch", cwd=clone.main, check=True)
    shown, _stop = gemini_session(fake_node, clone.web, "g2", [
        ("BeforeAgent", {"prompt": "hi"}), ("AfterAgent", {"prompt_response": "ok", "stop_hook_active": False})],
        tmp=tmp_path, env_session="another-session")
    assert "| wait for a proven launch" in context(shown)
    assert len(list((box_of(clone) / "inbox").iterdir())) == 1


def test_launch_is_the_gemini_node_ancestor(fake_node, tmp_path):
    code = ("import sys, os; from git_korus_mail.clients.gemini import launch; "
            "l = launch.launch_of('s', os.environ); print(l.known, l.pid, getattr(l, 'why', ''))")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PY=PYTHON, C=code, GEMINI_SESSION_ID="s")
    script = tmp_path / "gemini"
    script.write_text('"$PY" -c "$C"; echo gemini=$$\n')
    held = subprocess.run([str(fake_node), str(script)], capture_output=True, text=True, env=env, check=True).stdout.split()
    assert held[0] == "True" and held[1] == held[-1].split("=")[1]
    other = tmp_path / "other.js"
    other.write_text('"$PY" -c "$C"; true\n')
    plain = subprocess.run([str(fake_node), str(other)], capture_output=True, text=True, env=env, check=True).stdout
    assert plain.startswith("False") and "no gemini process among this hook's parents" in plain


def test_a_question_to_gemini_is_answered_by_its_prompt_response(clone, fake_node, tmp_path):
    box = box_of(clone)
    presence = box / "sessions" / "g-ask.json"
    ask = [PYTHON, "-m", "git_korus_mail", "ask", "--to", "../web", "--timeout", "60", "--json",
           "what is six times seven?"]
    script = (f'i=0; until grep -q \'"working"\' "{presence}" 2>/dev/null; do '
              f'i=$((i+1)); [ $i -gt 600 ] && exit 7; sleep 0.05; done; exec "$@"')
    asker = subprocess.Popen(["sh", "-c", script, "sh", *ask], cwd=clone.main, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env={k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "GEMINI"))})
    try:
        _first, shown, _stop = gemini_session(fake_node, clone.web, "g-ask", [
            ("BeforeAgent", {"prompt": "go"}),
            f'i=0; until ls "{box}"/inbox/*.json >/dev/null 2>&1; do i=$((i+1)); [ $i -gt 600 ] && exit 7; '
            f'sleep 0.05; done',
            ("AfterTool", {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
            ("AfterAgent", {"prompt": "go", "prompt_response": "forty-two, says gemini",
                            "stop_hook_active": False})], tmp=tmp_path)
        assert "what is six times seven?" in context(shown)
        out, err = asker.communicate(timeout=60)
    finally:
        if asker.poll() is None:
            asker.kill()
            asker.wait()
    assert asker.returncode == 0, err
    assert "forty-two, says gemini" in out


def test_the_guard_cut_keeps_whole_lines_and_whole_frames_in_utf16_units():
    text = hostile_batch() * 3
    units = len(text.encode("utf-16-le")) // 2
    assert units > protocol.CONTEXT_LIMIT
    out = protocol.fit(text)
    assert len(out.encode("utf-16-le")) // 2 <= protocol.CONTEXT_LIMIT
    kept = out.split("\n")
    assert kept[:-1] == text.split("\n")[:len(kept) - 1] and "cut here" in kept[-1]
    assert frames(out) and balanced(out)


# -- install --------------------------------------------------------------------------
WANTED_START = {"hooks": [{"type": "command", "command": None, "timeout": 30000}]}


def test_install_wires_settings_json_in_milliseconds_and_uninstall_restores_it_byte_for_byte(clone, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    mine = clone.web / ".gemini" / "settings.json"
    mine.parent.mkdir()
    original = b'{\n    "ui": {"theme": "GitHub"},\n    "hooks": {"BeforeTool": [{"matcher": "x", "hooks": [{"type": "command", "command": "mine"}]}]}\n}'
    mine.write_bytes(original)
    r = run_cli("install", "--client", "gemini", cwd=clone.main, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "install trusted nothing" in r.stdout
    stub = str(clone.mail_root / "hooks" / "gemini-hook")
    data = json.loads(mine.read_text())
    assert data["ui"] == {"theme": "GitHub"} and data["hooks"]["BeforeTool"][0]["hooks"][0]["command"] == "mine"
    assert data["hooks"]["AfterTool"] == [{"matcher": "*", "hooks": [
        {"type": "command", "command": f"'{stub}' AfterTool", "timeout": 30000}]}]
    assert data["hooks"]["SessionEnd"] == [{"hooks": [
        {"type": "command", "command": f"'{stub}' SessionEnd", "timeout": 3000}]}]
    assert sorted(data["hooks"]) == ["AfterAgent", "AfterTool", "BeforeAgent", "BeforeTool", "SessionEnd", "SessionStart"]
    made = json.loads((clone.main / ".gemini" / "settings.json").read_text())
    assert settingsfile.FILE.check(made, stub) == []
    # nothing trusted for the person: neither a folder nor a hook
    assert not (home / ".gemini" / "trustedFolders.json").exists()
    assert not (home / ".gemini" / "trusted_hooks.json").exists()
    assert ".gemini/settings.json" in (clone.common_dir / "info" / "exclude").read_text()
    r = run_cli("uninstall", cwd=clone.main, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    assert mine.read_bytes() == original
    assert not (clone.main / ".gemini").exists()


def test_a_tracked_settings_json_is_the_repositorys_and_install_leaves_it_alone(clone, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    tracked = clone.main / ".gemini" / "settings.json"
    tracked.parent.mkdir()
    tracked.write_text('{"general": {}}\n')
    git("add", ".gemini/settings.json", cwd=clone.main)
    git("commit", "-qm", "the repo's gemini settings", cwd=clone.main)
    r = run_cli("install", "--client", "gemini", cwd=clone.main, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    assert tracked.read_text() == '{"general": {}}\n'
    # the line wraps at 100 columns, its path cut from the start (issue 25)
    assert ".gemini/settings.json is tracked by the repository: not edited" in " ".join(r.stdout.split()), r.stdout


def test_user_scope_wires_the_users_settings_with_the_repo_anchor(clone, tmp_path):
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    user = home / ".gemini" / "settings.json"
    user.write_bytes(b'{"security": {"auth": {"selectedType": "gemini-api-key"}}}\n')
    env = dict(os.environ, HOME=str(home))
    r = run_cli("install", "--client", "gemini", "--scope", "user", cwd=clone.main, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    hooks = json.loads(user.read_text())["hooks"]
    command = hooks["AfterAgent"][0]["hooks"][0]["command"]
    assert command.endswith(f" AfterAgent --repo '{os.path.realpath(clone.main)}'"), command
    assert not (clone.main / ".gemini").exists() and not (clone.web / ".gemini").exists()
    run_cli("uninstall", "--scope", "user", cwd=clone.main, env=env, check=True)
    assert user.read_bytes() == b'{"security": {"auth": {"selectedType": "gemini-api-key"}}}\n'


def test_doctor_judges_a_gemini_sessions_drains_by_geminis_own_events(clone, fake_node, tmp_path):
    """Gemini shares SessionStart and SessionEnd with Claude Code but consumes at AfterAgent: its
    sessions are judged once, by its own names, never read as Claude Code's."""
    home = tmp_path / "home"
    home.mkdir()
    run_cli("install", "--client", "gemini", cwd=clone.main, env=dict(os.environ, HOME=str(home)), check=True)
    gemini_session(fake_node, clone.web, "g-doc", [
        ("SessionStart", {"source": "startup"}), ("BeforeAgent", {"prompt": "hi"}),
        ("AfterAgent", {"prompt_response": "ok", "stop_hook_active": False})], tmp=tmp_path)
    out = run_cli("doctor", "--json", cwd=clone.main, env=dict(os.environ, HOME=str(home)))
    drains = [f for f in json.loads(out.stdout)["findings"] if f["check"] == "drains"]
    assert len(drains) == 1, drains
    assert drains[0]["ok"] and "AfterAgent" in drains[0]["detail"] and "BeforeAgent" in drains[0]["detail"]


@pytest.mark.parametrize("event, said", [("SessionStart", "both"), ("AfterAgent", "person"), ("BeforeAgent", None),
                                         ("AfterTool", None), ("SessionEnd", None)])
def test_geminis_stub_says_a_broken_helper_at_session_start_and_after_agent_only(tmp_path, event, said):
    """Gemini's stub is the one template with its values (clients/gemini/stub.py): a helper that
    cannot run is said to the model and the person at SessionStart, to the person at AfterAgent
    (the run's end), and nowhere at the events of every prompt and tool call."""
    from git_korus_mail.clients.gemini import stub
    path = tmp_path / "gemini-hook"
    path.write_text(stub.STUB.render(str(tmp_path / "gone" / "git-korus-mail")))
    path.chmod(0o700)
    env = dict(os.environ, PATH="/usr/bin:/bin")  # no git-korus-mail on PATH either
    proc = subprocess.run([str(path), event], input="{}", capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr  # on another code Gemini would drop the output
    if said is None:
        assert proc.stdout == ""
        return
    answer = json.loads(proc.stdout)
    assert answer["systemMessage"].startswith("git korus-mail: helper not found"), answer
    assert protocol.check_answer(event, proc.stdout) is not None  # a fault, as Gemini's answer checker says
    if said == "both":
        assert answer["hookSpecificOutput"] == {"hookEventName": "SessionStart",
                                                "additionalContext": answer["systemMessage"]}
    else:
        assert set(answer) == {"systemMessage"}


def test_doctor_reads_geminis_own_gates_trust_hooks_config_enabled_and_disabled(clone, tmp_path):
    """doctor asks what Gemini 0.61.0 itself reads to decide whether our hooks run in a folder
    (clients/gemini/gates.py): its trust file, and hooksConfig.enabled / .disabled in the system,
    user and folder settings; each gate closed is a problem naming the file, and an open one says
    what was checked and where to see the rest (/hooks)."""
    from git_korus_mail.clients.gemini import wiring
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    user = home / ".gemini" / "settings.json"
    user.write_text('{"security": {"auth": {"selectedType": "gemini-api-key"}}}\n')
    system = tmp_path / "system-settings.json"
    env = dict(os.environ, HOME=str(home), GEMINI_CLI_SYSTEM_SETTINGS_PATH=str(system))
    run_cli("install", "--client", "gemini", cwd=clone.main, env=env, check=True)

    def wiring_findings():
        out = run_cli("doctor", "--json", cwd=clone.main, env=env)
        return {f["where"]: f for f in json.loads(out.stdout)["findings"] if f["check"] == "wiring"
                and f["where"].endswith("settings.json")}
    main_file, web_file = (str(wt / ".gemini" / "settings.json") for wt in (clone.main, clone.web))
    env.pop("GEMINI_CLI_TRUST_WORKSPACE", None)
    found = wiring_findings()
    for wt, path in ((clone.main, main_file), (clone.web, web_file)):  # nobody trusted the folders
        assert not found[path]["ok"], found
        assert f"{wt} is not trusted in {home}/.gemini/trustedFolders.json: Gemini runs no hook there" \
            in " ".join(found[path]["detail"].split()), found[path]
        assert found[path]["fix"].startswith("in Gemini, as the problem says (install trusts nothing"), found[path]
    # a Gemini started from a shell with GEMINI_CLI_TRUST_WORKSPACE=true trusts every folder
    env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
    assert all(f["ok"] for f in wiring_findings().values())
    del env["GEMINI_CLI_TRUST_WORKSPACE"]
    # the person trusts them (Gemini's own file format): every gate open, and said so
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(
        {os.path.realpath(clone.main): "TRUST_FOLDER", os.path.realpath(clone.web): "TRUST_FOLDER"}))
    found = wiring_findings()
    assert found[main_file]["ok"] and found[web_file]["ok"], found
    assert wiring.VERIFIED_AS in found[main_file]["detail"] and "/hooks in its terminal UI" in wiring.VERIFIED_AS
    # `/hooks disable` in Gemini writes our command (a hook's name when it has none) into the user's list
    command = json.loads(Path(web_file).read_text())["hooks"]["AfterAgent"][0]["hooks"][0]["command"]
    user.write_text(json.dumps({"hooksConfig": {"disabled": [command, "someone-else"]}}))
    found = wiring_findings()  # every worktree's file names the one stub: off in both
    assert all(not f["ok"] and f"hooksConfig.disabled in {user} turns off 1 of our hooks" in " ".join(f["detail"].split())
               for f in found.values()), found
    # the system's settings turn every hook off
    user.write_text("{}\n")
    system.write_text('{"hooksConfig": {"enabled": false}}')
    found = wiring_findings()
    assert all(not f["ok"] and f"hooksConfig.enabled is false in {system}" in " ".join(f["detail"].split())
               for f in found.values()), found
    # folder trust switched off in the person's settings: Gemini trusts every folder
    system.unlink()
    (home / ".gemini" / "trustedFolders.json").unlink()
    user.write_text('{"security": {"folderTrust": {"enabled": false}}}')
    assert all(f["ok"] for f in wiring_findings().values())


def test_install_names_another_after_agent_hook_that_could_continue_a_run(clone, tmp_path):
    """Gemini hands every AfterAgent hook the same input and none learns another's decision
    (docs/CLIENTS.md, "stop_hook_active, observed"): install says when one of the person's own
    AfterAgent hooks runs beside ours, and what it means for the automatic answer."""
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    user = home / ".gemini" / "settings.json"
    env = dict(os.environ, HOME=str(home))
    said = " ".join(run_cli("install", "--client", "gemini", cwd=clone.main, env=env, check=True).stdout.split())
    assert "gemini AfterAgent" not in said  # ours alone, in every worktree's file
    user.write_text(json.dumps({"hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "my-check"}]}]}}))
    said = " ".join(run_cli("install", "--client", "gemini", cwd=clone.main, env=env, check=True).stdout.split())
    # (a long path is cut from its start to fit 100 columns: the file's own name stays)
    assert "gemini AfterAgent another AfterAgent hook runs beside ours " in said, said
    assert ("settings.json): if it continues a run, a question's automatic answer is the text "
            "before that continuation") in said, said
