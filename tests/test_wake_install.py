"""install --urgent arms the wake-up tier; uninstall takes it out byte for byte; doctor checks it."""

import json
import os
from pathlib import Path

from helpers import git, run_cli
from install_fixtures import FOREIGN_SETTINGS, install, load, settings_path, stub_of, uninstall

from git_korus_mail.clients.claude import settings as claude


def watcher_entries(data):
    return [h for g in data["hooks"]["Stop"] for h in g["hooks"] if h.get("asyncRewake")]


def expected_watcher(stub):
    # spelled out here, not computed by the product: the entry Claude Code 2.1.332 reads
    return {"type": "command", "command": f"'{stub}' Watch", "async": True, "asyncRewake": True,
            "timeout": 1200, "rewakeSummary": "korus-mail: new mail", "rewakeMessage": "korus-mail:"}


def doctor(cwd):
    proc = run_cli("doctor", "--json", cwd=cwd)
    return proc.returncode, json.loads(proc.stdout)


def test_urgent_arms_the_watcher_in_every_worktree_and_stays_armed(clone):
    proc = install(clone.main, "--urgent")
    assert "the wake-up tier is armed" in proc.stdout and "problem" not in proc.stdout, proc.stdout
    stub = stub_of(clone)
    for wt in (clone.main, clone.web):
        data = load(settings_path(wt))
        assert watcher_entries(data) == [expected_watcher(stub)]
        stop = data["hooks"]["Stop"]
        assert len(stop) == 1 and stop[0]["hooks"][0]["command"] == f"'{stub}' Stop"
        assert claude.check_settings(data, stub, urgent=True) == []
    record = load(clone.mail_root / "hooks" / "installed.json")
    assert record["scopes"]["local"]["urgent"] is True
    # a plain install later (or a new worktree's post-checkout install) keeps the tier armed
    before = settings_path(clone.main).read_bytes()
    install(clone.main)
    assert settings_path(clone.main).read_bytes() == before
    new = clone.base / "new"
    git("worktree", "add", "-q", str(new), "-b", "new", cwd=clone.main)
    assert watcher_entries(load(settings_path(new))) == [expected_watcher(stub)]
    rc, data = doctor(clone.main)
    assert rc == 0, data
    armed = [f["where"] for f in data["findings"] if f["check"] == "wake" and f["ok"]]
    assert str(settings_path(clone.main)) in armed and str(settings_path(new)) in armed


def test_uninstall_takes_the_tier_out_byte_for_byte(clone):
    p = settings_path(clone.main)
    p.parent.mkdir()
    p.write_bytes(FOREIGN_SETTINGS.encode("utf-8"))
    original = p.read_bytes()
    install(clone.main, "--urgent")
    assert watcher_entries(load(p))
    uninstall(clone.main)
    assert p.read_bytes() == original
    assert not (clone.web / ".claude").exists()
    assert not Path(stub_of(clone)).exists()


def test_doctor_names_a_missing_watcher(clone):
    install(clone.main, "--urgent")
    p = settings_path(clone.web)
    data = load(p)
    data["hooks"]["Stop"][0]["hooks"] = [h for h in data["hooks"]["Stop"][0]["hooks"] if not h.get("asyncRewake")]
    p.write_text(json.dumps(data, indent=2) + "\n")
    rc, report = doctor(clone.main)
    assert rc == 1
    bad = [f for f in report["findings"] if not f["ok"]]
    assert any(f["check"] == "wake" and f["where"] == str(p) and "no watcher entry" in f["detail"] for f in bad), bad
    install(clone.main)  # the record says urgent: a plain install puts the watcher back
    assert watcher_entries(load(p)) == [expected_watcher(stub_of(clone))]
    assert doctor(clone.main)[0] == 0


def test_the_stub_never_wakes_on_a_failing_helper(clone, tmp_path):
    """exit 2 only from the helper's own wake line: a helper that crashes, is missing, or exits 2
    itself (a Python usage error does) makes the watcher's stub exit 0."""
    install(clone.main, "--urgent")
    stub = stub_of(clone)
    text = Path(stub).read_text()
    for body, want in (("exit 2", 0), ("echo boom >&2; exit 1", 0), ("echo 'korus-mail-wake' ; exit 3", 0),
                       ("echo 'korus-mail-wake mail from a'", 2)):
        fake = tmp_path / f"helper-{want}-{abs(hash(body))}"
        fake.write_text(f"#!/bin/sh\ncat >/dev/null\n{body}\n")
        fake.chmod(0o755)
        lines = [f"helper='{fake}'" if ln.startswith("helper=") else ln for ln in text.splitlines()]
        s = tmp_path / "stub"
        s.write_text("\n".join(lines) + "\n")
        s.chmod(0o700)
        import subprocess
        proc = subprocess.run(["/bin/sh", "-c", f"'{s}' Watch"], input=b"{}", capture_output=True, cwd=clone.main)
        assert proc.returncode == want, (body, proc)
        if want == 2:
            assert proc.stderr == b"mail from a\n" and proc.stdout == b""
        else:
            assert proc.stderr == b"" and proc.stdout == b"", (body, proc)
    missing = tmp_path / "stub-missing"
    missing.write_text("\n".join([f"helper='{tmp_path}/nope'" if ln.startswith("helper=") else ln
                                  for ln in text.splitlines()]) + "\n")
    missing.chmod(0o700)
    import subprocess
    env = dict(os.environ, PATH="/usr/bin:/bin")
    proc = subprocess.run(["/bin/sh", "-c", f"'{missing}' Watch"], input=b"{}", capture_output=True, env=env)
    assert proc.returncode == 0 and proc.stderr == b"" and proc.stdout == b""
