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

import pytest

from helpers import git
from test_relay_retention import VM, make_clone

from git_korus_mail.core import keys, relayhost
from git_korus_mail.relay import local, server
from git_korus_mail.relay.link import Relay


class KV:
    """The bucket: `entries` readable, `failing` time out, `deleted` are delete markers (a
    `remote remove`), `behind` answer "not found" as a replica that has not got them yet does."""

    def __init__(self, entries, failing=(), deleted=(), behind=(), refused=(), stalled=()):
        self.entries, self.failing = dict(entries), set(failing)
        self.deleted, self.behind = set(deleted), set(behind)
        # puts the permissions refuse (no answer; the server's error, as nats-py's callback
        # hands it to relay/server.connect), and puts that time out (a leader election)
        self.refused, self.stalled, self.puts = set(refused), set(stalled), []

    async def put(self, key, value):
        self.puts.append(key)
        if key in self.refused:
            server.REFUSED.append(f'publish to "$KV.korus-0123456789abcdef.{key}"')
            raise asyncio.TimeoutError
        if key in self.stalled:
            raise asyncio.TimeoutError
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
    """The bucket's stream, as the relay lists its keys (relay/server.directory_keys): every subject,
    a delete marker's too."""

    def __init__(self, kv, listed=True):
        self.kv, self.listed = kv, listed

    async def stream_info(self, name, subjects_filter=None):
        if not self.listed:
            return SimpleNamespace(state=SimpleNamespace(subjects=None))  # not even our own entry
        keys = set(self.kv.entries) | self.kv.deleted | self.kv.behind
        head = subjects_filter[:-1]            # `$KV.<bucket>.dir.` or `$KV.<bucket>.clone.`
        prefix = head[:head.rindex(".", 0, -1) + 1]
        subjects = {prefix + k: 1 for k in keys if (prefix + k).startswith(head)}
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
    mine = json.loads(kv.entries["dir.laptop"])
    assert mine["label"] == "laptop" and sorted(mine["worktrees"], key=lambda w: w["path"]) == want
    assert mine["sessions"] == [] and mine["clone"] == "aaaaaaaaaaaa"


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


def test_the_entry_is_keyed_by_the_label_and_the_older_key_kept_until_refused(tmp_path):
    """The entry goes under `dir.<label>`, the key only this clone's user may write (README,
    "Several machines"); while the server allows it, the older `clone.<id>` too, for relays not
    yet moved, which read only that. Once the server refuses it, it is never tried again."""
    _repo, common = make_clone(tmp_path)
    kv = KV({})
    relay = relay_with(common, kv)
    asyncio.run(relay.publish_directory())
    assert kv.puts == ["dir.laptop", "clone.aaaaaaaaaaaa"]
    assert json.loads(kv.entries["clone.aaaaaaaaaaaa"]) == json.loads(kv.entries["dir.laptop"])
    kv = KV({}, stalled={"clone.aaaaaaaaaaaa"})   # a timeout, no refusal: tried again next round
    relay = relay_with(common, kv)
    for _ in range(2):
        asyncio.run(relay.publish_directory())
    assert kv.puts == ["dir.laptop", "clone.aaaaaaaaaaaa"] * 2
    kv = KV({}, refused={"clone.aaaaaaaaaaaa"})
    relay = relay_with(common, kv)
    for _ in range(3):
        asyncio.run(relay.publish_directory())
    assert kv.puts == ["dir.laptop", "clone.aaaaaaaaaaaa", "dir.laptop", "dir.laptop"]
    assert "clone.aaaaaaaaaaaa" not in kv.entries


def test_a_clone_with_a_label_keyed_entry_is_read_from_it_alone(tmp_path):
    """`dir.vm` names its clone inside, and its label is its key. What stands under the vm's
    older key (any clone's user could put it, or it is frozen from before the move) changes
    nothing; an older entry of a clone not yet moved is still read (the migration)."""
    _repo, common = make_clone(tmp_path)
    rewritten = b'{"label": "vm", "worktrees": [{"name": "web", "path": "/spy/web", "key": "web-x"}]}'
    kv = KV({"dir.vm": json.dumps({"label": "vm", "clone": VM, "worktrees": [
                 {"name": "web", "path": "/far/web", "key": "web-0123456789abcdef01234567"}]}).encode(),
             f"clone.{VM}": rewritten, "label.vm": VM.encode(),
             "clone.cccccccccccc": b'{"label": "desk", "worktrees": []}', "label.desk": b"cccccccccccc"})
    asyncio.run(relay_with(common, kv).publish_directory())
    peers = local.load_peers(common)
    assert [w["path"] for w in peers[VM]["worktrees"]] == ["/far/web"]     # never /spy/web
    assert peers[VM]["label"] == "vm" and peers["cccccccccccc"]["label"] == "desk"
    assert sorted(peers) == ["aaaaaaaaaaaa", VM, "cccccccccccc"]


