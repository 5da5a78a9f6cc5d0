"""Issue 25, "What it says must be true": the verdict, the faults and the words a person reads
say what is so, and each fix line, once run, makes its problem go away."""

import json
import os
import subprocess

from helpers import git, hook, run_cli
from install_fixtures import box_dir, install

import hermetic


def _only_on_path(tmp_path, *names):
    """A PATH holding only `names` (git, sh, ...) by symlink: no codex on it."""
    import shutil
    d = tmp_path / "path-bin"
    d.mkdir(exist_ok=True)
    for n in names:
        target = shutil.which(n)
        if target and not (d / n).exists():
            (d / n).symlink_to(target)
    return str(d)


# -- Python leaking into words -----------------------------------------------------------------
def test_read_says_no_and_dash_never_false_or_none(clone):
    proc = run_cli("send", "--no-wake", "--to", str(clone.web), "--", "hi", cwd=clone.main, check=True)
    msg_id = proc.stdout.split()[1]
    hook("UserPromptSubmit", clone.web, "s-words")
    out = run_cli("read", msg_id, cwd=clone.web, check=True).stdout
    assert "\nwake     no\n" in out and ", truncated no," in out, out
    for word in ("None", "False", "True"):
        assert word not in out, out


def test_safe_renders_missing_and_flags_as_words():
    from git_korus_mail.commands.text import safe
    assert (safe(None), safe(False), safe(True), safe(0), safe("x")) == ("-", "no", "yes", "0", "x")


# -- install checks before it writes -----------------------------------------------------------
def test_install_codex_without_codex_writes_nothing(clone, tmp_path):
    path = _only_on_path(tmp_path, "git", "sh", "bash", "cat", "tr", "cut", "tail")
    before = set(p for p in clone.common_dir.rglob("*"))
    exclude = (clone.common_dir / "info" / "exclude").read_bytes()
    proc = install(clone.main, "--client", "codex", check=False, env={"PATH": path})
    assert proc.returncode == 1, proc
    assert proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1 and "Codex CLI not found" in proc.stderr, proc.stderr
    assert set(p for p in clone.common_dir.rglob("*")) == before  # no stub, no record, no mail root
    assert (clone.common_dir / "info" / "exclude").read_bytes() == exclude
    assert not (clone.main / ".codex").exists() and not (clone.main / ".claude").exists()
    home = os.environ["HOME"]
    assert not os.path.exists(os.path.join(home, ".codex", "hooks.json"))
    # a later worktree add says nothing of us: nothing was wired
    added = git("worktree", "add", str(tmp_path / "later"), cwd=clone.main)
    assert "korus" not in added.stderr + added.stdout, added.stderr


def test_uninstall_says_restored_once_per_file(clone):
    settings = clone.main / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "x"}')
    install(clone.main)
    out = run_cli("uninstall", cwd=clone.main, check=True).stdout
    lines = out.splitlines()
    assert lines.count(f"settings  {settings}  restored") == 1, out
    assert len(lines) == len(set(lines)), out
    assert settings.read_text() == '{"model": "x"}'
