"""Issue 25, "Notices": an expiry notice, and the withdrawal (cancel) of mail a model was
already shown, are told at the recipient's NEXT EVENT OF ANY KIND (a prompt, a tool call), not
only at its next SessionStart; each once (core/notices.py)."""

import json
import os

import pytest

from helpers import context_of, hook, run_cli
from install_fixtures import box_dir
from git_korus_mail.stamps import utc_stamp

import invariants

S = "sess-notices-1"


def _send(clone, body, *extra):
    proc = run_cli("send", "--no-wake", *extra, "--to", str(clone.web), "--", body, cwd=clone.main, check=True)
    return proc.stdout.split()[1]


def _make_expired(clone, msg_id):
    """The message's expires_at in the past, rewritten atomically as a sender writes."""
    p = os.path.join(box_dir(clone, clone.web), "inbox", msg_id + ".json")
    with open(p, "rb") as f:
        msg = json.loads(f.read())
    msg["expires_at"] = utc_stamp(1_000_000_000.0)
    tmp = p + ".rewrite"
    with open(tmp, "w") as f:
        f.write(json.dumps(msg, sort_keys=True) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, p)


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PostToolUse"])
def test_expiry_is_told_at_the_next_event_of_any_kind(clone, event):
    hook("SessionStart", clone.web, S)  # the session runs; its start is over
    msg_id = _send(clone, "too late", "--ttl", "1")
    _make_expired(clone, msg_id)
    answer, _ = hook(event, clone.web, S)
    text = context_of(answer) or ""
    assert "expired unread" in text and msg_id in text, text
    again, _ = hook(event, clone.web, S)
    assert msg_id not in (context_of(again) or "")  # told once
    invariants.check(clone.mail_root)


def test_a_withdrawn_message_the_model_was_shown_is_told_at_its_next_tool_call(clone):
    hook("SessionStart", clone.web, S)
    msg_id = _send(clone, "please delete the staging table")
    shown, _ = hook("UserPromptSubmit", clone.web, S)
    assert msg_id in context_of(shown)
    run_cli("cancel", msg_id, cwd=clone.main, check=True)
    answer, _ = hook("PostToolUse", clone.web, S)
    text = " ".join((context_of(answer) or "").split())
    assert (f"korus-mail: message {msg_id} from {clone.main}, shown to you earlier, was withdrawn by its "
            f"sender (cancelled): do not act on it") in text, text
    again, _ = hook("PostToolUse", clone.web, S)
    assert msg_id not in (context_of(again) or "")  # told once
    hook("Stop", clone.web, S)
    invariants.check(clone.mail_root)


def test_a_withdrawn_message_nobody_was_shown_is_told_to_nobody(clone):
    hook("SessionStart", clone.web, S)
    msg_id = _send(clone, "never mind")
    run_cli("cancel", msg_id, cwd=clone.main, check=True)
    answer, _ = hook("PostToolUse", clone.web, S)
    assert msg_id not in (context_of(answer) or "")


def test_a_withdrawal_after_the_last_tool_call_is_told_at_the_next_prompt(clone):
    """The cancel lands after the run's last tool call: its Stop cannot tell the model (a Stop
    puts nothing before it), so the next prompt does."""
    hook("SessionStart", clone.web, S)
    msg_id = _send(clone, "please delete the staging table")
    hook("UserPromptSubmit", clone.web, S)  # shown
    run_cli("cancel", msg_id, cwd=clone.main, check=True)
    hook("Stop", clone.web, S)
    answer, _ = hook("UserPromptSubmit", clone.web, S)
    text = " ".join((context_of(answer) or "").split())
    assert f"korus-mail: message {msg_id} from {clone.main}, shown to you earlier, was withdrawn" in text, text
    hook("Stop", clone.web, S)
    again, _ = hook("UserPromptSubmit", clone.web, S)
    assert msg_id not in (context_of(again) or "")  # told once
    invariants.check(clone.mail_root)