def test_a_label_keyed_entry_must_name_the_clone_its_label_claim_names(tmp_path):
    """`dir.desk` is desk's own user's to write, but the clone it names must be the one
    `label.desk` names: an entry that names the vm's id (to take the vm's place in `who`, or its
    mail's subject) is refused and journaled once; the vm's own entry stands. An entry that
    cannot be read now keeps the clone known with that label."""
    _repo, common = make_clone(tmp_path)
    kv = KV({"dir.vm": json.dumps({"clone": VM, "worktrees": []}).encode(), "label.vm": VM.encode(),
             "dir.desk": json.dumps({"clone": VM, "label": "vm", "worktrees": []}).encode(),
             "label.desk": b"cccccccccccc"})
    relay = relay_with(common, kv)
    for _ in range(2):
        asyncio.run(relay.publish_directory())
    peers = local.load_peers(common)
    assert peers[VM]["label"] == "vm" and "cccccccccccc" not in peers
    journal = (Path(common) / "mail" / "journal.jsonl").read_text()
    assert journal.count(f"directory entry {VM} claims label 'desk', which clone cccccccccccc holds") == 1, journal
    kv = KV({"dir.vm": b"{}", "dir.aaa": b"{}", "label.vm": VM.encode()}, failing={"dir.vm"})
    asyncio.run(relay_with(common, kv).publish_directory())
    assert local.load_peers(common)[VM] == peers[VM]
    assert sorted(local.load_peers(common)) == ["aaaaaaaaaaaa", VM]


def test_a_label_that_claims_another_clones_id_does_not_take_its_place(tmp_path):
    """A label's user may write both `label.desk` and `dir.desk`, so it can make both name the
    vm's id. Two entries then name one clone: the label this relay knew it by wins (the vm stays
    the vm, `vm:web` still resolves), and the other is journaled once. With neither label known
    for that id, neither is taken (a send to either is refused rather than misrouted)."""
    _repo, common = make_clone(tmp_path)
    vm = json.dumps({"clone": VM, "worktrees": [{"name": "web", "path": "/far/web", "key": "web-1"}]}).encode()
    usurper = json.dumps({"clone": VM, "worktrees": [{"name": "web", "path": "/spy/web", "key": "web-2"}]}).encode()
    kv = KV({"dir.vm": vm, "label.vm": VM.encode(), "dir.desk": usurper, "label.desk": VM.encode()})
    relay = relay_with(common, kv)
    for _ in range(2):
        asyncio.run(relay.publish_directory())
    peers = local.load_peers(common)
    assert peers[VM]["label"] == "vm" and peers[VM]["worktrees"][0]["path"] == "/far/web", peers
    journal = (Path(common) / "mail" / "journal.jsonl").read_text()
    assert journal.count(f"directory entries of 'desk' and 'vm' both name clone {VM}: kept 'vm'") == 1, journal
    local.save_peers(common, {})   # a relay that never knew the vm
    asyncio.run(relay_with(common, kv).publish_directory())
    assert VM not in local.load_peers(common)
    journal = (Path(common) / "mail" / "journal.jsonl").read_text()
    assert f"both name clone {VM}: neither taken" in journal, journal


def test_a_server_that_refuses_the_label_keyed_entry_still_carries_the_clone_under_the_older_key(tmp_path):
    """The relay moved before the team's config allows `dir.<label>`: its entry goes under the
    older key every round (which every relay still reads for a clone with no `dir.` entry, so
    this clone stays in the others' directories), and the journal says, once, what to allow."""
    _repo, common = make_clone(tmp_path)
    kv = KV({}, refused={"dir.laptop"})
    relay = relay_with(common, kv)
    for _ in range(2):
        asyncio.run(relay.publish_directory())
    assert kv.puts == ["dir.laptop", "clone.aaaaaaaaaaaa"] * 2
    assert json.loads(kv.entries["clone.aaaaaaaaaaaa"])["label"] == "laptop"
    assert "aaaaaaaaaaaa" in local.load_peers(common)
    journal = (Path(common) / "mail" / "journal.jsonl").read_text()
    assert journal.count("this clone's entry went under its older key; allow $KV.*.dir.laptop") == 1, journal
    # a put that only timed out (a leader election) is no refusal: the round fails, as any
    # other server error, and nothing is said of permissions
    kv = KV({}, stalled={"dir.laptop"})
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(relay_with(common, kv).publish_directory())
    assert kv.puts == ["dir.laptop"]
