"""Reads never create: reporting commands and an empty-box show leave another worktree's box
as they found it (no subdirectory appears). Each command runs as a real separate process."""

import json
import os
import re
from pathlib import Path

from helpers import hook, run_cli
from install_fixtures import box_dir, dead_pid, mkdir700

from git_korus_mail.store import claims


def dirs_under(path):
    """Every directory below `path`, relative, read here with os.walk (not by the product)."""
    out = set()
    for top, subdirs, _files in os.walk(path):
        for d in subdirs:
            out.add(os.path.relpath(os.path.join(top, d), path))
    return out


def test_status_list_doctor_create_no_directory_in_another_box(clone):
    run_cli("send", "--to", str(clone.web), "hello", cwd=clone.main, check=True)
    box = box_dir(clone, clone.web)
    msg_id = next((box / "inbox").glob("*.json")).stem
    # a consumer that died right after its claim: the reports break the claim and look at
    # the message's receipt, expiry and forwarding, none of which exists
    owner = claims.me("consume", "s-dead")
    owner["pid"] = dead_pid()
    mkdir700(box / "claiming")
    (box / "claiming" / f"{msg_id}.claim").write_text(json.dumps(owner))
    before = dirs_under(box)
    assert before == {"inbox", "claiming"}, before
    for cmd in (["status"], ["status", "--json"], ["list"], ["doctor"], ["inbox", "--all"], ["read", msg_id],
                ["read", msg_id[:20], "--json"]):
        run_cli(*cmd, cwd=clone.main)
        assert dirs_under(box) == before, (cmd, dirs_under(box) - before)
    assert (box / "inbox" / f"{msg_id}.json").exists()  # still queued for web


def test_a_show_with_an_empty_box_creates_nothing_in_another_box(clone):
    hook("SessionStart", clone.main, "s-api")
    other = box_dir(clone, clone.main)
    before = dirs_under(other)
    hook("SessionStart", clone.web, "s-web")
    hook("UserPromptSubmit", clone.web, "s-web", extra={"prompt": "hi"})
    hook("Stop", clone.web, "s-web")
    assert dirs_under(other) == before, dirs_under(other) - before


# Everything on disk goes through store/: outside it, no module opens a store directory,
# reads or writes one of its files, or knows a record's file name. The names are the
# store's own primitives (fsafe.Dir and its methods) and the file formats' suffixes.
STORE_ONLY = re.compile(r"fsafe|\bDir\b|\.(open_|ensure_)?sub\(|sub_existing|read_regular|read_json|create_exclusive"
                        r"|create_staged|write_replace|link_to\(|rename_to\(|unlink_quiet|\.dir\b|\.why\.json\b"
                        r"|\.claim\b|\.broken-")
# a regex substitution; a glob shown to a person; the store's one writer of new files, which
# install and the worktree token use for files outside the store; the event claim's functions
# (store/events.py), named `claim` like the `.claim` suffix they never touch
ALLOWED = re.compile(r"\bre\.sub\(|\*\.why\.json|^from git_korus_mail\.store\.fsafe import write_new\b"
                     r"|\b(events|drain_event)\.claim\(")


def test_nothing_outside_the_store_touches_its_files():
    pkg = Path(__file__).resolve().parent.parent / "git_korus_mail"
    found = []
    for path in sorted(pkg.rglob("*.py")):
        if (pkg / "store") in path.parents:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if STORE_ONLY.search(ALLOWED.sub("", line)):
                found.append(f"{path.relative_to(pkg)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_a_read_of_what_is_absent_says_so_and_creates_nothing(clone):
    """The store's hints name these None cases; each must read as "not there", never crash."""
    from git_korus_mail.store import markers
    from git_korus_mail.store.files import MailRoot
    from git_korus_mail.store.launch import NoLaunch
    run_cli("send", "--to", str(clone.web), "hello", cwd=clone.main, check=True)
    path = box_dir(clone, clone.web)
    box = MailRoot.open(str(clone.common_dir)).box(path.name)
    before = dirs_under(path)
    # a quarantine from a subdirectory that does not exist: the file went, nothing is made
    assert box.quarantine("x.json", "test", sub="expired") is None
    assert dirs_under(path) == before
    # a launch that never marked anything has no marker to read: FileNotFoundError, an OSError
    shown = markers.for_launch(box, "s-none", NoLaunch("test"))
    try:
        shown.read("0" * 10)
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("a marker read from no directory")


def test_a_box_finds_its_parts_methods_without_changing_its_class(clone, tmp_path):
    """Records', Moves' and Drops' methods are a Box's (found on first use, store/files.py): the box
    stays a Box, its own methods win over a part's of the same name, and a name no part has is
    an AttributeError, not a lookup that loads anything twice."""
    import subprocess
    import sys
    run_cli("send", "--to", "web", "--", "for the parts", cwd=clone.main, check=True)
    code = (
        "import sys\n"
        "from git_korus_mail.core import keys\n"
        "from git_korus_mail.store.files import Box, MailRoot\n"
        f"root = MailRoot.open({str(clone.mail_root.parent)!r})\n"
        f"box = root.box(keys.key_for({str(clone.web)!r}).name)\n"
        "assert 'git_korus_mail.store.moves' not in sys.modules\n"
        "ids, _odd = box.inbox_ids()\n"
        "assert len(ids) == 1 and box.receipt(ids[0]) is None\n"   # a Records method
        "assert type(box) is Box and 'git_korus_mail.store.moves' in sys.modules\n"
        "from git_korus_mail.store.moves import Moves\n"
        "assert box.repair.__func__ is Box.repair and Moves.repair is not Box.repair\n"
        "try:\n    box.no_such_method\nexcept AttributeError as exc:\n    print('refused', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refused 'Box' object has no attribute 'no_such_method'")
