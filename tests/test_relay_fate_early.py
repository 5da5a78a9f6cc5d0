"""A fate, or an answer, that comes back for mail still in the sender's outbox (docs/RELAY.md,
"Fates back"). The relay was killed after the server stored the message but before it wrote
its record; the receiver consumed that copy and sent its fate before the sender's next relay
published the entry again. CI met it in tests/test_relay_faults.py's outage, where the
fate was dropped and `status` never said consumed. Here the order is made, not hoped for: the
outbox entry is real (`send`, with the relay's lock held by the test so no relay takes it) and
the fate is handed to the relay's own taking of it. No server is needed."""

import invariants
from helpers import run_cli
from test_relay_retention import VM, make_clone

from git_korus_mail.relay import local, returns

CONSUMED = {"state": "consumed", "session": "s-vm", "at": "2026-12-02T10:01:30.000000Z"}


def queued(repo):
    return run_cli("send", "--to", "vm:web", "--ttl=60", "--", "across", cwd=repo, check=True).stdout.split()[1]


def fate_env(msg_id, label="vm", clone=VM):
    return {"v": 1, "type": "fate", "id": msg_id, "from_clone": clone, "from_label": label, "fate": CONSUMED}


def test_a_fate_for_mail_still_in_the_outbox_is_recorded_and_the_entry_leaves(tmp_path):
    repo, common = make_clone(tmp_path)
    msg_id = queued(repo)
    env = local.read_entry(common, local.OUTBOX, msg_id)
    assert returns.take_fate(common, fate_env(msg_id)) is True
    assert local.outbox_ids(common) == []
    rec = local.read_entry(common, local.SENT, msg_id)
    published_at = rec.pop("published_at")
    assert isinstance(published_at, float)
    # the record as the ack writes it, from the outbox entry; no sequence: the ack never came
    assert rec == {"id": msg_id, "to_clone": VM, "to_label": "vm", "box": "web-0123456789abcdef01234567",
                   "path": "/far/web", "expires_at": env["msg"]["expires_at"], "seq": None, "duplicate": False,
                   "fate": CONSUMED}
    assert local.remote_fate(common, msg_id)["state"] == "consumed"
    status = run_cli("status", cwd=repo, check=True).stdout
    assert "consumed" in status and "s-vm" in status, status
    invariants.check(str(repo / ".git" / "mail"))


def test_a_fate_from_another_clone_leaves_the_outbox_as_it_was(tmp_path):
    repo, common = make_clone(tmp_path)
    msg_id = queued(repo)
    before = local.read_entry(common, local.OUTBOX, msg_id)
    for label, clone in (("evil", VM), ("vm", "cccccccccccc"), ("evil", "cccccccccccc")):
        assert returns.take_fate(common, fate_env(msg_id, label, clone)) is True
        assert local.outbox_ids(common) == [msg_id]
        assert local.read_entry(common, local.OUTBOX, msg_id) == before
        assert local.read_entry(common, local.SENT, msg_id) is None
        assert local.remote_fate(common, msg_id)["state"] == "outbox"


def test_the_acks_record_written_first_keeps_its_sequence(tmp_path):
    """The ack and the fate race in one relay: whichever writes the record first wins it."""
    repo, common = make_clone(tmp_path)
    msg_id = queued(repo)
    env = local.read_entry(common, local.OUTBOX, msg_id)
    assert local.mark(common, local.SENT, msg_id, local.sent_entry(env, seq=7, duplicate=False))
    assert returns.take_fate(common, fate_env(msg_id)) is True
    rec = local.read_entry(common, local.SENT, msg_id)
    assert rec["seq"] == 7 and rec["fate"] == CONSUMED


def test_an_answer_to_a_question_still_in_the_outbox_is_noted(tmp_path):
    repo, common = make_clone(tmp_path)
    qid = queued(repo)
    answer = {"id": "20261202T100131.000000Z-p9-00000000000000cc", "in_reply_to": qid, "status": "answered",
              "sent_at": "2026-12-02T10:01:31.000000Z", "from": {"path": "vm:/far/web", "session": "s-vm"}}
    returns.note_answer(common, answer, {"from_label": "vm", "from_clone": VM})
    assert local.outbox_ids(common) == []
    assert local.read_entry(common, local.SENT, qid)["answer"] == {
        "status": "answered", "at": "2026-12-02T10:01:31.000000Z", "by": "vm:/far/web", "session": "s-vm",
        "answer_id": "20261202T100131.000000Z-p9-00000000000000cc"}
