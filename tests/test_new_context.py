"""A new context under the same launch (issue 21 item 5): a compaction or a clear drops what
the model was shown, so mail shown but not consumed is shown again, and only what the new
context was shown is consumed (docs/HOOKS.md, "A new context under the same launch")."""

import json

import invariants
from helpers import context_of, hook, launch_dir, run_cli
from git_korus_mail.core import keys


def box_dir(clone, path):
    return clone.mail_root / "box" / keys.key_for(str(path)).name


def send(clone, body, to="../web"):
    return run_cli("send", "--to", to, body, cwd=clone.main, check=True).stdout.split()[1]


def names(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_compaction_shows_again_what_the_lost_context_held(clone):
    mid = send(clone, "before-compaction")
    assert "| before-compaction" in context_of(hook("SessionStart", clone.web, "s1")[0])
    hook("UserPromptSubmit", clone.web, "s1")  # the session works: a compaction comes mid-turn
    answer, _ = hook("SessionStart", clone.web, "s1", extra={"source": "compact"})
    ctx = context_of(answer)
    # before the fix: "no new mail ... (1 already shown to this session)", and nothing shown
    assert "| before-compaction" in ctx, ctx
    assert "already shown" not in ctx
    presence = json.loads((box_dir(clone, clone.web) / "sessions" / "s1.json").read_text())
    assert presence["state"] == "working"  # a compaction mid-turn is not the turn's end
    hook("Stop", clone.web, "s1")
    b = box_dir(clone, clone.web)
    assert names(b / "seen") == [mid + ".json"]
    receipt = json.loads((b / "receipts" / (mid + ".json")).read_text())
    assert receipt["observed"]["event"] == "SessionStart"  # consumed on the new context's showing
    invariants.check(clone.mail_root)


def test_mail_not_shown_again_after_compaction_is_not_consumed(clone, monkeypatch):
    """A compaction whose show cannot put the mail back (delivery off) leaves it queued: the
    display before the compaction proves nothing any more."""
    mid = send(clone, "held")
    hook("SessionStart", clone.web, "s1")
    hook("UserPromptSubmit", clone.web, "s1")
    run_cli("off", cwd=clone.main, check=True)
    hook("SessionStart", clone.web, "s1", extra={"source": "compact"})
    run_cli("on", cwd=clone.main, check=True)
    hook("Stop", clone.web, "s1")
    b = box_dir(clone, clone.web)
    assert names(b / "inbox") == [mid + ".json"] and names(b / "seen") == []
    assert names(b / "shown" / launch_dir("s1")) == [".launch"]
    assert "| held" in context_of(hook("UserPromptSubmit", clone.web, "s1")[0])
    invariants.check(clone.mail_root)


def test_clear_shows_the_mail_to_the_new_session_and_it_consumes_it(clone):
    mid = send(clone, "before-clear")
    assert "| before-clear" in context_of(hook("SessionStart", clone.web, "s1")[0])
    # /clear: SessionEnd (reason clear) of the old id, then SessionStart (clear) under a new one
    hook("SessionEnd", clone.web, "s1", extra={"reason": "clear"})
    answer, _ = hook("SessionStart", clone.web, "s2", extra={"source": "clear"})
    assert "| before-clear" in context_of(answer)
    hook("UserPromptSubmit", clone.web, "s2")
    hook("Stop", clone.web, "s2")
    b = box_dir(clone, clone.web)
    assert names(b / "seen") == [mid + ".json"]
    assert json.loads((b / "receipts" / (mid + ".json")).read_text())["session"] == "s2"
    invariants.check(clone.mail_root)


def test_resume_of_the_same_launch_is_not_a_new_context(clone):
    """Only the sources that drop the context re-show: a plain second SessionStart (resume)
    of the same launch keeps its markers (nothing is shown twice)."""
    send(clone, "once")
    hook("SessionStart", clone.web, "s1")
    answer, _ = hook("SessionStart", clone.web, "s1", extra={"source": "resume"})
    assert "| once" not in context_of(answer) and "1 already shown" in context_of(answer)
