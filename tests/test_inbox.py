"""`inbox`, `read` and `cancel` used as a person would: a clone with several real worktrees,
mail sent between them with the real `send`, shown and consumed by real drain processes
(SessionStart, Stop), and every command run as its own process from the worktree a person
would be in. The disk is read from outside (plain file reads) to check what they said."""

import json
import os
import shutil

import pytest

import invariants
from helpers import context_of, hook, run_cli
from install_fixtures import box_dir
from test_store_reads import dirs_under

S_WEB = "s-web-1111"
LONG = "w" * 70  # a worktree whose path would push a line past 100 columns


def send(cwd, dest, body, kind="note"):
    proc = run_cli("send", "--to", str(dest), "--kind", kind, "--json", "--", body, cwd=cwd, check=True)
    return json.loads(proc.stdout)["results"][0]["id"]


def inbox(cwd, *args):
    return run_cli("inbox", *args, cwd=cwd, check=True).stdout


def inbox_json(cwd, *args):
    return json.loads(run_cli("inbox", "--json", *args, cwd=cwd, check=True).stdout)


def blocks(text):
    """{id: the lines of its block} of `inbox` output (a block starts with the id)."""
    out, cur = {}, None
    for line in text.splitlines():
        if line[:8].isdigit():
            cur = line.split()[0]
            out[cur] = [line]
        elif cur and line.startswith("  "):
            out[cur].append(line)
    return out


def world(clone):
    clone.docs = clone.add_worktree("docs")
    clone.long = clone.add_worktree(LONG)
    return clone


