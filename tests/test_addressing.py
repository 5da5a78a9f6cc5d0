"""Mail accepted then lost, and mail addressed where nobody reads it (issue 9).

Real clones with real linked worktrees; the command and the drain run as separate
processes, as a user and Claude Code would run them.
"""

import json
import os
import shutil

import pytest

from helpers import context_of, git, hook, run_cli

# The TTL range send accepts, computed by hand: ten years of minutes (10 * 365 * 24 * 60).
MAX_TTL = 5256000


def box_of(clone, path):
    from git_korus_mail import keys
    return clone.mail_root / "box" / keys.key_for(str(path)).name


def files(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def send_id(clone, *args, cwd=None):
    proc = run_cli("send", "--json", *args, cwd=cwd or clone.main)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["results"][0]["id"]


def sent_fates(clone, cwd=None):
    proc = run_cli("status", "--json", cwd=cwd or clone.main)
    assert proc.returncode == 0, proc.stderr
    return {r["id"]: r["fate"] for r in json.loads(proc.stdout)["sent"]}


# -- send --ttl: only what the drain honours -------------------------------------------
def test_longest_ttl_send_accepts_is_shown_and_consumed_by_a_real_drain(clone):
    msg_id = send_id(clone, "--to", "web", "--ttl", str(MAX_TTL), "--", "kept ten years")
    msg = json.loads((box_of(clone, clone.web) / "inbox" / (msg_id + ".json")).read_text())
    assert msg["expires_at"][:4].isdigit() and msg["expires_at"][4] == "-"
    ans, _ = hook("SessionStart", clone.web, "sess-ttl-1")
    assert "kept ten years" in context_of(ans)
    hook("Stop", clone.web, "sess-ttl-1")
    assert files(box_of(clone, clone.web) / "quarantine") == []
    assert sent_fates(clone)[msg_id]["state"] == "consumed"


@pytest.mark.parametrize("ttl", [str(MAX_TTL + 1), "5000000000", "1" + "0" * 30, "0", "-5", "abc"])
def test_ttl_the_drain_would_not_honour_is_a_usage_error_naming_the_range(clone, ttl):
    proc = run_cli("send", "--to", "web", "--ttl", ttl, "--", "hello", cwd=clone.main)
    assert proc.returncode == 129, (proc.returncode, proc.stderr)
    first = proc.stderr.splitlines()[0]
    assert first.startswith("git korus-mail: --ttl ") and f"1 to {MAX_TTL} minutes" in first, first
    assert "usage:" in proc.stderr and "Traceback" not in proc.stderr
    assert files(box_of(clone, clone.web) / "inbox") == []


# -- status: quarantined and missing, never unknown ----------------------------------------
def test_status_names_the_quarantine_reason(clone):
    msg_id = send_id(clone, "--to", "web", "--", "to be mangled")
    path = box_of(clone, clone.web) / "inbox" / (msg_id + ".json")
    msg = json.loads(path.read_text())
    msg["expires_at"] = "95077-04-21T10:13:20.000000Z"  # what `--ttl 5000000000` used to write
    path.write_text(json.dumps(msg))
    hook("SessionStart", clone.web, "sess-q-1")
    assert files(box_of(clone, clone.web) / "inbox") == []
    fate = sent_fates(clone)[msg_id]
    assert fate["state"] == "quarantined" and "bad expires_at" in fate["reason"], fate
    text = run_cli("status", cwd=clone.main).stdout
    assert "quarantined: invalid message: bad expires_at" in text and "unknown" not in text


def test_status_says_missing_for_mail_that_vanished(clone):
    third = clone.add_worktree("third")
    gone_file = send_id(clone, "--to", "web", "--", "file deleted")
    gone_box = send_id(clone, "--to", "third", "--", "box deleted")
    (box_of(clone, clone.web) / "inbox" / (gone_file + ".json")).unlink()
    shutil.rmtree(box_of(clone, third))
    fates = sent_fates(clone)
    assert fates[gone_file]["state"] == "missing" and fates[gone_box]["state"] == "missing", fates
    lines = run_cli("status", cwd=clone.main).stdout.splitlines()
    for msg_id in (gone_file, gone_box):
        [line] = [x for x in lines if x.strip().startswith(msg_id)]
        assert "  missing (" in line and "unknown" not in line, line


# -- send --to a worktree that is gone ------------------------------------------------------
def test_send_to_a_removed_worktree_is_refused_and_names_those_that_exist(clone):
    feature = clone.add_worktree("feature")
    send_id(clone, "--to", "feature", "--", "before the removal")
    git("worktree", "remove", str(feature), cwd=clone.main)
    queued = files(box_of(clone, feature) / "inbox")
    for dest in ("feature", str(feature), box_of(clone, feature).name[:12]):
        proc = run_cli("send", "--to", dest, "--", "after the removal", cwd=clone.main)
        assert proc.returncode == 1, (dest, proc.stdout, proc.stderr)
        line = proc.stderr.strip()
        assert len(line.splitlines()) == 1 and line.startswith("git korus-mail: not queued: "), line
        assert os.path.realpath(clone.main) in line and os.path.realpath(clone.web) in line, line
    assert files(box_of(clone, feature) / "inbox") == queued


def test_send_to_a_prunable_worktree_is_refused_and_names_those_that_exist(clone):
    stale = clone.add_worktree("stale")
    send_id(clone, "--to", "stale", "--", "before it went")
    shutil.rmtree(stale)  # deleted by hand: git lists it as prunable
    assert "prunable" in git("worktree", "list", "--porcelain", cwd=clone.main).stdout
    queued = files(box_of(clone, stale) / "inbox")
    for dest in ("stale", box_of(clone, stale).name[:12]):
        proc = run_cli("send", "--to", dest, "--", "after", cwd=clone.main)
        assert proc.returncode == 1, (dest, proc.stdout, proc.stderr)
        line = proc.stderr.strip()
        assert os.path.realpath(clone.web) in line and f"{os.path.realpath(stale)}," not in line, line
        assert not line.endswith(os.path.realpath(stale)), line
    assert files(box_of(clone, stale) / "inbox") == queued
