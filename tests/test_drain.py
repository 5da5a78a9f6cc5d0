"""The drain as Claude Code runs it: a separate process per hook event, JSON in and out."""

import json
import os
import subprocess
import sys

import pytest

from drainmodules import drain_modules
from helpers import context_of, hook, launch_dir, run_cli
from git_korus_mail.core import keys


def box_dir(clone, path):
    return clone.mail_root / "box" / keys.key_for(str(path)).name


def names(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def send(clone, body, to="../web", *extra):
    proc = run_cli("send", "--to", to, *extra, body, cwd=clone.main, check=True)
    return proc.stdout.split()[1]


def test_session_start_says_empty_with_as_of_time(clone):
    answer, _ = hook("SessionStart", clone.web, "s1")
    ctx = context_of(answer)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "is empty (as of 20" in ctx and ctx.rstrip().endswith("Z).")


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"])
def test_other_events_print_nothing_on_the_normal_empty_path(clone, event):
    hook("SessionStart", clone.web, "s1")
    answer, proc = hook(event, clone.web, "s1")
    assert answer is None and proc.stdout == ""


def test_show_then_consume_exactly_what_was_shown(clone):
    first = send(clone, "first")
    answer, _ = hook("SessionStart", clone.web, "s1")
    assert "| first" in context_of(answer)
    second = send(clone, "second")  # arrives mid-turn
    answer, _ = hook("PostToolUse", clone.web, "s1")
    ctx = context_of(answer)
    assert "| second" in ctx and "| first" not in ctx  # only what is new to this session
    assert hook("UserPromptSubmit", clone.web, "s1")[0] is None  # nothing new: nothing at all
    third = send(clone, "third")   # queued after the last show: must survive this Stop
    hook("Stop", clone.web, "s1")
    b = box_dir(clone, clone.web)
    assert names(b / "seen") == sorted([first + ".json", second + ".json"])
    assert names(b / "receipts") == names(b / "seen")
    assert names(b / "inbox") == [third + ".json"]
    receipt = json.loads((b / "receipts" / (first + ".json")).read_text())
    assert receipt["session"] == "s1" and receipt["observed"]["event"] == "SessionStart"
    assert receipt["observed"]["chars"] > 0 and receipt["consumed_at"].endswith("Z")
    assert names(b / "shown" / launch_dir("s1")) == [".launch"]
    # the receipt names the launch (this pytest process stands in for Claude Code) as well as the session
    assert receipt["launch"]["pid"] == os.getpid() and receipt["launch"]["client"] == "claude"
    assert "s1@" + receipt["launch"]["tag"] == launch_dir("s1")


def test_session_start_never_consumes_and_discarded_sessions_lose_nothing(clone):
    mid = send(clone, "survive the discards")
    for i in range(6):  # one launch was seen firing six SessionStarts
        assert "survive the discards" in context_of(hook("SessionStart", clone.web, f"discarded-{i}")[0])
    b = box_dir(clone, clone.web)
    assert names(b / "inbox") == [mid + ".json"]
    hook("SessionStart", clone.web, "real")
    hook("Stop", clone.web, "real")
    assert names(b / "seen") == [mid + ".json"] and names(b / "inbox") == []


def test_a_marker_of_another_session_does_not_consume(clone):
    mid = send(clone, "only for whoever saw it")
    hook("SessionStart", clone.web, "old")        # old session saw it ...
    hook("Stop", clone.web, "new")                # ... a new one (after /clear) did not
    b = box_dir(clone, clone.web)
    assert names(b / "inbox") == [mid + ".json"]
    assert "only for whoever saw it" in context_of(hook("UserPromptSubmit", clone.web, "new")[0])
    hook("Stop", clone.web, "new")
    assert names(b / "inbox") == []
    assert json.loads((b / "receipts" / (mid + ".json")).read_text())["session"] == "new"


def test_two_live_sessions_may_both_see_but_only_one_consumes(clone):
    mid = send(clone, "shared")
    hook("SessionStart", clone.web, "a")
    hook("SessionStart", clone.web, "b")
    hook("Stop", clone.web, "a")
    answer, _ = hook("Stop", clone.web, "b")
    assert answer is None  # "gone" is normal, not a fault
    b = box_dir(clone, clone.web)
    assert names(b / "receipts") == [mid + ".json"]
    journal = [json.loads(line) for line in (clone.mail_root / "journal.jsonl").read_text().splitlines()]
    assert [e["id"] for e in journal if e["event"] == "consumed"] == [mid]


def test_session_end_drops_markers_and_keeps_mail(clone):
    mid = send(clone, "unread at exit")
    hook("SessionStart", clone.web, "s1")
    hook("SessionEnd", clone.web, "s1")
    b = box_dir(clone, clone.web)
    assert names(b / "inbox") == [mid + ".json"] and (b / "shown" / launch_dir("s1")).is_dir() is False
    assert names(b / "shown") == []
    rec = json.loads((b / "sessions" / "s1.json").read_text())
    assert rec["state"] == "closed"
    assert "unread at exit" in context_of(hook("SessionStart", clone.web, "s2")[0])


def test_session_filter(clone):
    send(clone, "for s2 only", "../web", "--session", "s2")
    ctx = context_of(hook("SessionStart", clone.web, "s1")[0])
    assert "for s2 only" not in ctx
    hook("Stop", clone.web, "s1")
    assert "for s2 only" in context_of(hook("SessionStart", clone.web, "s2")[0])
    hook("Stop", clone.web, "s2")
    assert names(box_dir(clone, clone.web) / "inbox") == []


def test_subdirectory_session_gets_worktree_mail(clone):
    sub = clone.web / "deep" / "er"
    sub.mkdir(parents=True)
    send(clone, "to the worktree")
    assert "to the worktree" in context_of(hook("SessionStart", sub, "s1")[0])


def test_delivery_off_shows_nothing_consumes_nothing_and_says_so_once(clone):
    mid = send(clone, "held back")
    run_cli("off", cwd=clone.main, check=True)
    ctx = context_of(hook("SessionStart", clone.web, "s1")[0])
    assert "delivery is off" in ctx and "held back" not in ctx
    assert hook("UserPromptSubmit", clone.web, "s1")[0] is None
    first, _ = hook("Stop", clone.web, "s1")
    assert "delivery is off" in first["systemMessage"] and "hookSpecificOutput" not in first
    assert hook("Stop", clone.web, "s1")[0] is None  # once per session
    assert names(box_dir(clone, clone.web) / "inbox") == [mid + ".json"]
    run_cli("on", cwd=clone.main, check=True)
    assert "held back" in context_of(hook("UserPromptSubmit", clone.web, "s1")[0])
    hook("Stop", clone.web, "s1")
    assert names(box_dir(clone, clone.web) / "inbox") == []


def test_outside_any_clone(tmp_path):
    folder = tmp_path / "nowhere"
    folder.mkdir()
    assert hook("SessionStart", folder, "s1")[0] is None
    answer, _ = hook("Stop", folder, "s1")
    assert "no mail queue here" in answer["systemMessage"]


def test_repo_anchor_reads_the_cwd_key_not_the_anchor(clone, tmp_path):
    holder = tmp_path / "holder"
    holder.mkdir()
    run_cli("send", "--to", str(holder), "--create", "for the folder", cwd=clone.main, check=True)
    send(clone, "for web")
    ctx = context_of(hook("SessionStart", holder, "s1", repo=str(clone.main))[0])
    assert "for the folder" in ctx and "for web" not in ctx


def test_presence_records_state_and_events(clone):
    hook("SessionStart", clone.web, "s1", env={"CLAUDE_PID": str(os.getpid())})
    hook("UserPromptSubmit", clone.web, "s1")
    rec = json.loads((box_dir(clone, clone.web) / "sessions" / "s1.json").read_text())
    assert rec["state"] == "working" and rec["client_pid"] == os.getpid()
    assert set(rec["events"]) == {"SessionStart", "UserPromptSubmit"}
    data = json.loads(run_cli("list", "--json", cwd=clone.main, check=True).stdout)
    web = [r for r in data["boxes"] if r["slug"] == "web"][0]
    assert web["sessions"][0]["state"] == "working"
    assert set(web["last_drain"]) == {"SessionStart", "UserPromptSubmit"}
    hook("SessionStart", clone.web, "s2", env={"CLAUDE_PID": "999999"})  # a pid that does not run
    data = json.loads(run_cli("list", "--json", cwd=clone.main, check=True).stdout)
    states = {s["session"]: s["state"] for s in [r for r in data["boxes"] if r["slug"] == "web"][0]["sessions"]}
    assert states == {"s1": "working", "s2": "gone"}


def test_bad_payload_is_reported_not_fatal(clone):
    proc = run_cli("drain", cwd=clone.web, input="not json")
    assert proc.returncode == 0 and "unusable payload" in json.loads(proc.stdout)["systemMessage"]


def test_hostile_session_id_cannot_escape(clone):
    send(clone, "x")
    hook("SessionStart", clone.web, "../../../../etc")
    b = box_dir(clone, clone.web)
    shown = names(b / "shown")
    assert len(shown) == 1 and shown[0].startswith("x-")


HEAVY = ("pygit2", "docopt", "portalocker", "colorama", "hashlib", "socket", "subprocess")


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"])
def test_hot_path_imports_nothing_heavy(clone, event):
    """An empty-box drain must not import pygit2, docopt or portalocker (python -X importtime)."""
    hook("SessionStart", clone.web, "warm")  # box exists, as after the first event of a session
    payload = json.dumps({"session_id": "warm", "transcript_path": "", "cwd": str(clone.web),
                          "hook_event_name": event})
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "git_korus_mail", "drain"],
                          input=payload, capture_output=True, text=True, cwd=clone.web)
    assert proc.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "git_korus_mail" in imported  # the measurement itself works
    assert not imported & set(HEAVY), imported & set(HEAVY)