def test_a_person_follows_mail_through_inbox_read_and_cancel(clone):
    c = world(clone)
    m1 = send(c.main, c.web, "schema changed: users.email is unique\nsecond line")
    m2 = send(c.docs, c.web, "docs handoff: the API page is yours", kind="handoff")
    m3 = send(c.long, c.web, "from the worktree with a long name " + "x" * 120)
    m4 = send(c.main, c.docs, "for docs only")
    # queued: oldest first, each sender relative to this worktree and marked unverified
    out = inbox(c.web)
    b = blocks(out)
    assert list(b) == [m1, m2, m3], out
    assert "  queued" in b[m1][0] and b[m1][0].endswith("note") and b[m2][0].endswith("handoff")
    assert b[m1][1].startswith("  sent 20") and b[m1][1].endswith(" ago) from (unverified) ../api [main]")
    assert b[m2][1].endswith(" from (unverified) ../docs [docs]")
    assert b[m1][2] == "  not shown to any session yet"
    assert b[m1][3] == "  | schema changed: users.email is unique"
    assert all(len(line) < 100 for line in out.splitlines()), [ln for ln in out.splitlines() if len(ln) >= 100]
    assert " from (unverified) …" in b[m3][1] and LONG[-20:] in b[m3][1]  # the path's end is kept
    assert m4 not in out

    # shown by a real SessionStart: inbox says to whom and when, and that it is not consumed
    answer, _ = hook("SessionStart", c.web, S_WEB)
    assert all(m in context_of(answer) for m in (m1, m2, m3))
    b = blocks(inbox(c.web))
    assert all("  shown" in b[m][0] for m in (m1, m2, m3))
    assert b[m1][2].startswith(f"  shown to session {S_WEB} at ") and "(SessionStart); not consumed yet" in b[m1][2]

    # read never consumes: nothing changes on disk but nothing is created either
    box = box_dir(c, c.web)
    before = dirs_under(box), sorted(os.listdir(box / "inbox"))
    r = run_cli("read", m1[:30], cwd=c.web, check=True).stdout
    assert (dirs_under(box), sorted(os.listdir(box / "inbox"))) == before
    assert "read does not consume: the message stays as it was" in r
    assert f"message  {m1}  in this worktree's box" in r
    assert f"shown    to session {S_WEB} (launch " in r and "in SessionStart" in r
    assert r.rstrip("\n").endswith("| schema changed: users.email is unique\n| second line")

    # consumed by the real Stop: the default listing counts it, --all shows by whom
    hook("Stop", c.web, S_WEB)
    m5 = send(c.main, c.web, "after the stop")
    out = inbox(c.web)
    assert list(blocks(out)) == [m5] and "also kept: 3 consumed (--all lists them)" in out
    b = blocks(inbox(c.web, "--all"))
    assert list(b) == [m1, m2, m3, m5]
    assert b[m1][2].startswith(f"  consumed by session {S_WEB} at ")
    d = inbox_json(c.web, "--all")
    [j1] = [m for m in d["messages"] if m["id"] == m1]
    receipt = json.loads((box / "receipts" / f"{m1}.json").read_text())
    assert j1["state"] == "consumed" and j1["receipt"] == receipt and j1["from"]["path"] == str(c.main)
    r = run_cli("read", m1, cwd=c.web, check=True).stdout
    assert f"receipt  consumed by session {S_WEB} (launch " in r and "observed " in r

    # a message in another worktree's box can be read, and the header says whose box it is
    r = run_cli("read", m4, cwd=c.main, check=True).stdout
    flat = " ".join(r.split())  # read wraps its lines at 100 columns (issue 25)
    assert f"in the box of {c.docs}, not this worktree's" in flat and "| for docs only" in r

    # cancel: shown first, then withdrawn; the sender is told a model saw it
    m6 = send(c.main, c.web, "please delete the staging table")
    answer, _ = hook("UserPromptSubmit", c.web, S_WEB, extra={"prompt": "go on"})
    assert m6 in context_of(answer) and m5 in context_of(answer)
    proc = run_cli("cancel", m6, cwd=c.main, check=True)
    assert proc.stdout.startswith(f"cancelled {m6} to ../web\n  it will not be shown again, nor consumed\n")
    assert f"a model was shown it already (to session {S_WEB} at " in proc.stdout
    assert (box / "cancelled" / f"{m6}.json").exists() and not (box / "inbox" / f"{m6}.json").exists()
    cancelled = [e for e in invariants.journal(c.mail_root) if e.get("event") == "cancelled"]
    assert [(e["id"], e["by"]) for e in cancelled] == [(m6, str(c.main))]
    hook("Stop", c.web, S_WEB)
    # the Stop consumed the other message it was shown, not the cancelled one
    assert not (box / "receipts" / f"{m6}.json").exists() and (box / "receipts" / f"{m5}.json").exists()
    answer, _ = hook("SessionStart", c.web, "s-web-2222")
    assert m6 not in context_of(answer) and "is empty" in context_of(answer)
    # the sender's status and the recipient's inbox say cancelled
    status = json.loads(run_cli("status", "--json", cwd=c.main, check=True).stdout)
    assert {m["id"]: m["fate"]["state"] for m in status["sent"]}[m6] == "cancelled"
    b = blocks(inbox(c.web, "--all"))
    # shown to the launch of S_WEB, which is told of the withdrawal at its next event (issue 25)
    assert "  cancelled" in b[m6][0] and any(x.startswith("  cancelled by its sender at ") for x in b[m6])
    assert "1 cancelled" in inbox(c.web)

    # refusals: one line, exit 1, nothing changed
    again = run_cli("cancel", m6, cwd=c.main, check=True)
    assert again.stdout == f"{m6} to ../web was cancelled already\n"
    late = run_cli("cancel", m1, cwd=c.main)
    assert late.returncode == 1 and late.stderr == (
        f"git korus-mail: not cancelled: {m1} was consumed already, by session {S_WEB} at "
        f"{receipt['consumed_at']}\n")
    m7 = send(c.main, c.web, "queued for web")
    foreign = run_cli("cancel", m7, cwd=c.web)  # mail for web, sent by api: web cannot withdraw it
    assert foreign.returncode == 1 and "is no message sent from this worktree" in foreign.stderr
    assert foreign.stderr.count("\n") == 1 and (box / "inbox" / f"{m7}.json").exists()
    invariants.check(c.mail_root, idle=True)


def test_read_refuses_bad_unknown_and_ambiguous_ids_in_one_line(clone):
    a = send(clone.main, clone.web, "one")
    b = send(clone.main, clone.web, "two")
    # an ambiguous id: one line, then its candidates one a line, as git lists an ambiguous object's
    for arg, words, lines in (("zz!", "not a message id", 1),
                              ("20990101T000000.000000Z-p1-0000000000000000", "no message", 1),
                              ("2", "2 is ambiguous: it names 2 message ids", 3)):
        proc = run_cli("read", arg, cwd=clone.web)
        assert proc.returncode == 1 and proc.stderr.count("\n") == lines and words in proc.stderr, proc.stderr
        assert proc.stdout == ""
    assert a in run_cli("read", "2", cwd=clone.web).stderr and b in run_cli("read", "2", cwd=clone.web).stderr
    assert run_cli("read", a, "--json", "--raw", cwd=clone.web).returncode == 129
    assert run_cli("cancel", "2", cwd=clone.main).returncode == 1


