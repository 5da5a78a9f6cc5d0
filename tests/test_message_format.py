"""The message format's optional fields (docs/CONTRACT.md, "Message format"): files written by
hand here, outside the product, so the format is pinned by literal bytes, not by `build`."""

import pytest

from git_korus_mail.store import message

QID = "20261201T103000.123456Z-p4242-0123456789abcdef"
AID = "20261201T103100.000001Z-p4343-fedcba9876543210"

# A version-1 note as every earlier release wrote it: no optional field at all.
OLD_NOTE = (b'{"body": "hi", "expires_at": "2026-12-04T10:31:00Z", "from": {"branch": "main", '
            b'"path": "/r/main", "session": null}, "id": "' + AID.encode() + b'", "kind": "note", '
            b'"sent_at": "2026-12-01T10:31:00Z", "session": null, "to": {"key": "web-0123", "path": "/r/web"}, "v": 1}\n')


def with_fields(extra: str) -> bytes:
    return OLD_NOTE.replace(b'"v": 1}', b'"v": 1, ' + extra.encode() + b'}')


def test_old_mail_without_the_new_fields_stays_valid():
    msg = message.parse(OLD_NOTE, AID)
    assert msg["kind"] == "note" and "in_reply_to" not in msg and "status" not in msg
    assert message.wakes(msg) is True and message.thread_of(msg) == AID


def test_an_answer_with_every_field_parses():
    data = with_fields(f'"in_reply_to": "{QID}", "thread": "{QID}", "status": "done", "wake": true'
                       ).replace(b'"kind": "note"', b'"kind": "answer"')
    msg = message.parse(data, AID)
    assert (msg["in_reply_to"], msg["thread"], msg["status"], msg["wake"]) == (QID, QID, "done", True)
    assert message.thread_of(msg) == QID


@pytest.mark.parametrize("extra, kind, reason", [
    ('"in_reply_to": 5', "note", "bad in_reply_to"),
    ('"in_reply_to": "../../etc"', "reply", "bad in_reply_to"),
    ('"thread": ["x"]', "note", "bad thread"),
    ('"wake": "yes"', "note", "bad wake: not true or false"),
    ('"wake": 0', "note", "bad wake: not true or false"),
    ('"status": "done"', "note", "bad status: only an answer has one"),
    (f'"in_reply_to": "{QID}", "status": "maybe"', "answer", "bad status"),
    ('"status": "done"', "answer", "bad answer: in_reply_to and status are required"),
    (f'"in_reply_to": "{QID}"', "answer", "bad answer: in_reply_to and status are required"),
    ('"wake": false', "reply", "bad reply: in_reply_to is required"),
])
def test_a_present_field_of_the_wrong_shape_is_named(extra, kind, reason):
    data = with_fields(extra).replace(b'"kind": "note"', f'"kind": "{kind}"'.encode())
    with pytest.raises(message.Invalid) as err:
        message.parse(data, AID)
    assert str(err.value) == reason


def test_wake_false_is_honoured_except_for_a_question():
    assert message.wakes(message.parse(with_fields('"wake": false'), AID)) is False
    q = with_fields('"wake": false').replace(b'"kind": "note"', b'"kind": "question"')
    assert message.wakes(message.parse(q, AID)) is True


def test_build_writes_the_optional_fields_only_when_given():
    sender = {"path": "/r/main", "branch": "main", "session": None}
    note = message.build("hi", "/r/web", "web-0123", sender)
    assert not {"in_reply_to", "thread", "status", "wake"} & set(note)
    ans = message.build("yes", "/r/main", "main-1", sender, kind="answer", in_reply_to=QID, thread=QID,
                        status="answered")
    assert message.parse(message.encode(ans), ans["id"])["status"] == "answered"
