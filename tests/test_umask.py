"""Modes under any umask: every directory the store creates is 0700, every file 0600.

Each umask of the matrix runs the whole life of the store in real processes started
under it: send (tmp/, box/, inbox/, sent/, the journal), a show with an expiry and a
quarantine (shown/, markers, expired/, notices/, quarantine/ and its record,
sessions/), Stop (claiming/, receipts/, seen/), a journal rotation (journal.1.jsonl,
journal.lock), off/on (OFF), and a second session's SessionStart (notices told).
Then every entry under the mail root is checked. A umask of 0277 once left the
journal 0400 and one of 0477 a box/ of 0300.
"""

import json
import os
import stat
import subprocess

import pytest

from helpers import PYTHON
from git_korus_mail.core import keys
from git_korus_mail.store import journal

UMASKS = [0o000, 0o002, 0o022, 0o027, 0o077, 0o277, 0o477, 0o777]
# Every CPython runs the usual umask and the harshest; the rest of the matrix is the `slow` tier
# (docs/TESTING.md): what a umask does to a mode is the kernel's, the same under every interpreter.
EVERY_PYTHON = (0o022, 0o777)


def _tiered(umasks):
    return [u if u in EVERY_PYTHON else pytest.param(u, marks=pytest.mark.slow) for u in umasks]
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"


