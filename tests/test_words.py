"""Issue 25, "Words": one vocabulary ("shown" is displayed to a model, "consumed" is settled
for good; never "seen" for either), states in one case (lowercase) in every command, one time
format for a person (`2026-12-01 10:44:24Z`; --json keeps the stored stamps), and one wording
of retention."""

import re

from helpers import hook, run_cli
from install_fixtures import install

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")          # a stored stamp: --json only
PERSON = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ")  # the one a person reads
RETENTION = "consumed, expired and cancelled mail is kept 30 days, then pruned"
STATES = ("queued", "shown", "consumed", "expired", "cancelled", "dropped", "quarantined")


def _world(clone):
    install(clone.main)
    hook("SessionStart", clone.web, "s-words")
    first = run_cli("send", "--no-wake", "--to", str(clone.web), "--", "one", cwd=clone.main, check=True)
    hook("UserPromptSubmit", clone.web, "s-words")  # shown
    hook("Stop", clone.web, "s-words")  # consumed
    second = run_cli("send", "--no-wake", "--to", str(clone.web), "--", "two", cwd=clone.main, check=True)
    return first.stdout.split()[1], second.stdout.split()[1], first.stdout + second.stdout


def test_states_are_lowercase_and_counts_say_consumed_not_seen(clone):
    _first, second, _ = _world(clone)
    inbox = run_cli("inbox", "--all", cwd=clone.web, check=True).stdout
    assert f"{second}  queued  note" in inbox, inbox
    for state in STATES:
        assert state.upper() not in inbox, inbox
    listing = run_cli("list", cwd=clone.main, check=True).stdout
    assert "queued 1  claimed 0  consumed 1  expired 0" in listing, listing
    status = run_cli("status", cwd=clone.web, check=True).stdout
    assert "queued 1 · claimed 0 · consumed 1 · expired 0 · cancelled 0" in status, status
    for text in (listing, status):
        assert not re.search(r"\bseen\b", text), text
    hook("UserPromptSubmit", clone.web, "s-words")  # the second is shown, then cancelled
    cancel = run_cli("cancel", second, cwd=clone.main, check=True).stdout
    assert "a model was shown it already (to session s-words at " in cancel and "seen" not in cancel, cancel


def test_one_time_format_for_a_person(clone):
    _, _, sent = _world(clone)
    outs = {"send": sent}
    for args, cwd in ((("who",), clone.main), (("list",), clone.main), (("status",), clone.main),
                      (("inbox", "--all"), clone.web), (("doctor",), clone.main)):
        outs[args[0]] = run_cli(*args, cwd=cwd).stdout
    for name, text in outs.items():
        assert not ISO.search(text), (name, text)
        assert PERSON.search(text), (name, text)
    assert ISO.search(run_cli("who", "--json", cwd=clone.main, check=True).stdout)  # --json keeps the stamps


def test_one_wording_of_retention(clone):
    install(clone.main)
    status = " ".join(run_cli("status", cwd=clone.main, check=True).stdout.split())
    doctor = " ".join(run_cli("doctor", cwd=clone.main, check=True).stdout.split())
    assert RETENTION in status and RETENTION in doctor, (status, doctor)
    assert "pruned after" not in status


def test_purge_counts_say_consumed(clone):
    _world(clone)
    out = run_cli("uninstall", "--purge", "--yes", cwd=clone.main, check=True).stdout
    assert "\n  holds 2 boxes, 1 queued, 1 consumed, 0 expired" in out and "seen" not in out, out