def test_read_raw_round_trips_the_body_bytes_exactly(clone):
    body = "\x1b[31mred\x1b[0m \x1b]52;c;cHduZWQ=\x07 \u202eevil\u202c \u200b\ufeff \x00 nul\r\ncrlf\rlone\n\n"
    proc = run_cli("send", "--to", str(clone.web), "--json", "-", cwd=clone.main, input=body.encode(), check=True)
    msg_id = json.loads(proc.stdout)["results"][0]["id"]
    raw = run_cli("read", msg_id, "--raw", cwd=clone.web, input=b"", check=True)
    assert raw.stdout == body.encode("utf-8")
    assert raw.stderr == b"git korus-mail: read does not consume: the message stays as it was\n"
    shown = run_cli("read", msg_id, cwd=clone.web, check=True).stdout
    body_part = shown.split(" (--raw: the bytes as sent)\n", 1)[1]
    assert body_part == ("| \\u001b[31mred\\u001b[0m \\u001b]52;c;cHduZWQ=\\u0007 \\u202eevil\\u202c \\u200b\\ufeff"
                         " \\u0000 nul\n| crlf\\u000dlone\n| \n")
    assert "\x1b" not in shown and "\x00" not in shown and "\u202e" not in shown
    j = json.loads(run_cli("read", msg_id, "--json", cwd=clone.web, check=True).stdout)
    assert j["body"] == body and j["read_consumes"] is False


def test_inbox_and_read_in_a_worktree_without_a_box_create_nothing(clone):
    send(clone.main, clone.web, "for web")
    before = dirs_under(clone.mail_root)
    out = inbox(clone.main)
    assert "nothing queued here" in out
    assert inbox_json(clone.main)["messages"] == []
    assert "| for web" in run_cli("read", "2026", cwd=clone.main, check=True).stdout  # found in web's box
    assert dirs_under(clone.mail_root) == before


def test_quarantined_mail_is_listed_with_its_reason_and_read_as_escaped_text(clone):
    send(clone.main, clone.web, "fine")
    box = box_dir(clone, clone.web)
    bad = "20261201T000000.000000Z-p1-00000000000000aa"
    (box / "inbox" / f"{bad}.json").write_bytes(b"not JSON \x1b]0;T\x07")
    (box / "inbox" / f"{bad}.json").chmod(0o600)
    hook("SessionStart", clone.web, S_WEB)  # the drain quarantines it
    d = inbox_json(clone.web)
    [q] = [m for m in d["messages"] if m["state"] == "quarantined"]
    assert q["id"] == bad and q["reason"].startswith("invalid message: bad JSON")
    out = inbox(clone.web)
    assert f"{bad}  quarantined" in out and "quarantined at " in out and ": invalid message: bad JSON" in out
    r = run_cli("read", bad, cwd=clone.web, check=True).stdout
    assert "not a valid message: shown as text" in r and "\\u001b]0;T\\u0007" in r and "\x1b" not in r


def test_dropped_mail_is_listed_by_default_with_the_limit_that_fired(clone):
    """dropped/<id>.json and its reason drops/<id>.json, as the receiver's limits file them
    (docs/STORE.md), planted here with plain file operations; inbox shows the state, read
    shows it whole, and the sender cannot cancel what was dropped."""
    msg_id = send(clone.main, clone.web, "one too many")
    box = box_dir(clone, clone.web)
    for sub in ("dropped", "drops"):
        (box / sub).mkdir(mode=0o700)
    os.link(box / "inbox" / f"{msg_id}.json", box / "dropped" / f"{msg_id}.json")
    os.unlink(box / "inbox" / f"{msg_id}.json")
    why = {"id": msg_id, "rule": "rate", "detail": "21 messages in an hour", "at": "2026-12-01T10:00:00.000000Z"}
    (box / "drops" / f"{msg_id}.json").write_text(json.dumps(why))
    b = blocks(inbox(clone.web))
    assert "  dropped" in b[msg_id][0]
    assert b[msg_id][2].startswith("  dropped by this worktree's limits at ")
    from git_korus_mail.store import records
    if hasattr(records, "drop_reason"):  # the limits' reason record, read through the store
        assert b[msg_id][2] == ("  dropped by this worktree's limits at 2026-12-01 10:00:00Z: rate, "
                                "21 messages in an hour")  # (a longer detail is cut at 99 columns)
    assert "| one too many" in run_cli("read", msg_id, cwd=clone.web, check=True).stdout
    proc = run_cli("cancel", msg_id, cwd=clone.main)
    assert proc.returncode == 1 and f"not cancelled: {msg_id} was dropped already" in proc.stderr


