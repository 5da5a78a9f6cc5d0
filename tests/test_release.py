"""Claims whose owner cannot be proven dead: doctor says exactly what is known, and `release`
lets a person who knows better let go of one. Never automatic; journaled; a live claim is refused."""

import json
import os

import pytest

from helpers import context_of, hook, run_cli
from git_korus_mail.core import keys
from git_korus_mail.store import claims


def box_dir(clone, path):
    return clone.mail_root / "box" / keys.key_for(str(path)).name


def names(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def journal(clone):
    p = clone.mail_root / "journal.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def _claimed(clone, owner_bytes):
    mid = run_cli("send", "--to", "../web", "held by a stranger", cwd=clone.main, check=True).stdout.split()[1]
    claiming = box_dir(clone, clone.web) / "claiming"
    claiming.mkdir(mode=0o700, exist_ok=True)
    path = claiming / f"{mid}.claim"
    path.write_bytes(owner_bytes)
    os.chmod(path, 0o600)
    return mid, path


def _owner(**over):
    owner = claims.me("consume", "s-elsewhere")
    owner.update(over)
    return json.dumps(owner).encode()


UNPROVABLE = {
    "other-host": (lambda: _owner(host="build-box-7", pid=4242), "host 'build-box-7'"),
    "other-pid-namespace": (lambda: _owner(pidns="pid:[4026599999]", pid=4242), "another pid namespace"),
    "mangled-record": (lambda: b"{not json", "unreadable or mangled"),
    "no-pid": (lambda: _owner(pid="x"), "no usable pid"),
}


@pytest.mark.parametrize("case", sorted(UNPROVABLE))
def test_doctor_says_what_is_known_and_how_to_release(clone, case):
    make, known = UNPROVABLE[case]
    mid, _ = _claimed(clone, make())
    proc = run_cli("doctor", "--json", cwd=clone.main)
    data = json.loads(proc.stdout)
    [finding] = [f for f in data["findings"] if f["check"] == "claims"]
    assert finding["ok"] is False and proc.returncode == 1
    assert known in finding["detail"] and "never broken automatically" in finding["detail"]
    assert "live" not in finding["detail"]
    assert finding["fix"] == f"if you know that process is gone: git korus-mail release {mid}"
    text = run_cli("doctor", cwd=clone.main).stdout
    assert "ok       claims" not in text and f"git korus-mail release {mid}" in text


@pytest.mark.parametrize("case", sorted(UNPROVABLE))
def test_release_lets_go_of_the_claim_and_the_mail_is_delivered(clone, case):
    make, _known = UNPROVABLE[case]
    mid, path = _claimed(clone, make())
    assert "held by a stranger" in context_of(hook("SessionStart", clone.web, "s1")[0])
    answer, _ = hook("Stop", clone.web, "s1")  # blocked: the claim is never broken automatically
    assert "cannot be proven dead" in answer["systemMessage"]
    assert f"git korus-mail release {mid}" in answer["systemMessage"]
    assert path.exists() and names(box_dir(clone, clone.web) / "receipts") == []

    proc = run_cli("release", mid, cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"released the claim on {mid}") and "queued again" in proc.stdout
    assert not path.exists()
    assert not [n for n in names(path.parent) if mid in n]  # nothing left aside either
    [ev] = [e for e in journal(clone) if e["event"] == "claim-released"]
    assert ev["id"] == mid and ev["by"] == "git korus-mail release" and ev["verdict"] == "unknown"

    hook("UserPromptSubmit", clone.web, "s1")
    hook("Stop", clone.web, "s1")
    assert names(box_dir(clone, clone.web) / "receipts") == [mid + ".json"]


def test_release_refuses_a_claim_whose_owner_runs_here(clone):
    mid, path = _claimed(clone, json.dumps(claims.me("consume", "s-live")).encode())  # this very process
    proc = run_cli("release", mid, cwd=clone.main)
    assert proc.returncode == 1 and "not released" in proc.stderr and "move in progress" in proc.stderr
    assert path.exists()
    assert not [e for e in journal(clone) if e["event"] == "claim-released"]


def test_release_of_a_decided_consume_finishes_it(clone):
    mid, path = _claimed(clone, _owner(host="elsewhere"))
    b = box_dir(clone, clone.web)
    (b / "receipts").mkdir(mode=0o700, exist_ok=True)
    (b / "receipts" / f"{mid}.json").write_text(json.dumps({"id": mid, "session": "s-elsewhere"}))
    proc = run_cli("release", mid, cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    assert "now in seen/" in proc.stdout
    assert names(b / "seen") == [mid + ".json"] and names(b / "inbox") == []


@pytest.mark.parametrize("arg,says", [("20260101T000000.000000Z-p1-0123456789abcdef", "no claim on"),
                                      ("../../etc/passwd", "not a message id"),
                                      ("\x1b[31mred", "not a message id")])
def test_release_without_a_claim_is_a_clean_error(clone, arg, says):
    run_cli("send", "--to", "../web", "x", cwd=clone.main, check=True)
    proc = run_cli("release", arg, cwd=clone.main)
    assert proc.returncode == 1 and says in proc.stderr and "Traceback" not in proc.stderr
    assert "\x1b" not in proc.stderr


def test_release_needs_an_id(clone):
    proc = run_cli("release", cwd=clone.main)
    assert proc.returncode == 129
