"""The store owns every byte under <git-common-dir>/mail/ (docs/STORE.md): checked on what is
opened, not on names. Real commands run, each as its own process, under tests/storeaudit.py, which
records every path under the mail root reached from code outside store/ (CPython's audit events
for open, listing, rename, link, unlink, mkdir ...; os.stat and os.lstat, which os.path's checks
call). The grep for the store's primitives (tests/test_store_reads.py) stays as the cheap first
look; this is the one that sees a plain `open(os.path.join(root, ...))` from the core."""

import json
import os
import subprocess
import sys
from pathlib import Path

import hermetic
from helpers import PYTHON

AUDIT = Path(__file__).resolve().parent / "storeaudit.py"


class Audited:
    def __init__(self, clone, log):
        self.clone, self.log = clone, log

    def run(self, *args, cwd, stdin=None, env=None):
        full = dict(os.environ, KORUS_STORE_AUDIT=str(self.log),
                    KORUS_STORE_AUDIT_ROOT=str(self.clone.mail_root), **(env or {}))
        proc = subprocess.run([PYTHON, str(AUDIT), *args], cwd=str(cwd), input=stdin, capture_output=True,
                              text=True, env=full, timeout=120)
        return proc

    def hook(self, event, cwd, session, **extra):
        payload = dict(hermetic.payload(event, session, cwd), **extra)
        proc = self.run("drain", cwd=cwd, stdin=json.dumps(payload))
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def breaches(self):
        return self.log.read_text().splitlines() if self.log.exists() else []


def test_no_command_reaches_a_store_file_but_through_the_store(clone, tmp_path):
    a = Audited(clone, tmp_path / "breaches.log")
    main, web = clone.main, clone.web
    proc = a.run("install", "--client=claude", cwd=main)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert a.run("send", "--to", str(web), "--", "first", cwd=main).returncode == 0
    out = a.run("send", "--to", "web", "--kind", "handoff", "--json", "--", "second", cwd=main)
    assert out.returncode == 0, out.stderr
    second = json.loads(out.stdout)
    # a launch's whole life in web: shown at the opening, a tool call with nothing new (twice:
    # the stamp, then the stamp read), consumed at Stop, ended
    assert "first" in a.hook("SessionStart", web, "s-audit")
    a.hook("UserPromptSubmit", web, "s-audit", prompt="go")
    a.hook("PostToolUse", web, "s-audit", tool_name="Bash")
    a.hook("PostToolUse", web, "s-audit", tool_name="Bash")
    a.hook("Stop", web, "s-audit", last_assistant_message="done")
    a.run("send", "--to", "web", "--", "third", cwd=main)
    for args, cwd in ((["list"], main), (["status"], main), (["status", "--json"], web), (["who"], main),
                      (["inbox", "--all"], web), (["doctor"], main), (["off"], web), (["on"], web)):
        proc = a.run(*args, cwd=cwd)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
    msg_id = second["results"][0]["id"]
    for args, cwd in ((["read", msg_id], web), (["cancel", msg_id], main)):
        proc = a.run(*args, cwd=cwd)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
    a.hook("SessionEnd", web, "s-audit", reason="other")
    # Codex's drain, the same phases through its own protocol module
    a.run("send", "--to", "main", "--", "to codex", cwd=web)
    for event in ("SessionStart", "PostToolUse", "Stop"):
        payload = dict(hermetic.payload(event, "s-codex", main), transcript_path="")
        proc = a.run("drain", "--client=codex", cwd=main, stdin=json.dumps(payload))
        assert proc.returncode == 0, proc.stderr
    assert a.run("uninstall", cwd=main).returncode == 0
    assert not a.breaches(), "\n".join(a.breaches())


def test_the_audit_sees_a_plain_read_of_a_store_file_from_the_core(clone, tmp_path):
    # the mutation this rail names: code in core/ reads a message by its path, not through the
    # store (os.path for the check and the listing, open for the read)
    a = Audited(clone, tmp_path / "breaches.log")
    assert a.run("send", "--to", "web", "--", "hello", cwd=clone.main).returncode == 0
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n"
                     "from git_korus_mail.core import keys\n"
                     f"box = os.path.join({str(clone.mail_root)!r}, 'box', keys.key_for({str(clone.web)!r}).name)\n"
                     "if os.path.isdir(os.path.join(box, 'inbox')):\n"
                     "    name = sorted(os.listdir(os.path.join(box, 'inbox')))[0]\n"
                     "    with open(os.path.join(box, 'inbox', name), 'rb') as f:\n"
                     "        f.read()\n")
    proc = a.run("--as", "core/reader.py", str(probe), cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    lines = a.breaches()
    assert [ln.split(" ", 1)[0] + " " + ln.rsplit(" ", 1)[1] for ln in lines] == [
        "os.stat core.reader:4", "os.listdir core.reader:5", "open core.reader:6"], lines
    assert lines[2].startswith("open box/") and lines[2].split(" ")[1].endswith(".json"), lines
    # the same read from store/ is the store's own
    a.log.unlink()
    assert a.run("--as", "store/reader.py", str(probe), cwd=clone.main).returncode == 0
    assert not a.breaches()


def test_the_audit_runner_is_the_command(clone, tmp_path):
    # the runner must run the command as `python -m git_korus_mail` does: same answer
    a = Audited(clone, tmp_path / "breaches.log")
    assert a.run("--version", cwd=clone.main).stdout == subprocess.run(
        [PYTHON, "-m", "git_korus_mail", "--version"], capture_output=True, text=True).stdout
    assert sys.executable  # (pytest's interpreter runs the helpers above)


def test_the_relays_files_are_reached_only_through_the_store(clone, tmp_path):
    """mail/relay/ (docs/RELAY.md, "On disk") is under the mail root: what commands do with a
    remote configured (queue into the outbox, read the directory, ask a cancel, show the link
    and fates, prune) goes through store/relayfiles.py. The relay's lock is held here, so no
    relay process starts; nothing here touches the network."""
    import time
    from git_korus_mail.relay import local
    common = str(clone.mail_root.parent)
    local.save_config(common, {"url": "nats://127.0.0.1:9", "label": "laptop", "clone": "aaaaaaaaaaaa",
                               "namespace": "0123456789abcdef", "origin": "/nowhere", "roots": []})
    local.save_peers(common, {"bbbbbbbbbbbb": {"label": "vm", "updated": time.time(), "sessions": [],
                                               "worktrees": [{"name": "web", "path": "/far/web",
                                                              "key": "web-0123456789abcdef01234567"}]}})
    assert local.take_lock(common) is not None
    a = Audited(clone, tmp_path / "breaches.log")
    out = a.run("send", "--to", "vm:web", "--", "across", cwd=clone.web)
    assert out.returncode == 0 and "waits in this clone's outbox" in " ".join(out.stdout.split()), out.stderr
    msg_id = out.stdout.split()[1]
    for args in (["status"], ["who"], ["list"], ["remote"], ["cancel", msg_id]):
        proc = a.run(*args, cwd=clone.web)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
    probe = tmp_path / "prune.py"
    probe.write_text("from git_korus_mail.relay import retention\n"
                     "from git_korus_mail.store.files import MailRoot\n"
                     f"retention.prune({common!r}, MailRoot.open({common!r}), 0, now=4e9)\n")
    assert a.run("--as", "relay/pruner.py", str(probe), cwd=clone.main).returncode == 0
    assert local.cancel_ids(common) == [msg_id] and local.outbox_ids(common) == [msg_id]
    assert not a.breaches(), "\n".join(a.breaches())
