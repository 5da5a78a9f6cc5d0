"""The relay's copy of the namespace's directory (relay/peers.json), from which a send resolves
`<label>:<worktree>` offline (docs/RELAY.md): a server that cannot give an entry now (a leader
election, a timeout) must never make a known clone unknown, or sends to it are refused for a
server's hiccup (seen in tests/test_relay_cluster.py under load). A fake KV stands in for the
server: what is tested is the relay's own rule, not nats.

The relay imports nothing of the core (docs/RELAY.md, "Layers"): what it tells the others of its
own clone comes from the facts core/relayhost.py hands it, asked each time."""

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

from helpers import git
from test_relay_retention import VM, make_clone

from git_korus_mail.core import keys, relayhost
from git_korus_mail.relay import local
from git_korus_mail.relay.link import Relay


class KV:
    """The bucket: `entries` readable, `failing` time out, `deleted` are delete markers (a
    `remote remove`), `behind` answer "not found" as a replica that has not got them yet does."""

    def __init__(self, entries, failing=(), deleted=(), behind=()):
        self.entries, self.failing = dict(entries), set(failing)
        self.deleted, self.behind = set(deleted), set(behind)

    async def put(self, key, value):
        self.entries[key] = value

    async def get(self, key):
        from nats.js.errors import KeyNotFoundError
        if key in self.failing:
            raise asyncio.TimeoutError
        if key in self.deleted:
            raise KeyNotFoundError(SimpleNamespace(key=key), "DEL")   # as nats-py's get says a marker
        if key in self.behind:
            raise KeyNotFoundError()
        return SimpleNamespace(value=self.entries[key])


class JS:
    """The bucket's stream, as the relay lists its keys (relay/server.clone_keys): every subject,
    a delete marker's too."""

    def __init__(self, kv, listed=True):
        self.kv, self.listed = kv, listed

    async def stream_info(self, name, subjects_filter=None):
        if not self.listed:
            return SimpleNamespace(state=SimpleNamespace(subjects=None))  # not even our own entry
        keys = set(self.kv.entries) | self.kv.deleted | self.kv.behind
        prefix = subjects_filter[:-len("clone.>")]
        subjects = {prefix + k: 1 for k in keys if k.startswith("clone.")}
        return SimpleNamespace(state=SimpleNamespace(subjects=subjects or None))


def relay_with(common, kv, listed=True):
    conf = local.load_config(common)
    kv.entries.setdefault(f"label.{conf['label']}", conf["clone"].encode())   # its own claim, made at `remote add`
    relay = Relay(common, conf, relayhost.facts(common))
    relay.kv, relay.js = kv, JS(kv, listed)
    relay.sub = None  # the lag is read from it: a failure there is only a report
    return relay


def test_an_entry_the_server_cannot_give_now_keeps_what_was_known(tmp_path):
    _repo, common = make_clone(tmp_path)
    before = local.load_peers(common)[VM]
    kv = KV({f"clone.{VM}": b"{}", "clone.cccccccccccc": b'{"label": "desk", "worktrees": []}',
             "label.desk": b"cccccccccccc"}, failing={f"clone.{VM}"})
    asyncio.run(relay_with(common, kv).publish_directory())
    peers = local.load_peers(common)
    assert peers[VM] == before                      # the vm stays resolvable
    assert peers["cccccccccccc"]["label"] == "desk"  # what the server gave is taken


def test_a_clone_gone_from_the_directory_goes_and_no_keys_changes_nothing(tmp_path):
    _repo, common = make_clone(tmp_path)
    asyncio.run(relay_with(common, KV({}), listed=False).publish_directory())
    assert VM in local.load_peers(common)           # no keys at all: nothing to trust over what is known
    asyncio.run(relay_with(common, KV({"clone.cccccccccccc": b'{"label": "desk"}', "label.desk": b"cccccccccccc"})).publish_directory())
    peers = local.load_peers(common)
    assert VM not in peers and peers["cccccccccccc"]["label"] == "desk"  # a clone that left does go


def test_the_core_hands_the_relay_the_clones_worktrees_and_retention_asked_each_time(tmp_path):
    repo, common = make_clone(tmp_path)
    facts = relayhost.facts(common)
    assert facts.keep_days() == 30                              # the store's default
    git("config", "korus-mail.retention-days", "7", cwd=repo)
    assert facts.keep_days() == 7                               # read again, not kept from the first ask
    git("worktree", "add", "-q", str(tmp_path / "web"), cwd=repo)
    want = [{"name": name, "path": path, "key": keys.key_of_root(path).name}
            for name, path in (("repo", str(repo)), ("web", str(tmp_path / "web")))]
    assert sorted(facts.worktrees(), key=lambda w: w["path"]) == want
    assert facts.sessions() == []                               # no hook has named a session here
    kv = KV({})
    asyncio.run(relay_with(common, kv).publish_directory())
    mine = json.loads(kv.entries["clone.aaaaaaaaaaaa"])
    assert mine["label"] == "laptop" and sorted(mine["worktrees"], key=lambda w: w["path"]) == want
    assert mine["sessions"] == []


def test_a_deleted_entry_goes_and_one_a_replica_has_not_got_yet_stays(tmp_path):
    """The key list is the bucket stream's subjects, where a deleted entry's marker still is:
    reading it says "deleted" (it goes); a plain "not found" is a replica behind (it stays)."""
    _repo, common = make_clone(tmp_path)
    before = local.load_peers(common)[VM]
    kv = KV({"clone.cccccccccccc": b'{"label": "desk"}', "label.desk": b"cccccccccccc"}, behind={f"clone.{VM}"})
    asyncio.run(relay_with(common, kv).publish_directory())
    assert local.load_peers(common)[VM] == before
    kv = KV({"clone.cccccccccccc": b'{"label": "desk"}', "label.desk": b"cccccccccccc"}, deleted={f"clone.{VM}"})
    asyncio.run(relay_with(common, kv).publish_directory())
    assert VM not in local.load_peers(common)


def test_an_entry_that_claims_a_label_another_clone_holds_is_refused(tmp_path):
    """Any clone's user may put directory entries; only a label's own user could claim
    `label.<label>`. An entry under another id that says "vm" would send mail for vm to a subject
    the forger's consumer could filter on: it is refused and journaled once. An owner the server
    cannot give now: an entry known with that label stands, an unknown one waits."""
    _repo, common = make_clone(tmp_path)
    forged = b'{"label": "vm", "worktrees": [{"name": "web", "path": "/far/web", "key": "web-x"}]}'
    kv = KV({f"clone.{VM}": b'{"label": "vm", "worktrees": []}', "clone.dddddddddddd": forged,
             "label.vm": VM.encode()})
    relay = relay_with(common, kv)
    for _ in range(2):
        asyncio.run(relay.publish_directory())
    peers = local.load_peers(common)
    assert VM in peers and "dddddddddddd" not in peers
    journal = (Path(common) / "mail" / "journal.jsonl").read_text()
    assert journal.count("directory entry dddddddddddd claims label 'vm', which clone bbbbbbbbbbbb holds") == 1
    kv = KV({f"clone.{VM}": b'{"label": "vm", "worktrees": []}', "clone.cccccccccccc": b'{"label": "desk"}'},
            failing={"label.vm", "label.desk"})
    asyncio.run(relay_with(common, kv).publish_directory())
    peers = local.load_peers(common)
    assert VM in peers and "cccccccccccc" not in peers
