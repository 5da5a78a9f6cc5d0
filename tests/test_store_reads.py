"""Reads never create: reporting commands and an empty-box show leave another worktree's box
as they found it (no subdirectory appears). Each command runs as a real separate process."""

import json
import os
import re
from pathlib import Path

from helpers import hook, run_cli
from install_fixtures import box_dir, dead_pid, mkdir700

from git_korus_mail.store import claims, records


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
                     r"|\b(events|drain_event)\.claim\("
                     r"|\$KV\.\*\.dir\.")  # a NATS subject the relay's permissions name (README), not a store file


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
    assert records.quarantine(box, "x.json", "test", sub="expired") is None
    assert dirs_under(path) == before
    # a launch that never marked anything has no marker to read: FileNotFoundError, an OSError
    shown = markers.for_launch(box, "s-none", NoLaunch("test"))
    try:
        shown.read("0" * 10)
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("a marker read from no directory")


def test_a_box_is_read_without_the_modules_that_act_on_it(clone):
    """What is done to a box is a function over it, imported where used (store/files.py): a Box
    has no method of records, moves, drops or publish, and no __getattr__ to find one. So a box
    opened and its inbox read load none of them, and a records call loads no moves."""
    import subprocess
    import sys
    run_cli("send", "--to", "web", "--", "for the reader", cwd=clone.main, check=True)
    code = (
        "import sys\n"
        "from git_korus_mail.core import keys\n"
        "from git_korus_mail.store.files import Box, MailRoot\n"
        f"root = MailRoot.open({str(clone.mail_root.parent)!r})\n"
        f"box = root.box(keys.key_for({str(clone.web)!r}).name)\n"
        "ids, _odd = box.inbox_ids()\n"
        "acting = ['git_korus_mail.store.' + m for m in ('records', 'moves', 'drops', 'publish', 'forwarding')]\n"
        "assert not [m for m in acting if m in sys.modules], [m for m in acting if m in sys.modules]\n"
        "assert not box.may_need_repair() and 'git_korus_mail.store.moves' not in sys.modules\n"
        "from git_korus_mail.store import records\n"
        "assert len(ids) == 1 and records.receipt(box, ids[0]) is None\n"
        "assert 'git_korus_mail.store.moves' not in sys.modules\n"
        "assert not hasattr(Box, '__getattr__') and not hasattr(box, 'receipt')\n"
        "print('read')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "read\n"


def test_files_imports_no_store_module_that_imports_it():
    """store/files.py is the store's ground floor: every import it makes (at the top, inside a
    function, or for mypy alone) is of a module that does not import it back, so the store has
    no circle through it (issue 24)."""
    import ast
    store = Path(__file__).resolve().parent.parent / "git_korus_mail" / "store"

    def imported(path):
        out = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "git_korus_mail.store":
                out |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("git_korus_mail.store."):
                out.add(node.module.rsplit(".", 1)[1])
        return out

    below = imported(store / "files.py")
    assert below >= {"fsafe", "layout"}  # the reading works: the imports are seen
    back = sorted(m for m in below if (store / f"{m}.py").is_file() and "files" in imported(store / f"{m}.py"))
    assert not back, back
