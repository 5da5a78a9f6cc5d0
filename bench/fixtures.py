"""The bench's world: hermetic HOME and git, real clones with linked worktrees, hook
payloads, and mail queued with the product's own format code."""

import glob
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from harness import Failure

# Environment that would change what git or the drain does; scrubbed for every child.
SCRUB = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
         "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
         "CLAUDE_PID", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR", "KORUS_MAIL_CRASH_AT",
         "KORUS_MAIL_VERIFY", "NO_COLOR", "PYTHONPYCACHEPREFIX")

BODY = "\n".join([
    "Heads-up from the api worktree: I renamed `Client.fetch` to `Client.get` and moved the",
    "retry policy into `api/retry.py`. If your branch calls `fetch`, rebase on main before",
    "you push; the old name now raises AttributeError. Tests: `pytest tests/api -q` passes.",
    "Open question: do we keep the 3-attempt default or make it configurable per call?",
    "No action needed otherwise.",
])


# -- repositories -----------------------------------------------------------------------
class World:
    """Hermetic HOME, git identity and the two interpreter environments."""

    def __init__(self, base, tool, py):
        self.base = base
        self.tool = tool
        self.py = py
        self.home = base / "home"
        self.home.mkdir()
        (self.home / ".gitconfig").write_text(
            "[init]\n\tdefaultBranch = main\n[user]\n\tname = Bench\n\temail = bench@example.invalid\n")
        env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        env.update(HOME=str(self.home), GIT_CONFIG_NOSYSTEM="1", CLAUDE_CONFIG_DIR=str(self.home / ".claude"),
                   GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.invalid",
                   GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.invalid",
                   # every hook names its client process, as Claude Code's do: this bench process
                   # stands in for it, so each drain pays for identifying its launch
                   CLAUDE_PID=str(os.getpid()))
        self.env_inherited = env
        cached = dict(env)
        cached.pop("PYTHONDONTWRITEBYTECODE", None)
        cached["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
        self.env_cached = cached

    def git(self, *args, cwd):
        p = subprocess.run(["git", *args], cwd=cwd, env=self.env_inherited, capture_output=True, text=True)
        if p.returncode != 0:
            raise Failure(f"git {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout.strip()

    def clone(self, name, worktrees=()):
        top = self.base / name
        top.mkdir()
        main = top / "main"
        self.git("init", "-q", "-b", "main", str(main), cwd=top)
        (main / "README").write_text("bench\n")
        self.git("add", "README", cwd=main)
        self.git("commit", "-q", "-m", "init", cwd=main)
        paths = {"main": main}
        for wt in worktrees:
            path = top / wt
            self.git("worktree", "add", "-q", str(path), "-b", wt, cwd=main)
            paths[wt] = path
        common = Path(self.git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=main))
        return common, paths


def payload(event, session, cwd):
    p = {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event}
    if event == "SessionStart":
        p["source"] = "startup"
    return json.dumps(p).encode()


def hook_answer(stdout):
    text = stdout.decode("utf-8", "replace").strip()
    if not text:
        return None
    return json.loads(text)


def check_empty_box(event):
    def check(stdout, stderr, i):
        try:
            ans = hook_answer(stdout)
        except ValueError:
            return f"{event}: stdout is not JSON: {stdout[:200]!r}"
        if ans is not None and "systemMessage" in ans:
            return f"{event}: fault reported: {ans['systemMessage'][:300]}"
        ctx = ((ans or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""
        if "mail for this worktree" in ctx:
            return f"{event}: the box was supposed to be empty but mail was shown"
        if event == "SessionStart" and "is empty" not in ctx:
            return "SessionStart: expected the 'box is empty' line"
        return None
    return check


class QueuedCheck:
    """Checks that a queued drain really showed a batch, and records how big the batch was."""

    FRAME = re.compile(r"^\[mail \S+ [0-9a-f]{12} begin\]$", re.M)

    def __init__(self):
        self.batches = []

    def __call__(self, stdout, stderr, i):
        try:
            ans = hook_answer(stdout)
        except ValueError:
            return f"stdout is not JSON: {stdout[:200]!r}"
        ctx = ((ans or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""
        if "mail for this worktree" not in ctx:
            return f"queued mail was not shown (stdout {stdout[:300]!r})"
        if ans and "systemMessage" in ans:
            return f"fault reported: {ans['systemMessage'][:300]}"
        self.batches.append(len(self.FRAME.findall(ctx)))
        return None


def fill_box(common_dir, recipient, n, sender_path, journal=False, sent_records=False):
    """Queue n valid messages for `recipient`, written with the product's own format code
    (message.build/encode into the box's inbox); no fsync, so 10,000 take seconds."""
    from git_korus_mail import keys, message
    from git_korus_mail.store.files import MailRoot

    root = MailRoot.open(str(common_dir), create=True)
    rk = keys.key_for(str(recipient))
    sk = keys.key_for(str(sender_path))
    box = root.box(rk.name, create=True, path=rk.path)
    inbox = box.ensure_sub("inbox")
    own = root.box(sk.name, create=True, path=sk.path) if sent_records else None
    sender = {"path": sk.path, "branch": os.path.basename(sk.path), "session": None}
    for _ in range(n):
        msg = message.build(BODY, rk.path, rk.name, sender, kind="note")
        inbox.create_exclusive(msg["id"] + ".json", message.encode(msg), sync=False)
        if own is not None:
            rec = {"id": msg["id"], "box": rk.name, "path": rk.path, "sent_at": msg["sent_at"],
                   "expires_at": msg["expires_at"], "kind": msg["kind"]}
            own.ensure_sub("sent").create_exclusive(msg["id"] + ".json", json.dumps(rec, sort_keys=True).encode(),
                                             sync=False)
        if journal:
            root.journal("sent", id=msg["id"], box=rk.name, sender=sk.path, kind="note")
    return rk


def forget_session(common_dir, key_name, session):
    """Drop a session's display markers and presence so the next fresh session starts clean."""
    box = Path(common_dir) / "mail" / "box" / key_name
    for d in glob.glob(str(box / "shown" / (glob.escape(session) + "@*"))):  # shown/<session>@<launch>/
        shutil.rmtree(d, ignore_errors=True)
    try:
        os.unlink(box / "sessions" / (session + ".json"))
    except FileNotFoundError:
        pass
