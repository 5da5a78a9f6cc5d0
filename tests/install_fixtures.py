"""Helpers for the install and doctor tests (tests/conftest.py holds the shared clone fixture)."""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from helpers import run_cli

CONSOLE_SCRIPT = Path(sys.executable).parent / "git-korus-mail"
EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd", "StopFailure",
          "PreToolUse")  # the last before an edit, for reservations (issue 29)

# A settings file someone wrote by hand: indent 4, raw non-ASCII, an escaped slash
# json.dumps would not reproduce, no final newline, a foreign hook on one of our events.
FOREIGN_SETTINGS = (
    '{\n'
    '    "permissions": {"allow": ["Bash(ls)", "Read(caf\u00e9/\\/x)"]},\n'
    '    "model": "opus",\n'
    '    "hooks": {\n'
    '        "Stop": [{"hooks": [{"type": "command", "command": "echo foreign-stop"}]}],\n'
    '        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]\n'
    '    }\n'
    '}'
)


def settings_path(worktree):
    return Path(worktree) / ".claude" / "settings.local.json"


def load(path):
    return json.loads(Path(path).read_text())


def stub_of(clone):
    return str(clone.mail_root / "hooks" / "claude-hook")


def our_commands(settings, stub):
    """{event: [our commands]} in a parsed settings document."""
    out = {}
    for event, groups in (settings.get("hooks") or {}).items():
        for group in groups:
            for h in group.get("hooks", []):
                if h.get("command", "").startswith(f"'{stub}' "):
                    out.setdefault(event, []).append(h["command"])
    return out


def install(cwd, *extra, check=True, env=None):
    return run_cli("install", *extra, cwd=cwd, check=check, env=env)


def uninstall(cwd, *extra, check=True, input="", env=None):
    return run_cli("uninstall", *extra, cwd=cwd, check=check, input=input, env=env)


def snapshot(paths):
    """{path: (bytes, mtime_ns)} for the files that exist among `paths`."""
    out = {}
    for p in paths:
        p = Path(p)
        if p.exists():
            out[str(p)] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def age_files(paths, seconds=3600):
    """Push mtimes into the past, so an unwanted rewrite cannot hide inside one clock tick."""
    for p in paths:
        p = Path(p)
        if p.exists():
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns - seconds * 10**9, st.st_mtime_ns - seconds * 10**9))


def make_helper_copy(directory):
    """A copy of the console script at `directory`/git-korus-mail (same interpreter)."""
    directory = Path(directory)
    directory.mkdir(parents=True)
    dest = directory / "git-korus-mail"
    shutil.copy2(CONSOLE_SCRIPT, dest)
    return dest


def make_fake_helper(directory, drain_output):
    """A git-korus-mail that installs for real but whose drain prints `drain_output`."""
    directory = Path(directory)
    directory.mkdir(parents=True)
    dest = directory / "git-korus-mail"
    dest.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "if sys.argv[1:2] == ['drain']:\n"
        f"    sys.stdout.write({drain_output!r})\n"
        "    sys.exit(0)\n"
        "from git_korus_mail.cli import main\n"
        "sys.exit(main())\n")
    dest.chmod(0o755)
    return dest


def run_stub(command, cwd, event="SessionStart", env=None, path=None):
    """Run a settings command as Claude Code does (bash -c, payload on stdin)."""
    payload = {"session_id": "s-test-1", "transcript_path": "", "cwd": str(cwd), "hook_event_name": event}
    if event == "SessionStart":
        payload["source"] = "startup"
    full_env = dict(os.environ)
    if path is not None:
        full_env["PATH"] = path
    full_env.update(env or {})
    return subprocess.run(["bash", "-c", command], cwd=cwd, input=json.dumps(payload), capture_output=True,
                          text=True, env=full_env, timeout=60)


def dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def box_dir(clone, worktree):
    from git_korus_mail.core import keys
    name = keys.key_of_root(os.path.realpath(worktree)).name
    d = clone.mail_root / "box" / name
    return d


def mkdir700(path):
    path = Path(path)
    for p in reversed([path, *path.parents]):
        if not p.exists():
            p.mkdir()
            p.chmod(stat.S_IRWXU)
    return path


def break_helper(helper, how):
    """Make an installed helper unable to run, as users' machines do:
    "interpreter-gone": its shebang names a venv interpreter that no longer exists (a pipx venv
    after its base Python was upgraded): exec fails, the shell says 127;
    "unimportable": the interpreter runs but cannot import the package (a traceback, exit 1)."""
    helper = Path(helper)
    lines = helper.read_text().split("\n", 1)
    if how == "interpreter-gone":
        lines[0] = f"#!{helper.parent / 'gone-venv' / 'bin' / 'python'}"
    elif how == "unimportable":
        lines[0] = f"#!{sys.executable} -S"  # no site: the venv's site-packages (and our package) vanish
    else:
        raise ValueError(how)
    helper.write_text("\n".join(lines))
