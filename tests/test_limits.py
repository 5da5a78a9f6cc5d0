"""The receiver's limits (docs/DESIGN.md, "Limits"): backlog, loop and rate, judged by the real
drain in its own process, at their edges. Messages are forged straight into the inbox with the
send times they claim (message.build(now=...)), never by sleeping: the rules read the times
in the ids, so the edges are exact. Each test reads the outcome from the disk, not the product."""

import json
import multiprocessing as mp
import os
import time

import pytest

import invariants
from helpers import context_of, git, hook, run_cli
from install_fixtures import box_dir, mkdir700

from git_korus_mail.core import keys
from git_korus_mail.store import drops, message, moves

T0 = time.time() - 3600  # an hour ago: far from now, far from expiring (the TTL is 3 days)


def forge(clone, body, at, sender="/elsewhere/agent-a", session="s-a", kind="note"):
    """Write a message straight into web's inbox, as any process of the user could."""
    k = keys.key_of_root(os.path.realpath(clone.web))
    answer = {"in_reply_to": message.new_id(at - 60), "status": "answered"} if kind == "answer" else {}
    msg = message.build(body, k.path, k.name, {"path": sender, "branch": None, "session": session}, kind=kind,
                        now=at, **answer)
    inbox = mkdir700(box_dir(clone, clone.web) / "inbox")
    tmp = inbox / f".{msg['id']}.tmp"
    tmp.write_bytes(message.encode(msg))
    tmp.chmod(0o600)
    os.rename(tmp, inbox / f"{msg['id']}.json")
    return msg["id"]


def state_of(clone, msg_id):
    """Where the message is, read from the directories (inbox, seen, dropped, ...)."""
    box = box_dir(clone, clone.web)
    found = [s for s in invariants.STATES if (box / s / f"{msg_id}.json").exists()]
    assert len(found) == 1, (msg_id, found)
    return found[0]


def shown_ids(clone):
    """Every id some drain showed, from the journal (read as plain JSON lines)."""
    return {r["id"] for r in invariants.journal(str(clone.mail_root)) if r["event"] == "shown"}


def show_all(clone, session="s-web", rounds=6):
    """An opening show, then prompt shows until nothing new is shown; returns every context."""
    texts = [context_of(hook("SessionStart", clone.web, session)[0]) or ""]
    for _ in range(rounds):
        before = shown_ids(clone)
        texts.append(context_of(hook("UserPromptSubmit", clone.web, session)[0]) or "")
        if shown_ids(clone) == before:
            break
    return texts


def config(clone, name, value):
    git("config", f"korus-mail.{name}", value, cwd=clone.main)


def send(clone, body, *extra):
    return run_cli("send", "--to", str(clone.web), *extra, body, cwd=clone.main)


# -- backlog --------------------------------------------------------------------------
def test_send_queues_the_50th_and_refuses_the_51st_in_one_line(clone):
    for n in range(49):
        forge(clone, f"note {n}", T0 + n * 10, sender=f"/elsewhere/agent-{n}")
    fiftieth = send(clone, "the 50th")
    assert fiftieth.returncode == 0, fiftieth.stderr
    inbox = box_dir(clone, clone.web) / "inbox"
    assert len(os.listdir(inbox)) == 50
    refused = send(clone, "the 51st")
    assert refused.returncode == 1 and refused.stdout == ""
    [line] = refused.stderr.splitlines()
    assert "not queued" in line and "holds 50 unread" in line and "korus-mail.backlog is 50" in line, line
    assert len(os.listdir(inbox)) == 50  # nothing queued
    # answers pass a full box: `reply` and the automatic answers send through deliver, as here
    # (only the backlog check is looked at: the drain's side is the test below)
    from git_korus_mail.core import send as core_send
    from git_korus_mail.core.clone import Clone
    c = Clone(cwd=str(clone.main))
    [answer], _ = core_send.deliver(c, core_send.resolve(c, [str(clone.web)]), "an answer", "answer", 60)
    assert answer["ok"], answer
    [note], _ = core_send.deliver(c, core_send.resolve(c, [str(clone.web)]), "a note", "note", 60)
    assert not note["ok"] and "korus-mail.backlog is 50" in note["error"], note
    assert len(os.listdir(inbox)) == 51


