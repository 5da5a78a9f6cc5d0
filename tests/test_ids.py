"""One id grammar (core/ids.py) for every command that takes an id: the full id, a unique
prefix, an end of 6+ characters, and the form the tool prints (`…970758d4`); an ambiguous
id lists its candidates, one line each, bounded."""

import json
import os

import pytest

from helpers import run_cli
from git_korus_mail.core import keys
from git_korus_mail.store import claims


def _send(clone, body="hello"):
    proc = run_cli("send", "--to", "../web", body, cwd=clone.main, check=True)
    return proc.stdout.split()[1]


def forms(mid):
    return {"full": mid, "prefix": mid[:30], "end": mid[-8:], "printed": "…" + mid[-8:], "ascii": "..." + mid[-8:]}


FORMS = ("full", "prefix", "end", "printed", "ascii")


@pytest.mark.parametrize("form", FORMS)
def test_read_takes_every_form(clone, form):
    mid = _send(clone)
    proc = run_cli("read", forms(mid)[form], cwd=clone.web)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"message  {mid}  in this worktree's box")


@pytest.mark.parametrize("form", ("printed", "end", "prefix"))
def test_cancel_takes_every_form(clone, form):
    mid = _send(clone)
    proc = run_cli("cancel", forms(mid)[form], cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"cancelled {mid} to ")


@pytest.mark.parametrize("form", ("printed", "end", "prefix"))
def test_reply_takes_every_form(clone, form):
    mid = _send(clone)
    proc = run_cli("reply", forms(mid)[form], "thanks", cwd=clone.web)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("replied ") and proc.stdout.rstrip().endswith(f"\n  in reply to {mid}")


@pytest.mark.parametrize("form", ("printed", "end", "prefix"))
def test_release_takes_every_form(clone, form):
    mid = _send(clone)
    claiming = clone.mail_root / "box" / keys.key_for(str(clone.web)).name / "claiming"
    claiming.mkdir(mode=0o700, exist_ok=True)
    owner = dict(claims.me("consume", "s-elsewhere"), host="build-box-7", pid=4242)
    (claiming / f"{mid}.claim").write_text(json.dumps(owner))
    os.chmod(claiming / f"{mid}.claim", 0o600)
    proc = run_cli("release", forms(mid)[form], cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"released the claim on {mid}")


def test_an_ambiguous_id_lists_its_candidates_one_a_line_for_every_command(clone):
    mids = [_send(clone, f"m{i}") for i in range(3)]
    common = os.path.commonprefix(mids)
    assert len(common) >= 8  # sent within one run: their ids share the date at least
    for cmd, cwd in (("read", clone.web), ("cancel", clone.main), ("reply", clone.web)):
        proc = run_cli(cmd, common[:8], *(["x"] if cmd == "reply" else []), cwd=cwd)
        assert proc.returncode == 1, (cmd, proc.stderr)
        lines = proc.stderr.splitlines()
        assert lines[0] == (f"git korus-mail: {common[:8]} is ambiguous: it names 3 message ids; "
                            f"give more of it. The candidates are:"), (cmd, lines)
        assert sorted(line.strip() for line in lines[1:]) == sorted(mids), (cmd, lines)


def test_an_end_too_short_or_no_id_is_one_clear_line(clone):
    mid = _send(clone)
    short = run_cli("read", "…" + mid[-4:], cwd=clone.web)
    assert short.returncode == 1 and short.stderr.count("\n") == 1 and "6 or more characters" in short.stderr
    junk = run_cli("cancel", "zz-top", cwd=clone.main)
    assert junk.returncode == 1 and "not a message id" in junk.stderr