def _run(umask, args, cwd, input=None):
    proc = subprocess.run([PYTHON, "-m", "git_korus_mail", *args], cwd=cwd, input=input, capture_output=True,
                          text=True, preexec_fn=lambda: os.umask(umask), timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _hook(umask, event, cwd, session):
    payload = {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event}
    proc = _run(umask, ["drain"], cwd, input=json.dumps(payload))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _send(umask, clone, body, *extra):
    proc = _run(umask, ["send", "--to", str(clone.web), "--json", *extra, "--", body], clone.main)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["results"][0]["id"]


@pytest.mark.parametrize("umask", _tiered(UMASKS), ids=[f"umask-{u:04o}" for u in UMASKS])
def test_every_dir_is_0700_and_every_file_0600(clone, umask):
    box = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    shown = _send(umask, clone, "to be shown and consumed")
    old = _send(umask, clone, "to expire unread", "--ttl", "1")
    path = box / "inbox" / (old + ".json")
    msg = json.loads(path.read_text())
    msg["expires_at"] = "2000-01-01T00:00:00.000000Z"
    with open(path, "r+") as f:  # in place: the file keeps the mode the store gave it
        f.write(json.dumps(msg))
        f.truncate()
    fd = os.open(box / "inbox" / "junk.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.fchmod(fd, 0o600)
    os.close(fd)
    assert shown in _hook(umask, "SessionStart", clone.web, S1)
    _hook(umask, "Stop", clone.web, S1)
    with open(clone.mail_root / journal.NAME, "ab") as f:  # the next line rotates it
        f.write(b"{}\n" * (journal.MAX_BYTES // 3 + 1))
    _send(umask, clone, "after the rotation")
    assert _run(umask, ["off"], clone.main).returncode == 0
    assert _run(umask, ["on"], clone.main).returncode == 0
    _hook(umask, "SessionStart", clone.web, S2)
    _hook(umask, "SessionEnd", clone.web, S2)
    assert _run(umask, ["status"], clone.main).returncode == 0

    made = {os.path.relpath(os.path.join(d, n), clone.mail_root).split(os.sep)[-1]
            for d, ds, fs in os.walk(clone.mail_root) for n in ds + fs}
    for part in ("tmp", "box", "inbox", "sent", "shown", "sessions", "seen", "receipts", "claiming", "expired",
                 "notices", "quarantine", journal.NAME, journal.ROTATED, journal.LOCK, "path", old + ".json",
                 shown + ".json"):
        assert part in made, f"the scenario did not create {part}: {sorted(made)}"
    assert any(n.endswith(".why.json") for n in made)
    wrong = []
    for d, ds, fs in os.walk(clone.mail_root):
        for n in ds + fs:
            p = os.path.join(d, n)
            st = os.lstat(p)
            want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) or stat.S_IMODE(st.st_mode) != want:
                wrong.append(f"{os.path.relpath(p, clone.mail_root)} {stat.S_IMODE(st.st_mode):04o}")
    root_mode = stat.S_IMODE(os.lstat(clone.mail_root).st_mode)
    assert not wrong and root_mode == 0o700, (f"{root_mode:04o}", wrong)


# -- the same as an unprivileged user: root reads a 0300 directory, a user does not -----------
NOBODY = 65534


def _python_for_nobody():
    """An interpreter user `nobody` may run, with this checkout and the venv's packages."""
    import sys
    import sysconfig
    site = sysconfig.get_paths()["purelib"]
    env = {"PYTHONPATH": f"{os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}:{site}",
           "PATH": "/usr/bin:/bin", "HOME": "/tmp", "GIT_CONFIG_NOSYSTEM": "1"}
    ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for py in (sys.executable, f"/usr/bin/python{ver}"):
        try:
            probe = subprocess.run([py, "-c", "import git_korus_mail.cli, pygit2, portalocker"], env=env,
                                   preexec_fn=_as_nobody(0o022), capture_output=True, cwd="/tmp")
        except OSError:
            continue  # not executable for that user (a venv under /root)
        if probe.returncode == 0:
            return py, env
    return None, None


def _as_nobody(umask):
    def become():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        os.umask(umask)
    return become


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
@pytest.mark.parametrize("umask", _tiered([0o277, 0o477, 0o777]), ids=["umask-0277", "umask-0477", "umask-0777"])
def test_an_unprivileged_user_under_a_harsh_umask_gets_working_modes(umask):
    import shutil
    import tempfile
    py, env = _python_for_nobody()
    if py is None:
        pytest.skip("no interpreter that user nobody may run with these packages")
    base = tempfile.mkdtemp(prefix="korus-nobody-", dir="/tmp")
    try:
        os.chown(base, NOBODY, NOBODY)
        env = dict(env, HOME=base, CLAUDE_PID=str(os.getpid()), GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@example.invalid",
                   GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@example.invalid")

        def run(args, cwd, input=None, mask=umask):
            proc = subprocess.run(args, cwd=cwd, env=env, input=input, capture_output=True, text=True,
                                  preexec_fn=_as_nobody(mask), timeout=120)
            assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stdout, proc.stderr)
            return proc.stdout

        main, web = os.path.join(base, "api"), os.path.join(base, "web")
        run(["git", "init", "-q", "-b", "main", main], base, mask=0o022)
        run(["git", "commit", "-q", "--allow-empty", "-m", "init"], main, mask=0o022)
        run(["git", "worktree", "add", "-q", web, "-b", "web"], main, mask=0o022)
        cli = [py, "-m", "git_korus_mail"]
        msg = json.loads(run(cli + ["send", "--to", web, "--json", "--", "hello"], main))["results"][0]["id"]
        for event, session in (("SessionStart", S1), ("Stop", S1), ("SessionStart", S2)):
            payload = {"session_id": session, "transcript_path": "", "cwd": web, "hook_event_name": event}
            out = run(cli + ["drain"], web, input=json.dumps(payload))
            if event == "SessionStart" and session == S1:
                assert msg in out, out
        mail_root = os.path.join(main, ".git", "mail")
        os.chmod(os.path.join(mail_root, "box"), 0o300)  # as an old run under umask 0477 left it
        assert msg in run(cli + ["status"], main)        # made 0700 again, not a fault for good
        wrong = []
        for d, ds, fs in os.walk(mail_root):
            for n in ds + fs:
                st = os.lstat(os.path.join(d, n))
                want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
                if stat.S_IMODE(st.st_mode) != want or st.st_uid != NOBODY:
                    wrong.append(f"{os.path.relpath(os.path.join(d, n), mail_root)} {stat.S_IMODE(st.st_mode):04o}")
        assert not wrong, wrong
        boxes = os.listdir(os.path.join(mail_root, "box"))
        assert [b for b in boxes if os.path.exists(os.path.join(mail_root, "box", b, "seen", msg + ".json"))]
    finally:
        shutil.rmtree(base, ignore_errors=True)