def test_the_drain_holds_back_the_51st_file_written_straight_in_and_shows_it_once_there_is_room(clone):
    ids = [forge(clone, f"note {n}", T0 + n * 10, sender=f"/elsewhere/agent-{n}") for n in range(51)]
    texts = show_all(clone)
    assert shown_ids(clone) == set(ids[:50])  # the 50 oldest, not the 51st
    assert ids[50] not in "".join(texts) and state_of(clone, ids[50]) == "inbox"  # held, not deleted
    told = [line for t in texts for line in t.splitlines() if "held back" in line]
    assert len(told) == 1, told  # once, in one line, naming the sender
    assert told[0].startswith("korus-mail: 1 message held back") and "/elsewhere/agent-50" in told[0], told
    assert "backlog of 50" in told[0]
    hook("Stop", clone.web, "s-web")  # consumes what was shown: room again
    assert ids[50] in (context_of(hook("UserPromptSubmit", clone.web, "s-web")[0]) or "")
    invariants.check(clone.mail_root)


def test_a_box_of_exactly_50_holds_nothing_back(clone):
    ids = [forge(clone, f"note {n}", T0 + n * 10, sender=f"/elsewhere/agent-{n}") for n in range(50)]
    texts = show_all(clone)
    assert shown_ids(clone) == set(ids)
    assert not any("held back" in t for t in texts)


def test_answers_pass_a_full_box_and_are_never_dropped(clone):
    for n in range(50):
        forge(clone, f"note {n}", T0 + n * 10, sender=f"/elsewhere/agent-{n}")
    # answers from one sender in two seconds, after its eight notes and a note of the same
    # text: beyond the backlog, a loop and a flood, and each one shown
    config(clone, "backlog", "60")  # (first: the loop and rate exemption, with room to show)
    notes = [forge(clone, f"step {n}", T0 + 600 + n * 0.1) for n in range(7)] + [forge(clone, "done", T0 + 601)]
    answers = [forge(clone, "done", T0 + 601.5 + n * 0.3, kind="answer") for n in range(3)]
    show_all(clone)
    assert set(answers) <= shown_ids(clone) and set(notes) <= shown_ids(clone)
    assert all(state_of(clone, a) == "inbox" for a in answers)  # shown, not dropped
    hook("Stop", clone.web, "s-web")
    config(clone, "backlog", "50")
    for n in range(50):
        forge(clone, f"again {n}", T0 + 1000 + n * 10, sender=f"/elsewhere/agent-{n}")
    behind = [forge(clone, "done again", T0 + 1600 + n * 0.3, kind="answer") for n in range(2)]
    late = forge(clone, "a note behind them", T0 + 1700)
    show_all(clone, session="s-web2")
    assert set(behind) <= shown_ids(clone)
    assert late not in shown_ids(clone)  # the note behind the full backlog waits


def test_the_backlog_is_a_setting_of_the_clone(clone):
    config(clone, "backlog", "2")
    ids = [forge(clone, f"note {n}", T0 + n * 10, sender=f"/elsewhere/agent-{n}") for n in range(3)]
    show_all(clone)
    assert shown_ids(clone) == set(ids[:2])
    assert send(clone, "one more").returncode == 1


# -- loop -------------------------------------------------------------------------------
def test_the_same_text_9_9_s_later_is_a_loop_and_10_1_s_later_is_not(clone):
    a1 = forge(clone, "ping", T0, sender="/elsewhere/a")
    a2 = forge(clone, "ping", T0 + 9.9, sender="/elsewhere/a")
    b1 = forge(clone, "ping", T0 + 100, sender="/elsewhere/b")
    b2 = forge(clone, "ping", T0 + 110.1, sender="/elsewhere/b")
    show_all(clone)
    assert shown_ids(clone) == {a1, b1, b2}
    assert state_of(clone, a2) == "dropped"
    why = json.loads((box_dir(clone, clone.web) / "drops" / f"{a2}.json").read_text())
    assert why["rule"] == "loop" and why["id"] == a2 and why["from"] == "/elsewhere/a" and why["at"].endswith("Z")
    assert a1 in why["detail"] and "9.9 s" in why["detail"]
    invariants.check(clone.mail_root)


def test_a_loop_needs_the_same_sender_and_the_same_text(clone):
    same_path_other_session = [forge(clone, "ping", T0, session="s-1"), forge(clone, "ping", T0 + 1, session="s-2")]
    other_text = [forge(clone, "ping", T0 + 100), forge(clone, "pong", T0 + 101)]
    show_all(clone)
    assert shown_ids(clone) == set(same_path_other_session + other_text)