def test_a_sender_outside_every_worktree_cancels_through_the_clones_shared_sent_records(clone, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    proc = run_cli("send", f"--repo={clone.main}", "--to", str(clone.web), "--json", "--", "from a folder",
                   cwd=outside, check=True)
    msg_id = json.loads(proc.stdout)["results"][0]["id"]
    refused = run_cli("cancel", msg_id, cwd=clone.main)  # the main worktree did not send it
    assert refused.returncode == 1 and "is no message sent from this worktree" in refused.stderr
    done = run_cli("cancel", f"--repo={clone.main}", msg_id[:28], cwd=outside, check=True)
    assert done.stdout.startswith(f"cancelled {msg_id} to {os.path.relpath(clone.web, outside)}\n")
    assert "a model has seen it" not in done.stdout  # nobody was shown it
    assert (box_dir(clone, clone.web) / "cancelled" / f"{msg_id}.json").exists()
    invariants.check(clone.mail_root)


def test_hostile_sender_fields_and_wide_text_stay_escaped_and_under_100_columns(clone):
    """A message file written by hand (anyone running as the user can): every sender field
    carries terminal escapes, the body is wide CJK text. inbox escapes each and cuts by columns."""
    import unicodedata
    box = box_dir(clone, clone.web)
    send(clone.main, clone.web, "makes the box")
    msg_id = "20261201T000000.000000Z-p1-00000000000000bb"
    msg = {"v": 1, "id": msg_id, "sent_at": "2026-12-01T00:00:00.000000Z", "expires_at": "2099-01-01T00:00:00.000000Z",
           "kind": "note", "to": {"path": str(clone.web), "key": box.name}, "session": None,
           "from": {"path": "/tmp/\x1b]0;T\x07" + "p" * 90, "branch": "\x1b[31mmain\u202e", "session": "s\x00"},
           "body": "漢字" * 80}
    p = box / "inbox" / f"{msg_id}.json"
    p.write_text(json.dumps(msg))
    p.chmod(0o600)
    out = inbox(clone.web)
    assert "\x1b" not in out and "\x00" not in out and "\u202e" not in out
    assert "from (unverified) …ppp" in out and "[\\u001b[31mmain\\…]" in out  # escaped, then cut

    def cols(line):
        return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)
    assert max(cols(line) for line in out.splitlines()) < 100, out
    assert "  | 漢字漢字" in out and out.count("…") >= 2  # the long path and the wide line were cut


def test_inbox_in_a_moved_worktree_shows_the_mail_queued_before_the_move(clone):
    from helpers import git
    msg_id = send(clone.main, clone.web, "queued before the move")
    moved = clone.base / "web-moved"
    git("worktree", "move", str(clone.web), str(moved), cwd=clone.main)
    assert list(blocks(inbox(moved))) == [msg_id]
    assert f"{msg_id}  in this worktree's box" in run_cli("read", msg_id, cwd=moved, check=True).stdout
    proc = run_cli("cancel", msg_id, cwd=clone.main, check=True)  # followed along forwarded/
    assert proc.stdout.startswith(f"cancelled {msg_id} to ../{moved.name}\n")
    invariants.check(clone.mail_root)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (tests/run.sh installs it under CI)")
def test_inbox_without_all_counts_consumed_mail_without_reading_it(clone):
    """A listing costs what it shows (issue 26: 20,000 consumed made `inbox` 24x slower): without
    --all, a consumed message is counted, never opened; with --all it is read and shown."""
    import subprocess
    import sys
    ids = [send(clone.main, clone.web, f"done {n}") for n in range(3)]
    hook("UserPromptSubmit", clone.web, "s-done")
    hook("Stop", clone.web, "s-done")
    box = box_dir(clone, clone.web)
    assert {p.stem for p in (box / "seen").iterdir()} >= set(ids)
    trace = clone.base / "inbox.strace"
    proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat", "-o", str(trace), sys.executable,
                           "-m", "git_korus_mail", "inbox", "--json"], cwd=clone.web, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["messages"] == [] and data["hidden"] == {"consumed": 3}
    opened = [line for line in trace.read_text().splitlines() if any(i in line for i in ids)]
    assert not opened, opened
    every = inbox_json(clone.web, "--all")
    assert sorted(m["id"] for m in every["messages"]) == sorted(ids)