STDLIB_HEAVY = ("re", "json", "enum", "signal", "functools", "collections", "datetime", "calendar",
                "_strptime", "unicodedata", "socket", "subprocess", "hashlib")
# Modules of ours an event with an empty box has no use for: nothing is read, rendered,
# moved, journaled or forwarded. Each is loaded where it is first needed.
OURS_DEFERRED = ("core.render", "store.message", "store.moves", "store.records", "store.journal",
                 "store.forwarding", "store.wtident", "store.sent", "core.gitrepo", "core.clone",
                 "store.watch", "store.claims", "store.retention", "core.retention", "store.publish")


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"])
def test_hot_path_adds_no_costly_stdlib_module(clone, event):
    """What the drain itself adds to sys.modules on an event with nothing to show: `import json`
    alone (through re, enum, functools, collections) costs more than the rest of the drain."""
    hook("SessionStart", clone.web, "warm")
    _, added = drain_modules(clone.web, event, "warm")
    assert "git_korus_mail.core.drain" in added  # the measurement itself works
    assert not added & set(STDLIB_HEAVY), sorted(added & set(STDLIB_HEAVY))
    other_phase = "core.drain_show" if event == "Stop" else "core.drain_consume"
    needless = sorted(added & {f"git_korus_mail.{m}" for m in OURS_DEFERRED + (other_phase,)})
    assert not needless, needless