def test_loop_seconds_zero_turns_the_rule_off(clone):
    config(clone, "loop-seconds", "0")
    ids = [forge(clone, "ping", T0), forge(clone, "ping", T0 + 1)]
    show_all(clone)
    assert shown_ids(clone) == set(ids)


# -- who is one sender (issue 22 item 7): real sends, each in its own process ----------------
def send_from(clone, body, env=None, new_session=False, via_sh=False, prefix=()):
    """`send` to web as a process of its own: with `env` over a scrubbed environment (no client's
    variables unless given), in a Unix session of its own (a terminal, a script started apart)
    when `new_session`, and as the child of a shell that stands in for a client's process when
    `via_sh` (its $$ is what CLAUDE_PID names when `env` says CLAUDE_PID=$$); `prefix` runs it
    under another command (`unshare -pf`)."""
    import subprocess
    import sys
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CODEX_"))}
    full.update(env or {})
    argv = [sys.executable, "-m", "git_korus_mail", "send", "--json", "--wait=0", "--to", str(clone.web), body]
    if via_sh:
        if full.get("CLAUDE_PID") == "$$":
            del full["CLAUDE_PID"]
            argv = ["/bin/sh", "-c", 'CLAUDE_PID=$$ "$@"; exit $?', "sh", *argv]
        else:
            argv = ["/bin/sh", "-c", '"$@"; exit $?', "sh", *argv]  # `exit`: the shell stays the parent
    argv = [*prefix, *argv]
    proc = subprocess.run(argv, cwd=clone.main, env=full, capture_output=True, text=True,
                          start_new_session=new_session)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["results"][0]
    assert result["ok"], result
    return result["id"]


def sender_field(clone, msg_id):
    box = box_dir(clone, clone.web)
    [path] = [p for p in (box / s / f"{msg_id}.json" for s in invariants.STATES) if p.exists()]
    return json.loads(path.read_text())["from"]


def test_two_shells_in_one_worktree_are_two_senders_and_one_shell_is_one(clone):
    config(clone, "loop-seconds", "3600")  # every send below is well within it, however slow
    a = send_from(clone, "done", new_session=True)
    b = send_from(clone, "done", new_session=True)  # another terminal, another script: not a loop
    assert sender_field(clone, a)["session"] is None and sender_field(clone, a)["launch"].startswith("session:")
    assert sender_field(clone, a)["launch"] != sender_field(clone, b)["launch"]
    show_all(clone)
    assert shown_ids(clone) == {a, b}
    # one Unix session (a script sending twice, or two commands typed at one terminal) stays one sender
    c = send_from(clone, "again")
    d = send_from(clone, "again")
    assert sender_field(clone, c)["launch"] == sender_field(clone, d)["launch"]
    show_all(clone)
    assert c in shown_ids(clone) and state_of(clone, d) == "dropped"
    invariants.check(clone.mail_root)


