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


GOOD_ID = "20261202T034547.810085Z-p14739-e9800abbd7437ef0"


@pytest.mark.parametrize("bad", [
    GOOD_ID.replace("2026", "2\u0663\u0662\u0666", 1),  # Arabic-Indic digits: str.isdigit() alone says yes
    GOOD_ID.replace("1202", "12\u00b22", 1),  # a superscript two
    GOOD_ID.replace("-p14739-", "-p-", 1),  # no pid
    GOOD_ID.replace("-p14739-", "-p\uff11-", 1),  # a fullwidth one
    GOOD_ID[:-16] + "E9800ABBD7437EF0",  # upper-case hex is not what new_id writes
    GOOD_ID[:-16] + "e9800abbd7437ef ",
    GOOD_ID[:-16] + "e9800abbd7437efg",
    GOOD_ID[:-16] + "e980\u0660abbd7437ef0",
    GOOD_ID.replace(".810085Z", ".81008 Z", 1),
])
def test_an_id_takes_ascii_digits_and_lowercase_hex_only(bad):
    """valid_id checks each field with C string methods (issue 26: a drain checks every queued
    name); each must still refuse exactly what the character sets refused."""
    assert message.valid_id(GOOD_ID)
    assert message.valid_id(message.new_id())
    assert not message.valid_id(bad)
    with pytest.raises(ValueError):
        message.id_time(bad)


@pytest.mark.parametrize("bad", ["2026-12-02T03:45:47.\u0661Z", "2026-12-0\u00b2T03:45:47Z",
                                 "\u0662026-12-02T03:45:47.5Z", "2026-12-02T03:45:47.Z"])
def test_a_stamp_takes_ascii_digits_only(bad):
    from git_korus_mail.stamps import parse_stamp
    assert parse_stamp("2026-12-02T03:45:47.810085Z") > 0
    with pytest.raises(ValueError):
        parse_stamp(bad)