def test_a_show_of_one_plain_message_loads_no_drop_or_move_code(clone):
    """The woken turn's prompt shows one message (issue 26: its drain is most of a wake under
    load): with nothing dropped, expired or claimed, the show needs neither store/drops.py nor
    store/moves.py, and its limits' notices cost a directory look."""
    hook("SessionStart", clone.web, "s1")
    hook("Stop", clone.web, "s1")
    send(clone, "wake up")
    proc, added = drain_modules(clone.web, "UserPromptSubmit", "s1", prompt="go on")
    assert "wake up" in context_of(json.loads(proc.stdout))  # it did show the message
    assert "git_korus_mail.core.limits" in added  # the message was judged
    assert not added & {"git_korus_mail.store.drops", "git_korus_mail.store.moves"}, sorted(added)


def test_tool_calls_of_a_working_session_do_not_rewrite_presence(clone):
    """PostToolUse fires on every tool call; it must not cost a file write when nothing changed."""
    rec = box_dir(clone, clone.web) / "sessions" / "s1.json"
    hook("UserPromptSubmit", clone.web, "s1")
    ino = rec.stat().st_ino  # presence is replaced by rename: a rewrite gives a new inode
    for _ in range(3):
        hook("PostToolUse", clone.web, "s1")
    assert rec.stat().st_ino == ino
    hook("Stop", clone.web, "s1")
    ino = rec.stat().st_ino
    hook("PostToolUse", clone.web, "s1")  # idle -> working is a change: recorded
    assert rec.stat().st_ino != ino and json.loads(rec.read_text())["state"] == "working"
    send(clone, "mid-turn")
    ino = rec.stat().st_ino
    assert "mid-turn" in context_of(hook("PostToolUse", clone.web, "s1")[0])  # delivery never skipped