def _unshare_pid_works():
    import subprocess
    try:
        return subprocess.run(["unshare", "-pf", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(not _unshare_pid_works(), reason="unshare -p needs root here")
def test_a_session_led_from_outside_the_pid_namespace_is_one_sender(clone):
    """In a container or a CI runner the Unix session's leader is outside the pid namespace, and
    getsid() says 0 (seen in CI: such sends had no launch at all). Two sends in one such
    namespace are one sender (the second, the same words, is a loop); one from another namespace
    is another sender."""
    import subprocess
    import sys
    config(clone, "loop-seconds", "3600")
    argv = [sys.executable, "-m", "git_korus_mail", "send", "--json", "--wait=0", "--to", str(clone.web), "again"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CODEX_"))}

    def in_one_namespace(times, hold=False):
        """`times` sends in one new pid namespace; with `hold`, the namespace lives on (its pid 1
        waits on stdin) so that the next one is a namespace of its own: the kernel reuses the
        inode of a namespace that has ended (seen in CI), which a later one may then carry."""
        script = " && ".join(['"$@"'] * times) + (" && echo END && read _" if hold else "")
        proc = subprocess.Popen(["unshare", "-pf", "/bin/sh", "-c", script, "sh", *argv], cwd=clone.main, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        text = ""
        if hold:
            for line in proc.stdout:
                if line.strip() == "END":
                    break
                text += line
        else:
            text, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
        decoder, ids = json.JSONDecoder(), []
        while text.strip():
            doc, end = decoder.raw_decode(text.lstrip())
            text = text.lstrip()[end:]
            ids.append(doc["results"][0]["id"])
        return ids, proc

    [c], first = in_one_namespace(1, hold=True)
    try:
        (d, e), _ = in_one_namespace(2)
    finally:
        first.communicate(input="\n", timeout=60)
    assert first.returncode == 0
    launch = sender_field(clone, c)["launch"]
    assert launch.startswith("session:0-"), launch
    assert sender_field(clone, d)["launch"] == sender_field(clone, e)["launch"] != launch
    show_all(clone)
    assert {c, d} <= shown_ids(clone) and state_of(clone, e) == "dropped"
    invariants.check(clone.mail_root)


def test_codex_sessions_in_one_worktree_are_told_apart_by_their_session(clone):
    config(clone, "rate", "4/3600")  # four messages per sender, within any slowness of the test
    ids = {sid: [send_from(clone, f"status {n}", env={"CODEX_SESSION_ID": sid, "CODEX_THREAD_ID": sid})
                 for n in range(4)] for sid in ("019a0000-0000-7000-8000-00000000000a",
                                                "019a0000-0000-7000-8000-00000000000b")}
    first = ids["019a0000-0000-7000-8000-00000000000a"][0]
    # the session Codex names in its commands' environment is the message's `from.session`
    assert sender_field(clone, first)["session"] == "019a0000-0000-7000-8000-00000000000a"
    texts = show_all(clone)
    assert shown_ids(clone) == {i for v in ids.values() for i in v}  # 4 + 4: no rate drop
    assert "session 019a0000-0000-7000-8000-00000000000a\n" in "\n".join(texts)  # not `session -`
    invariants.check(clone.mail_root)


def test_setting_a_sessions_variables_does_not_make_a_process_that_session(clone):
    """A process that sets CLAUDE_CODE_SESSION_ID and CLAUDE_PID of a live Claude Code launch is
    not that launch: CLAUDE_PID must be one of its ancestors. Its mail never gets the real
    session's dropped as a loop."""
    config(clone, "loop-seconds", "3600")
    import subprocess
    stand_in = subprocess.Popen(["sleep", "600"])  # the real session's Claude Code process
    try:
        env = {"CLAUDE_CODE_SESSION_ID": "s-real", "CLAUDE_PID": str(stand_in.pid)}
        forged = send_from(clone, "done", env=env, new_session=True)
    finally:
        stand_in.kill()
        stand_in.wait()
    real = send_from(clone, "done", env={"CLAUDE_CODE_SESSION_ID": "s-real", "CLAUDE_PID": "$$"}, via_sh=True)
    assert sender_field(clone, forged).get("launch") is None  # a session named, no process of it proved
    assert sender_field(clone, real)["launch"].startswith("claude:")
    show_all(clone)
    assert shown_ids(clone) == {forged, real}
    invariants.check(clone.mail_root)


# -- rate -------------------------------------------------------------------------------
def test_the_8th_message_in_30_s_is_shown_and_the_9th_dropped(clone):
    flood = [forge(clone, f"step {n}", T0 + n * 3.6) for n in range(9)]  # the 9th at 28.8 s
    slower = [forge(clone, f"step {n}", T0 + 100 + n * 3.77, sender="/elsewhere/b") for n in range(9)]  # 9th at 30.16 s
    show_all(clone)
    assert shown_ids(clone) == set(flood[:8] + slower)
    assert state_of(clone, flood[8]) == "dropped"
    why = json.loads((box_dir(clone, clone.web) / "drops" / f"{flood[8]}.json").read_text())
    assert why["rule"] == "rate" and "9 messages within 30 s" in why["detail"], why
    invariants.check(clone.mail_root)


def test_a_flood_is_dropped_until_the_window_passes(clone):
    config(clone, "rate", "2/30")
    ids = [forge(clone, f"m{n}", T0 + t) for n, t in enumerate((0, 1, 2, 29, 31.5, 60))]
    show_all(clone)
    # at 2 and 29 s two are in the window; at 31.5 s only the one at 2 and the one at 29 (dropped
    # ones count: the sender sent them); at 60 s only the one at 31.5 s is within 30 s
    assert shown_ids(clone) == {ids[0], ids[1], ids[5]}
    assert [state_of(clone, i) for i in ids[2:5]] == ["dropped"] * 3


# -- dropped: the sender's status, the recipient's notice -----------------------------------
def test_the_senders_status_shows_dropped_loop_with_its_time(clone):
    config(clone, "loop-seconds", "3600")  # the two sends below are well within it, however slow
    first = send(clone, "same words")
    second = send(clone, "same words")
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    dropped_id = second.stdout.split()[1]
    show_all(clone)
    data = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    fate = {r["id"]: r["fate"] for r in data["sent"]}[dropped_id]
    assert fate["state"] == "dropped" and fate["rule"] == "loop" and fate["at"].endswith("Z"), fate
    text = run_cli("status", cwd=clone.main, check=True).stdout
    sent = text.split("sent from this worktree", 1)[1].split("\n  events", 1)[0]
    entry = sent.split(dropped_id, 1)[1].split("\n  2", 1)[0]  # its line (and the one it wraps onto)
    assert "dropped: loop at " + fate["at"][11:19] in entry, text
    [event] = [r for r in invariants.journal(str(clone.mail_root)) if r["event"] == "dropped"]
    assert event["id"] == dropped_id and event["rule"] == "loop"
    invariants.check(clone.mail_root)


def test_the_recipient_is_told_once_in_one_line_what_was_dropped_and_from_whom(clone):
    forge(clone, "ping", T0, sender="/elsewhere/looper")
    forge(clone, "ping", T0 + 1, sender="/elsewhere/looper")
    forge(clone, "ping", T0 + 2, sender="/elsewhere/looper")
    first = context_of(hook("SessionStart", clone.web, "s-web")[0])
    told = [ln for ln in first.splitlines() if "dropped" in ln]
    assert told == [f"korus-mail: 2 messages to this worktree dropped by its limits (2 as loop; 2 from "
                    f"/elsewhere/looper), never shown; kept in {box_dir(clone, clone.web) / 'dropped'}"], told
    later = [context_of(hook(ev, clone.web, s)[0]) or "" for ev, s in
             (("UserPromptSubmit", "s-web"), ("SessionStart", "s-web"), ("SessionStart", "s-other"))]
    assert not any("dropped" in t for t in later), later
    invariants.check(clone.mail_root)


# -- settings ----------------------------------------------------------------------------
def test_a_bad_setting_is_one_line_from_send_and_doctor_and_the_drain_keeps_the_default(clone):
    config(clone, "rate", "8 per 30")
    proc = send(clone, "hello")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["git korus-mail: git config korus-mail.rate '8 per 30': not valid; "
                                        "use <messages>/<seconds>, e.g. 8/30"]
    doctor = run_cli("doctor", cwd=clone.main).stdout
    assert "korus-mail.rate '8 per 30': not valid" in doctor
    ids = [forge(clone, f"m{n}", T0 + n) for n in range(9)]
    texts = show_all(clone)
    assert shown_ids(clone) == set(ids[:8])  # the default 8/30 holds
    assert not any("not valid" in t for t in texts)  # a fault of a show is said at the consume:
    stop, _ = hook("Stop", clone.web, "s-web")
    assert "korus-mail.rate '8 per 30': not valid; use <messages>/<seconds>, e.g. 8/30; using 8/30" in json.dumps(stop)
    config(clone, "rate", "3/10")
    config(clone, "backlog", "7")
    assert "backlog 7, loop 10 s, rate 3 per 10 s" in " ".join(run_cli("doctor", cwd=clone.main).stdout.split())


# -- concurrency: separate processes ------------------------------------------------------
def _send_one(cwd, body, env, conn):
    proc = run_cli("send", "--to", "../web", body, cwd=cwd, env=env)
    conn.send((proc.returncode, proc.stdout, proc.stderr))
    conn.close()


def _drain_one(cwd, session, conn):
    answer, _ = hook("UserPromptSubmit", cwd, session)
    conn.send(context_of(answer) or "")
    conn.close()


def _all(ctx, target, arglists):
    procs, conns = [], []
    for args in arglists:
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=target, args=(*args, child))
        p.start()
        procs.append(p)
        conns.append(parent)
    out = [c.recv() for c in conns]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return out


def test_concurrent_senders_and_drains_agree_on_the_rate(clone):
    """Twelve sends of one sender at once, then two sessions' drains at once: both show the same
    eight, the other four are dropped once, and no message is both shown and dropped."""
    config(clone, "rate", "8/3600")  # however slowly the processes start, all twelve are in one window
    ctx = mp.get_context("fork")
    hook("SessionStart", clone.web, "s-1")
    hook("SessionStart", clone.web, "s-2")
    sent = _all(ctx, _send_one, [(str(clone.main), f"part {n}", {}) for n in range(12)])
    assert all(rc == 0 for rc, _, _ in sent), sent
    ids = sorted(out.split()[1] for _, out, _ in sent)
    contexts = _all(ctx, _drain_one, [(str(clone.web), "s-1"), (str(clone.web), "s-2")])
    for c in contexts:
        shown_here = {i for i in ids if i in c}
        assert shown_here == set(ids[:8]), (sorted(shown_here), ids)
    states = {i: state_of(clone, i) for i in ids}
    assert [states[i] for i in ids[8:]] == ["dropped"] * 4 and set(ids[:8]) <= shown_ids(clone)
    drops = [r for r in invariants.journal(str(clone.mail_root)) if r["event"] == "dropped"]
    assert sorted(r["id"] for r in drops) == ids[8:]  # each drop once, whichever drain won it
    told = [ln for c in contexts for ln in c.splitlines() if "dropped by its limits" in ln]
    assert len(told) >= 1
    invariants.check(clone.mail_root)


def test_concurrent_senders_past_the_backlog_lose_nothing_and_the_drain_holds_the_rest(clone):
    """send's check races (two may both see room); the drain's does not: at most `backlog` shown."""
    config(clone, "backlog", "4")
    ctx = mp.get_context("fork")
    # each its own sender (a session of its own), so only the backlog applies
    sent = _all(ctx, _send_one, [(str(clone.main), f"hello {n}", {"CLAUDE_CODE_SESSION_ID": f"s{n}"})
                                 for n in range(10)])
    queued = sorted(out.split()[1] for rc, out, _ in sent if rc == 0)
    refused = [err for rc, _, err in sent if rc != 0]
    assert len(queued) + len(refused) == 10 and len(queued) >= 4
    assert all("not queued" in e and "korus-mail.backlog is 4" in e for e in refused), refused
    assert sorted(n[:-5] for n in os.listdir(box_dir(clone, clone.web) / "inbox")) == queued
    show_all(clone)
    assert shown_ids(clone) == set(queued[:4])
    assert all(state_of(clone, i) == "inbox" for i in queued)  # held ones wait, none lost
    invariants.check(clone.mail_root)


def _racer(common, box_name, msg_id, role, barrier, conn):
    from git_korus_mail.store.files import MailRoot
    box = MailRoot.open(common).box(box_name)
    msg, _ = box.load(msg_id)
    barrier.wait(30)
    if role == "consume":
        result = moves.consume(box, msg_id, "s-reader", {"at": "2026-01-01T00:00:00.000000Z", "event": "test"})
    else:
        result = drops.drop(box, msg_id, msg, "loop", "a test")
    conn.send(result)
    conn.close()


def test_a_drop_and_a_consume_of_one_message_exactly_one_happens(clone):
    ids = [forge(clone, f"m{n}", T0 + n * 100) for n in range(8)]
    box = box_dir(clone, clone.web)
    ctx = mp.get_context("fork")
    for msg_id in ids:
        barrier = ctx.Barrier(2)
        r = dict(zip(("consume", "drop"), _all(ctx, _racer, [(str(clone.common_dir), box.name, msg_id, role, barrier)
                                                            for role in ("consume", "drop")])))
        assert (r["consume"] == "consumed") != (r["drop"] == "dropped"), r
        assert state_of(clone, msg_id) == ("seen" if r["consume"] == "consumed" else "dropped")
    invariants.check(clone.mail_root)


def test_a_pruned_dropped_message_takes_its_reason_with_it(clone):
    forge(clone, "ping", T0)
    dropped = forge(clone, "ping", T0 + 1)
    show_all(clone)
    box = box_dir(clone, clone.web)
    assert (box / "drops" / f"{dropped}.json").exists()
    from git_korus_mail.store import retention
    from git_korus_mail.store.files import MailRoot
    done = retention.prune(MailRoot.open(str(clone.common_dir)).box(box.name), 0, now=time.time() + 86400)
    assert dropped in done.get("dropped", []), done
    assert not (box / "dropped" / f"{dropped}.json").exists() and not (box / "drops" / f"{dropped}.json").exists()
    invariants.check(clone.mail_root)
