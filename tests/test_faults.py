"""Faults that must cost only themselves: a malformed JSON document, a hostile hook payload,
a journal that cannot be written, a full disk.

The exit-code rule under test (docs/HOOKS.md): a hook run exits 0 once its output is written;
what fails after that is reported (stderr, the next Stop's notice), and nothing is consumed
that was not shown. `send` says "queued" exactly when the inbox link exists.
"""

import glob
import json
import os
import subprocess

import pytest

from helpers import REPO_ROOT, context_of, hook, launch_dir, run_cli
from git_korus_mail import fastjson
from git_korus_mail.core import keys

SHALLOW = ['"abc', "[1 2]", "{", '{"a":', '{"a" 1}', "", "   ", "[", '"\\u12', '"\\x"', "nul", "tru",
           "[1,]", '{"v": 1, "id": "2026', "1 2", "\x00"]
DEEP = "['[' * 100_000, '{\"a\":' * 100_000]"  # built by the child too: argv cannot carry 100,000 characters
MALFORMED = SHALLOW + eval(DEEP)


def box_dir(clone, path):
    return clone.mail_root / "box" / keys.key_for(str(path)).name


def names(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


# -- fastjson -----------------------------------------------------------------------------
@pytest.mark.parametrize("text", MALFORMED, ids=lambda t: repr(t[:12]))
def test_every_malformed_document_raises_value_error(text):
    with pytest.raises(ValueError):
        fastjson.loads(text)
    with pytest.raises(ValueError):
        fastjson.loads(text.encode())


def test_invalid_utf8_bytes_raise_value_error():
    with pytest.raises(ValueError):
        fastjson.loads(b'"\xff"')


def test_loads_still_parses_what_json_parses():
    doc = {"a": [1, 2.5, None, True, "\u00e9\U0001F600"], "b": {"c": ""}}
    assert fastjson.loads(json.dumps(doc)) == doc
    assert fastjson.loads(" \n" + json.dumps(doc) + "\n ") == doc


def test_a_failed_encode_does_not_poison_later_ones():
    doc = {"x": [object()]}
    with pytest.raises(TypeError):
        fastjson.dumps(doc)
    doc["x"] = [1]  # the very same containers, now sound: a stale circular-check marker refuses them
    assert fastjson.dumps(doc) == '{"x": [1]}'
    assert fastjson.dumps(doc, sort_keys=True) == '{"x": [1]}'


PYTHONS = sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3"))
SUPPORTED = [p for p in PYTHONS if p.split("/versions/")[1].split(".")[1] in ("9", "10", "11", "12", "13")]

_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from git_korus_mail import fastjson
bad = %r + %s  # no `import json` here: it would hide the 3.10/3.11 fault
for text in bad:
    try:
        fastjson.loads(text)
    except ValueError:
        continue
    except BaseException as exc:
        print("WRONG", repr(text[:20]), type(exc).__name__)
    else:
        print("ACCEPTED", repr(text[:20]))
print("done")
""" % (SHALLOW, DEEP)


@pytest.mark.parametrize("python", SUPPORTED or ["none"], ids=lambda p: p.split("/versions/")[-1].split("/")[0])
def test_malformed_json_is_value_error_on_every_supported_python(python):
    if python == "none":
        pytest.skip("no pyenv Pythons at /root/.pyenv/versions (tests/run.sh runs the suite on each)")
    proc = subprocess.run([python, "-c", _PROBE, str(REPO_ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done\n", proc.stdout


# -- hostile hook payloads ----------------------------------------------------------------------
def _raw_hook(cwd, data):
    proc = subprocess.run([os.sys.executable, "-m", "git_korus_mail", "drain"], cwd=cwd, input=data,
                          capture_output=True)
    return proc


def _payload(cwd, **over):
    p = {"session_id": "s1", "transcript_path": "", "cwd": str(cwd), "hook_event_name": "SessionStart",
         "source": "startup"}
    p.update(over)
    return json.dumps(p).encode()


PAYLOADS = {
    "open-brace": lambda c: b"{",
    "truncated": lambda c: _payload(c)[:-7],
    "over-4-mib": lambda c: _payload(c, pad="x" * (4 * 1024 * 1024)),
    "deep-array": lambda c: b"[" * 100_000 + b"]" * 100_000,
    "deep-object": lambda c: b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "cwd-with-nul": lambda c: _payload(str(c) + "\x00/x"),
    "cwd-5000-chars": lambda c: _payload(str(c) + "/" + "a" * 5000),
    "cwd-long-component": lambda c: _payload(str(c) + "/" + "b" * 300),
}


@pytest.mark.parametrize("case", sorted(PAYLOADS))
def test_hostile_payload_is_a_clean_fault(clone, case):
    proc = _raw_hook(clone.web, PAYLOADS[case](clone.web))
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()[-2000:]
    answer = json.loads(proc.stdout)
    assert "korus-mail" in answer["systemMessage"]
    if case == "over-4-mib":
        assert "over 4 MiB" in answer["systemMessage"]


# -- an unwritable journal -----------------------------------------------------------------------
def _break_journal(clone, how, tmp_path):
    j = clone.mail_root / "journal.jsonl"
    if j.exists():
        j.unlink()
    if how == "directory":
        j.mkdir(mode=0o700)
    elif how == "symlink-loop":  # O_NOFOLLOW: ELOOP
        os.symlink("journal.jsonl", str(j))
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["directory", "symlink-loop"])
def test_unwritable_journal_send_queues_once_and_hooks_exit_0(clone, tmp_path, how):
    warm = run_cli("send", "--to", "../web", "warm-up", cwd=clone.main, check=True).stdout.split()[1]
    hook("SessionStart", clone.web, "warm")
    hook("Stop", clone.web, "warm")  # the box and every subdir exist: only the journal is at fault
    _break_journal(clone, how, tmp_path)
    inbox = box_dir(clone, clone.web) / "inbox"

    proc = run_cli("send", "--to", "../web", "mail while the journal is broken", cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    assert "not queued" not in proc.stderr
    assert proc.stdout.startswith("queued ")
    mid = proc.stdout.split()[1]
    assert "warning" in proc.stderr and "journal" in proc.stderr, proc.stderr
    assert names(inbox) == [mid + ".json"]          # queued once: no retry needed, none doubled

    answer, proc = hook("SessionStart", clone.web, "s1")  # asserts exit 0
    assert "mail while the journal is broken" in context_of(answer)
    assert "journal" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    b = box_dir(clone, clone.web)
    assert names(b / "shown" / launch_dir("s1")) == [".launch", mid]

    answer, proc = hook("UserPromptSubmit", clone.web, "s1")
    assert answer is None
    answer, proc = hook("Stop", clone.web, "s1")
    assert names(b / "receipts") == sorted([warm + ".json", mid + ".json"]) and names(inbox) == []
    assert "journal" in answer["systemMessage"]          # told, at the Stop
    assert "stays queued" not in answer["systemMessage"]  # and not told a lie about the consume
    assert "Traceback" not in proc.stderr


def test_a_quarantine_with_an_unwritable_journal_is_not_a_drain_failure(clone, tmp_path):
    run_cli("send", "--to", "../web", "good one", cwd=clone.main, check=True)
    _break_journal(clone, "directory", tmp_path)
    (box_dir(clone, clone.web) / "inbox" / "junk.txt").write_bytes(b"junk")
    answer, proc = hook("SessionStart", clone.web, "s1")
    assert "| good one" in context_of(answer)
    assert "drain failed" not in json.dumps(answer)
    answer, _ = hook("Stop", clone.web, "s1")
    assert "quarantined" in answer["systemMessage"] and "journal" in answer["systemMessage"]
    assert len(names(box_dir(clone, clone.web) / "receipts")) == 1


# -- a full disk ---------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt, leave_pages):
    """Fill the filesystem, then free `leave_pages` pages: the disk a hook meets at its worst."""
    filler = mnt / "filler"
    fd = os.open(str(filler), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    size = os.path.getsize(filler)
    os.truncate(filler, max(0, size - leave_pages * 4096))
    return filler


@pytest.mark.parametrize("free_pages", [0, 1, 3])
def test_full_disk_every_hook_exits_0_and_nothing_unseen_is_consumed(small_disk, free_pages):
    from helpers import Clone
    c = Clone(small_disk)
    web = c.add_worktree("web")
    ids = [run_cli("send", "--to", "../web", f"message {i}", cwd=c.main, check=True).stdout.split()[1]
           for i in range(4)]
    b = c.mail_root / "box" / keys.key_for(str(web)).name
    filler = _fill(small_disk, free_pages)

    shown = set()
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        answer, proc = hook(event, web, "s1")   # asserts exit 0
        assert "Traceback" not in proc.stderr, proc.stderr
        shown.update(i for i in ids if i in (context_of(answer) or ""))
    consumed = {n[:-len(".json")] for n in names(b / "receipts")}
    assert consumed <= shown, (consumed, shown)
    # nothing was lost: whatever was not consumed is still queued, and goes once space is back
    assert consumed | {n[:-len(".json")] for n in names(b / "inbox")} == set(ids)
    filler.unlink()
    for _ in range(3):
        hook("SessionStart", web, "s2")
        hook("Stop", web, "s2")
    assert {n[:-len(".json")] for n in names(b / "receipts")} == set(ids)
    assert names(b / "inbox") == []


def test_send_on_a_full_disk_says_not_queued_only_when_nothing_is_queued(small_disk):
    from helpers import Clone
    c = Clone(small_disk)
    web = c.add_worktree("web")
    run_cli("send", "--to", "../web", "first", cwd=c.main, check=True)
    b = c.mail_root / "box" / keys.key_for(str(web)).name
    before = names(b / "inbox")
    _fill(small_disk, 0)
    proc = run_cli("send", "--to", "../web", "x" * 9000, cwd=c.main)
    after = names(b / "inbox")
    if proc.returncode == 0:
        assert len(after) == len(before) + 1 and proc.stdout.startswith("queued ")
    else:
        assert "not queued" in proc.stderr and after == before


# -- honest reports: nothing from disk reaches a terminal raw ---------------------------------------
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u200b", "\r")


def test_status_and_list_escape_every_name_and_field_from_disk(clone):
    run_cli("send", "--to", "../web", "hello", cwd=clone.main, check=True)
    root = clone.mail_root
    own = root / "box" / keys.key_for(str(clone.main)).name
    web = root / "box" / keys.key_for(str(clone.web)).name
    with open(root / "journal.jsonl", "a") as j:
        j.write(json.dumps({"at": "2026-01-01T00:00:00.000000Z\x1b[2J", "event": "sent\x1b]0;pwned\x07",
                            "id": "\u202eevil", "\x1b[31mkey": "v\r\x9b"}) + "\n")
    (own / "sessions").mkdir(mode=0o700, exist_ok=True)
    (own / "sessions" / "evil.json").write_text(json.dumps({
        "session": "\x1b[2Jsess", "state": "idle\x07", "last_event": "\u202eStop", "at": "2026\u200b",
        "events": {"Stop\x1b[1m": "2099-01-01T00:00:00Z\x1b"}}))
    os.chmod(own / "sessions" / "evil.json", 0o600)
    sent = sorted((own / "sent").iterdir())[0]
    rec = json.loads(sent.read_text())
    rec["path"] = "/w\x1b[5mblink"
    sent.write_text(json.dumps(rec))
    (web / "path").write_text("/tmp/\x1b]8;;http://x\x07link\n")
    odd = root / "box" / "evil\x1b[31m-0123456789abcdef01234567"
    odd.mkdir(mode=0o700)
    (odd / "path").write_text("/p\x1b[31m\n")
    os.chmod(odd / "path", 0o600)
    for cmd in (["status"], ["list"]):
        proc = run_cli(*cmd, cwd=clone.main, env={"NO_COLOR": "1"})
        assert proc.returncode == 0, proc.stderr
        raw = [c for c in RAW if c in proc.stdout]
        assert not raw, (cmd, raw, proc.stdout)
        assert "\\u001b" in proc.stdout, (cmd, proc.stdout)


def test_doctor_escapes_a_stranded_boxs_recorded_path(clone):
    """A box no worktree reads is named in doctor's report by the path it recorded: that path
    comes from disk, so it is escaped like every other field, never printed raw."""
    run_cli("send", "--to", "../web", "hello", cwd=clone.main, check=True)
    web = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    odd = clone.mail_root / "box" / "gone-0123456789abcdef01234567"
    (odd / "inbox").mkdir(mode=0o700, parents=True)
    os.chmod(odd, 0o700)
    [msg] = (web / "inbox").iterdir()
    (odd / "inbox" / msg.name).write_bytes(msg.read_bytes())
    os.chmod(odd / "inbox" / msg.name, 0o600)
    (odd / "path").write_text("/gone/\x1b]0;pwned\x07\x1b[2J\n")
    os.chmod(odd / "path", 0o600)
    proc = run_cli("doctor", cwd=clone.main, env={"NO_COLOR": "1"})
    assert "stranded" in proc.stdout, proc.stdout
    raw = [c for c in RAW if c in proc.stdout]
    assert not raw, (raw, proc.stdout)
    assert "\\u001b" in proc.stdout, proc.stdout


def test_a_journal_rotation_that_times_out_is_a_reported_fault_not_an_exception(clone, monkeypatch):
    """The line is written before the rotation takes its lock; portalocker's timeout there is no
    OSError, and it must not turn a done send or consume into a failure either."""
    from git_korus_mail.store import journal
    from git_korus_mail.store.files import MailRoot
    run_cli("send", "--to", "../web", "x", cwd=clone.main, check=True)
    root = MailRoot.open(str(clone.common_dir))

    class LockTimeout(Exception):  # stands for portalocker.exceptions.LockException
        pass

    def append(*_a, **_k):
        raise LockTimeout("could not lock journal.lock within 5 s")

    monkeypatch.setattr(journal, "append", append)  # the module MailRoot.journal writes through
    assert root.journal("sent", id="x") is False
    [fault] = root.take_journal_faults()
    assert "LockTimeout" in fault and "sent" in fault
    assert root.take_journal_faults() == []
