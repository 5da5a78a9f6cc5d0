"""Prove the e2e harness itself against the real claude CLI.

Each test drives a real `claude -p` (or stream-json) process against the
mock Messages API and checks an effect that only a working harness produces.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from driver import group_members, write_hooks
from mockapi import bash, text

pytestmark = pytest.mark.e2e


def _uid() -> str:
    return uuid.uuid4().hex[:12]


def test_scripted_bash_tool_use_runs(claude, mockapi, project):
    token = _uid()
    mockapi.set_script([bash(f"echo hi-{token} > made-by-model.txt", "write a file"), text("All done.")])

    run = claude.run("please write the file", cwd=project).check()

    assert (project / "made-by-model.txt").read_text() == f"hi-{token}\n", run.describe()
    assert run.result == "All done."
    agent = mockapi.agent_requests()
    assert len(agent) == 2, mockapi.summary()
    assert mockapi.remaining == 0
    # the tool_result of the Bash call went back to the model in the 2nd request
    tool_results = [b for m in agent[1].messages if isinstance(m.get("content"), list)
                    for b in m["content"] if b.get("type") == "tool_result"]
    assert tool_results, agent[1].raw[:2000]
    assert agent[1].session_id == run.session_id


def test_sessionstart_additional_context_reaches_model(claude, mockapi, project, model_saw, model_never_saw):
    uid = _uid()
    marker = f"MARK-123-{uid}"
    # The marker is assembled by the shell, so its full text is nowhere in
    # the settings, the prompt or the command: only the hook's output has it.
    write_hooks(project, {"SessionStart": (
        "printf '{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\","
        f"\"additionalContext\":\"MARK-%s-{uid}\"}}}}\\n' \"$((100+23))\""
    )})
    mockapi.set_script([text("noted")])

    run = claude.run("hello", cwd=project).check()

    assert run.result == "noted"
    hits = model_saw(mockapi, marker, role="system")
    assert any(f"SessionStart hook additional context: {marker}" in t
               for t in hits[0].texts("system")), hits[0].texts("system")
    assert f"MARK-123-{uid}" not in (project / ".claude" / "settings.local.json").read_text()
    model_never_saw(mockapi, f"MARK-124-{uid}")


def test_stop_hook_receives_stdin_json(claude, mockapi, project):
    write_hooks(project, {"Stop": 'cat > "$CLAUDE_PROJECT_DIR/stop-stdin.json"'})
    final = f"final words {_uid()}"
    mockapi.set_script([text(final)])

    run = claude.run("say something", cwd=project).check()

    path = project / "stop-stdin.json"
    assert path.exists(), "Stop hook did not run\n" + run.describe()
    payload = json.loads(path.read_text())
    assert payload["hook_event_name"] == "Stop"
    assert payload["session_id"] == run.session_id
    assert payload["last_assistant_message"] == final
    assert payload["stop_hook_active"] is False
    assert os.path.realpath(payload["cwd"]) == os.path.realpath(project)


def test_resume_keeps_session_id(claude, mockapi, project):
    write_hooks(project, {"SessionStart": 'cat >> "$CLAUDE_PROJECT_DIR/starts.jsonl"; echo >> "$CLAUDE_PROJECT_DIR/starts.jsonl"'})
    first_prompt = f"first prompt {_uid()}"
    mockapi.set_script([text("one"), text("two")])

    first = claude.run(first_prompt, cwd=project).check()
    second = claude.resume(first.session_id, "second prompt", cwd=project).check()

    assert second.session_id == first.session_id
    assert second.result == "two"
    starts = [json.loads(l) for l in (project / "starts.jsonl").read_text().splitlines() if l.strip()]
    assert [s["source"] for s in starts] == ["startup", "resume"]
    assert {s["session_id"] for s in starts} == {first.session_id}
    last = mockapi.agent_requests()[-1]
    assert last.contains(first_prompt) and last.contains("second prompt"), mockapi.summary()


def test_stream_session_takes_two_prompts(claude, mockapi, project):
    mockapi.set_script([text("reply-one"), text("reply-two")])

    with claude.stream(cwd=project) as s:
        s.send("prompt-one")
        r1 = s.read_result(timeout=30)
        assert r1["result"] == "reply-one"
        s.send("prompt-two")
        r2 = s.read_result(timeout=30)
        assert r2["result"] == "reply-two"
        rc = s.close()

    assert rc == 0, s.describe()
    assert r1["session_id"] == r2["session_id"] == s.session_id
    assert len(mockapi.agent_requests()) == 2, mockapi.summary()
    assert mockapi.agent_requests()[1].contains("prompt-two")


def test_kill_right_after_session_start(claude, mockapi, project):
    # SessionStart hooks run in their own process group (setsid), so the kill
    # must take the whole tree: the lingering hook below must die too.
    write_hooks(project, {
        "SessionStart": 'echo $$ > "$CLAUDE_PROJECT_DIR/hook.pid" && touch "$CLAUDE_PROJECT_DIR/started"; exec sleep 30',
        "Stop": 'touch "$CLAUDE_PROJECT_DIR/stopped"',
        "SessionEnd": 'touch "$CLAUDE_PROJECT_DIR/ended"',
    })
    mockapi.set_script([text("too late", delay=5)])

    t0 = time.monotonic()
    proc = claude.start_and_kill_after("hello", cwd=project, path=project / "started", timeout=30)
    elapsed = time.monotonic() - t0

    assert proc.poll() == -9, proc.describe()
    assert elapsed < 5, f"kill came only after {elapsed:.1f}s"
    assert group_members(proc.pid) == []
    hook_pid = int((project / "hook.pid").read_text())
    time.sleep(0.3)  # nothing may run after the kill
    assert not _alive(hook_pid), f"SessionStart hook {hook_pid} survived the kill"
    assert not (project / "stopped").exists()
    assert not (project / "ended").exists()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# ---- the mock API on its own (no claude needed)


def _post(api, path, body):
    import urllib.request
    req = urllib.request.Request(api.base_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def _sse_events(payload: str) -> list[dict]:
    return [json.loads(line[6:]) for line in payload.splitlines() if line.startswith("data: ")]


def test_mockapi_script_side_requests_and_404(mockapi):
    mockapi.set_script([bash("echo hi"), text("bye")])
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    agent = {"model": "m", "stream": True, "tools": tools, "messages": [{"role": "user", "content": "q\"uoted"}]}

    st, ctype, body = _post(mockapi, "/v1/messages?beta=true", agent)
    ev = _sse_events(body)
    assert st == 200 and ctype == "text/event-stream"
    assert [e["type"] for e in ev] == ["message_start", "content_block_start", "content_block_delta",
                                       "content_block_stop", "message_delta", "message_stop"]
    assert ev[1]["content_block"]["name"] == "Bash"
    assert json.loads(ev[2]["delta"]["partial_json"])["command"] == "echo hi"
    assert ev[4]["delta"]["stop_reason"] == "tool_use"

    # a side request (no tools) does not consume the script
    st, _, body = _post(mockapi, "/v1/messages?beta=true", {"model": "m", "stream": True, "messages": []})
    assert _sse_events(body)[2]["delta"]["text"] == mockapi.side_text
    assert mockapi.remaining == 1

    for expected in ("bye", "done", "done"):
        _, _, body = _post(mockapi, "/v1/messages?beta=true", agent)
        ev = _sse_events(body)
        assert ev[2]["delta"]["text"] == expected
        assert ev[4]["delta"]["stop_reason"] == "end_turn"

    st, ctype, body = _post(mockapi, "/v1/other", {})
    assert st == 404 and ctype == "application/json" and json.loads(body)["type"] == "error"

    kinds = [r.kind for r in mockapi.requests]
    assert kinds == ["agent", "side", "agent", "agent", "agent", "other"]
    # raw bodies keep JSON escapes; the decoded search sees through them
    assert 'q"uoted' not in mockapi.requests[0].raw
    assert mockapi.find('q"uoted') and not mockapi.find('q"uoted', decoded=False)
    logged = [json.loads(l) for l in open(mockapi.log_path)]
    assert [l["kind"] for l in logged] == kinds