# -- what a client hands the core: one read-only DrainFacts (core/drain_context.py) -------------
def test_drain_facts_are_read_only_and_carry_show_flags_only_at_a_show():
    from git_korus_mail.core.drain_context import DrainFacts
    flags = {"opening": True, "frequent": True, "run_start": True, "new_context": True}
    shown = DrainFacts("show", "s1", "/w", label="SessionStart", **flags)
    assert [getattr(shown, f) for f in flags] == [True, True, True, True]
    for phase in ("consume", "end", "fail", None):
        other = DrainFacts(phase, "s1", "/w", **flags)  # a show's flags mean nothing elsewhere
        assert [getattr(other, f) for f in flags] == [False, False, False, False], phase
    assert DrainFacts(None, "s1", "/w").label == "none" and DrainFacts("end", "s1", "/w").label == "end"
    assert DrainFacts("consume", "s1", "/w", final_text=7).final_text is None  # only a string is a text
    with pytest.raises(AttributeError):
        shown.phase = "consume"
    with pytest.raises(AttributeError):
        shown.extra = 1  # __slots__: no field beyond the named ones
    with pytest.raises(ValueError, match="not a drain phase"):
        DrainFacts("Stop", "s1", "/w")


def _claude_payload(event, **raw):
    from git_korus_mail.clients.claude import protocol
    return protocol.read_payload(json.dumps({"session_id": "s1", "cwd": "/w", "hook_event_name": event,
                                             "transcript_path": "", **raw}).encode())


def test_claude_hands_the_core_the_facts_of_each_event():
    from git_korus_mail.clients.claude import protocol
    env = {"CLAUDE_CODE_SESSION_ID": "s1", "CLAUDE_PID": "4242", "CLAUDE_CONFIG_DIR": "/acct",
           "CLAUDE_CODE_ENTRYPOINT": "cli"}
    stop = protocol.drain_facts(_claude_payload("Stop", last_assistant_message="done"), env)
    assert (stop.phase, stop.session, stop.cwd, stop.label, stop.final_text, stop.account, stop.surface) == \
        ("consume", "s1", "/w", "Stop", "done", "/acct", "terminal")
    assert (stop.fast_key, stop.context_unit, stop.context_limit, stop.launch) == ("s1@4242", "utf-16", None, None)
    prompt = protocol.drain_facts(_claude_payload("UserPromptSubmit", prompt="hi"), env)
    assert (prompt.phase, prompt.run_start, prompt.opening, prompt.frequent, prompt.final_text) == \
        ("show", True, False, False, None)
    tool = protocol.drain_facts(_claude_payload("PostToolUse"), env)
    assert (tool.frequent, tool.run_start) == (True, False)
    compact = protocol.drain_facts(_claude_payload("SessionStart", source="compact"), env)
    startup = protocol.drain_facts(_claude_payload("SessionStart", source="startup"), env)
    assert (compact.opening, compact.new_context, startup.new_context) == (True, True, False)
    assert startup.launch is not None  # identified at once at the opening show: its name is looked up
    assert protocol.drain_facts(_claude_payload("Notification"), env).phase is None  # presence only


def test_codex_hands_the_core_the_facts_of_each_event():
    from git_korus_mail.clients.codex import protocol
    payload = protocol.read_payload(json.dumps({"session_id": "s1", "cwd": "/w", "hook_event_name": "Stop",
                                                "transcript_path": "/t", "last_assistant_message": "done"}).encode())
    stop = protocol.drain_facts(payload, {"CODEX_HOME": "/h"})
    assert (stop.phase, stop.session, stop.cwd, stop.final_text, stop.account) == ("consume", "s1", "/w", "done", "/h")
    assert (stop.context_unit, stop.context_limit, stop.fast_key, stop.launch) == ("utf-8", protocol.CONTEXT_LIMIT,
                                                                                  None, None)
    assert stop.find_launch is not None  # proved from /proc only when the drain needs it
    prompt = protocol.read_payload(json.dumps({"session_id": "s1", "cwd": "/w",
                                               "hook_event_name": "UserPromptSubmit"}).encode())
    facts = protocol.drain_facts(prompt, {})
    assert (facts.phase, facts.run_start, facts.final_text) == ("show", True, None)


