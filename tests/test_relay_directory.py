"""The relay's copy of the namespace's directory (relay/peers.json), from which a send resolves
`<label>:<worktree>` offline (docs/RELAY.md): a server that cannot give an entry now (a leader
election, a timeout) must never make a known clone unknown, or sends to it are refused for a
server's hiccup (seen in tests/test_relay_cluster.py under load). A fake KV stands in for the
server: what is tested is the relay's own rule, not nats.

The relay imports nothing of the core (docs/RELAY.md, "Layers"): what it tells the others of its
own clone comes from the facts core/relayhost.py hands it, asked each time."""

import asyncio
import json
from types import SimpleNamespace

from helpers import git
from test_relay_retention import VM, make_clone

from git_korus_mail.core import keys, relayhost
from git_korus_mail.relay import local
from git_korus_mail.relay.link import Relay


class KV:
    def __init__(self, entries, failing=(), no_keys=False):
        self.entries, self.failing, self.no_keys = dict(entries), set(failing), no_keys

    async def put(self, key, value):
        self.entries[key] = value

    async def keys(self):
        if self.no_keys:
            from nats.js.errors import NoKeysError
            raise NoKeysError
        return list(self.entries)

    async def get(self, key):
        if key in self.failing:
            raise asyncio.TimeoutError
        return SimpleNamespace(value=self.entries[key])


def relay_with(common, kv):
    relay = Relay(common, local.load_config(common), relayhost.facts(common))
    relay.kv = kv
    relay.sub = None  # the lag is read from it: a failure there is only a report
    return relay


def test_an_entry_the_server_cannot_give_now_keeps_what_was_known(tmp_path):
    _repo, common = make_clone(tmp_path)
    before = local.load_peers(common)[VM]
    kv = KV({f"clone.{VM}": b"{}", "clone.cccccccccccc": b'{"label": "desk", "worktrees": []}'},
            failing={f"clone.{VM}"})
    asyncio.run(relay_with(common, kv).publish_directory())
    peers = local.load_peers(common)
    assert peers[VM] == before                      # the vm stays resolvable
    assert peers["cccccccccccc"]["label"] == "desk"  # what the server gave is taken


def test_a_clone_gone_from_the_directory_goes_and_no_keys_changes_nothing(tmp_path):
    _repo, common = make_clone(tmp_path)
    asyncio.run(relay_with(common, KV({}, no_keys=True)).publish_directory())
    assert VM in local.load_peers(common)           # no keys at all: nothing to trust over what is known
    asyncio.run(relay_with(common, KV({"clone.cccccccccccc": b'{"label": "desk"}'})).publish_directory())
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
