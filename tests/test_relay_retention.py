"""The relay's records follow the store's retention (relay/retention.py, docs/RELAY.md
"Retention"): relay/sent by its message's expiry, relay/received (the redelivery guard) only
once its fate went back and the server can no longer give that message again. No server is
needed: the records are written as the relay writes them, and the prune runs by itself, also
SIGKILLed between its journal line and its unlinks. tests/invariants.py holds throughout."""

import json
import subprocess
import time

import invariants
from helpers import PYTHON, git, run_cli

from git_korus_mail.relay import local, retention

DAY = 86400.0
VM = "bbbbbbbbbbbb"


def configured_clone(tmp_path):
    """A clone with a remote configured as `remote add` leaves it, on a port nothing listens on
    (a relay that ran would keep trying). (repo, its common dir)."""
    repo = tmp_path / "repo"
    git("init", "-q", "-b", "main", str(repo), cwd=tmp_path)
    git("commit", "-q", "--allow-empty", "-m", "root", cwd=repo)
    common = str(repo / ".git")
    local.save_config(common, {"url": "nats://127.0.0.1:9", "label": "laptop", "clone": "aaaaaaaaaaaa",
                               "namespace": "0123456789abcdef", "origin": "/nowhere", "roots": []})
    return repo, common


def make_clone(tmp_path):
    """configured_clone with a directory naming one other clone (`vm`), and this test holding
    the relay's lock, so no relay process starts."""
    repo, common = configured_clone(tmp_path)
    local.save_peers(common, {VM: {"label": "vm", "updated": time.time(), "sessions": [],
                                   "worktrees": [{"name": "web", "path": "/far/web",
                                                  "key": "web-0123456789abcdef01234567"}]}})
    lock = local.take_lock(common)
    assert lock is not None
    return repo, common


def published(common, msg_id, fate):
    """What the relay leaves once the server acked an outbox entry (link.publish_one), with a fate."""
    env = local.read_entry(common, local.OUTBOX, msg_id)
    local.mark(common, local.SENT, msg_id, {"id": msg_id, "to_clone": VM, "to_label": "vm",
                                            "expires_at": env["msg"]["expires_at"], "fate": fate})
    local.remove_entry(common, local.OUTBOX, msg_id)


def received(common, msg_id, age_days, fate):
    local.mark(common, local.RECEIVED, msg_id, {"id": msg_id, "box": "web-x", "from_clone": VM,
                                                "received_at": time.time() - age_days * DAY, "fate": fate})


def relay_pruned(repo):
    lines = (repo / ".git" / "mail" / "journal.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines if '"relay-pruned"' in x]


def setup_records(tmp_path):
    repo, common = make_clone(tmp_path)
    sent = run_cli("send", "--to", "vm:web", "--ttl=60", "--", "across", cwd=repo, check=True).stdout.split()[1]
    published(common, sent, {"state": "consumed", "session": "s-vm", "at": "2026-12-02T00:00:00.000000Z"})
    done_old = "20261001T000000.000000Z-p1-00000000000000aa"      # fate back, 40 days old: goes
    open_old = "20261001T000000.000000Z-p1-00000000000000bb"      # no fate back yet: stays
    done_young = "20261120T000000.000000Z-p1-00000000000000cc"    # fate back, 10 days: the stream may still give it
    received(common, done_old, 40, {"state": "consumed"})
    received(common, open_old, 40, None)
    received(common, done_young, 10, {"state": "consumed"})
    return repo, common, sent, (done_old, open_old, done_young)


def test_relay_records_are_pruned_by_the_stores_retention(tmp_path):
    repo, common, sent, (done_old, open_old, done_young) = setup_records(tmp_path)
    invariants.check(repo / ".git" / "mail")
    # one day kept: the sent record goes once its message's expiry (an hour after sending) is a day old
    assert retention.prune(common, _root(common), 1, now=time.time() + DAY + 3600 - 120) == \
        {"sent": [], "received": [done_old]}
    root = _root(common)
    got = retention.prune(common, root, 1, now=time.time() + DAY + 3600 + 120)
    assert got == {"sent": [sent], "received": []}
    assert local.ids_of(common, local.SENT) == [] and local.ids_of(common, local.RECEIVED) == [open_old, done_young]
    assert [(r["sent"], r["received"], r["ids"], r["days"]) for r in relay_pruned(repo)] == \
        [(0, 1, [done_old], 1), (1, 0, [sent], 1)]
    # the box's own sent record outlives the relay's (it is pruned once a day): status says it
    # went, and the invariants tell pruned from lost by the journal line
    invariants.check(repo / ".git" / "mail")
    status = run_cli("status", cwd=repo, check=True).stdout
    assert "missing" in status and sent in status, status


def test_a_prune_killed_after_its_journal_line_is_finished_by_the_next(tmp_path):
    repo, common, sent, (done_old, _open, _young) = setup_records(tmp_path)
    later = time.time() + 2 * DAY
    proc = subprocess.run([PYTHON, "-c", "import sys; from git_korus_mail.relay import retention;"
                           "from git_korus_mail.store.files import MailRoot;"
                           "retention.prune(sys.argv[1], MailRoot.open(sys.argv[1]), 1, now=float(sys.argv[2]))",
                           common, str(later)], env=_env("relay:prune-journaled"), timeout=60)
    assert proc.returncode == -9, proc.returncode
    assert [r["ids"] for r in relay_pruned(repo)] == [[sent, done_old]]
    assert local.ids_of(common, local.SENT) == [sent] and done_old in local.ids_of(common, local.RECEIVED)
    invariants.check(repo / ".git" / "mail")
    assert retention.prune(common, _root(common), 1, now=later) == {"sent": [sent], "received": [done_old]}
    assert local.ids_of(common, local.SENT) == [] and done_old not in local.ids_of(common, local.RECEIVED)
    invariants.check(repo / ".git" / "mail")


def _root(common):
    from git_korus_mail.store.files import MailRoot
    return MailRoot.open(common)


def _env(step):
    import os
    return dict(os.environ, KORUS_MAIL_CRASH_AT=step)