# -- what one show reads (issue 26): what it can show, not a fixed count -----------------------
def _queue(c, bodies):
    """Queue `bodies` for web, oldest first, written with the product's own format code."""
    from git_korus_mail.store import message
    from git_korus_mail.store.files import MailRoot
    from helpers import git
    for name, value in (("backlog", "100000"), ("loop-seconds", "0"), ("rate", "100000/1")):
        git("config", f"korus-mail.{name}", value, cwd=c.main)  # the batch is measured here, not the limits
    root = MailRoot.open(str(c.mail_root.parent), create=True)
    rk, sk = keys.key_for(str(c.web)), keys.key_for(str(c.main))
    inbox = root.box(rk.name, create=True, path=rk.path).ensure_sub("inbox")
    sender = {"path": sk.path, "branch": "main", "session": None}
    ids = []
    for body in bodies:
        msg = message.build(body, rk.path, rk.name, sender, kind="note")
        inbox.create_exclusive(msg["id"] + ".json", message.encode(msg), sync=False)
        ids.append(msg["id"])
    return ids


_SHOWN = __import__("re").compile(r"\[mail \d+/\d+ [0-9a-f]{12} begin\]\nid (\S+) ")
_NO_FLOOR = ("import sys; from git_korus_mail.core import drain_show; drain_show._block_floor = lambda view: 0; "
             "from git_korus_mail.cli import main; sys.exit(main(['drain']))")


def _shown_by(c, session, code=None):
    payload = json.dumps({"session_id": session, "transcript_path": "", "cwd": str(c.web),
                          "hook_event_name": "UserPromptSubmit", "prompt": session})
    args = [sys.executable, "-c", code] if code else [sys.executable, "-m", "git_korus_mail", "drain"]
    proc = subprocess.run(args, input=payload, capture_output=True, text=True, cwd=c.web)
    assert proc.returncode == 0, proc.stderr
    return _SHOWN.findall(context_of(json.loads(proc.stdout)) or "")


_NOTE = "\n".join(["a line of an ordinary note, about ninety characters long, as agents write them"] * 5)
MIXES = {
    "short notes": ["ok"] * 80,
    "ordinary notes": [_NOTE] * 60,
    "long single lines": ["x" * 2000] * 20 + [_NOTE] * 20,
    "many short lines": ["\n".join(["ab"] * 300)] * 30,
    "lines past the line cap": ["\n".join(["v" * 1000] * 3)] * 20,
    "lines just past the line cap": ["\n".join(["u" * 420] * 4)] * 20,
    "one huge first": ["y" * 30000] + [_NOTE] * 40,
    "mixed": [["ok", _NOTE, "z" * 700, "\n".join(["w" * 50] * 40), "q" * 5000][i % 5] for i in range(70)],
    "non-ASCII": ["\u00e9\u4e2d\U0001F600 " * 60] * 40,
}


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_a_show_reads_what_it_can_show_and_shows_the_same_batch_oldest_first(clone, mix):
    """A show stops reading once what it read fills the event (drain_show._block_floor, a lower
    bound of each block's size): it shows exactly the batch it showed when it read a fixed 40,
    the oldest first, and leaves the rest queued."""
    ids = _queue(clone, MIXES[mix])
    with_floor = _shown_by(clone, "s-floor")
    without = _shown_by(clone, "s-count", _NO_FLOOR)
    assert with_floor and with_floor == without, (len(with_floor), len(without))
    assert with_floor == ids[:len(with_floor)]  # in order, from the oldest


def test_a_show_of_1000_queued_shows_the_first_in_order_and_leaves_them_all_queued(clone):
    ids = _queue(clone, [_NOTE] * 1000)
    first = _shown_by(clone, "s-1000")
    assert 5 <= len(first) < 40 and first == ids[:len(first)]
    again = _shown_by(clone, "s-1000")  # the same session's next event: the next ones, in order
    assert again == ids[len(first):len(first) + len(again)]
    assert len(os.listdir(box_dir(clone, clone.web) / "inbox")) == 1000
