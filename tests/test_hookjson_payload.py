"""Every client's payload is refused alike (clients/hookjson.read_fields): the same inputs, the
same one-line reasons, each as the client's own BadPayload. Claude Code's protocol had a copy of
these checks until it called the shared one."""

import pytest

from git_korus_mail.clients.claude import protocol as claude
from git_korus_mail.clients.codex import protocol as codex
from git_korus_mail.clients.gemini import protocol as gemini

CLIENTS = (claude, codex, gemini)
BAD = [
    (b"not json", "stdin is not JSON"),
    (b"[1, 2]", "stdin is not a JSON object"),
    (b'{"session_id": "s", "cwd": "/w"}', "no hook_event_name"),
    (b'{"hook_event_name": "Stop", "cwd": "/w"}', "no session_id"),
    (b'{"hook_event_name": "Stop", "session_id": "s", "cwd": ""}', "no cwd"),
    (b'{"hook_event_name": "Stop", "session_id": "s", "cwd": "/w\\u0000x"}', "cwd contains a NUL character"),
]


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.NAME)
@pytest.mark.parametrize("data, reason", BAD)
def test_a_bad_payload_gets_the_same_reason_from_every_client(client, data, reason):
    with pytest.raises(client.BadPayload) as caught:
        client.read_payload(data)
    assert str(caught.value) == reason


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.NAME)
def test_an_overlong_cwd_is_refused_with_its_length(client):
    cwd = "/" + "d" * client.MAX_CWD
    with pytest.raises(client.BadPayload) as caught:
        client.read_payload(('{"hook_event_name": "Stop", "session_id": "s", "cwd": "%s"}' % cwd).encode())
    assert str(caught.value) == f"cwd is {len(cwd)} characters long, over {client.MAX_CWD}"


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.NAME)
def test_a_good_payload_is_read(client):
    p = client.read_payload(b'{"hook_event_name": "Stop", "session_id": "s", "cwd": "/w", "extra": 1}')
    assert (p.event, p.session, p.cwd, p.raw["extra"]) == ("Stop", "s", "/w", 1)
