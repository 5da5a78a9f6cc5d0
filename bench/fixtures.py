"""The bench's world: hermetic HOME and git, real clones with linked worktrees, hook
payloads, and mail queued with the product's own format code. Shared parts come from
tests/hermetic.py, which the tests use too."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from harness import REPO, Failure

sys.path.insert(0, str(REPO / "tests"))
import hermetic  # noqa: E402 - the test world, shared with the tests
from hermetic import SCRUB  # noqa: E402,F401 - run.py scrubs its own environment with it

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
        hermetic.write_gitconfig(self.home)
        env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        # every hook names its client process, as Claude Code's do: this bench process stands
        # in for it (CLAUDE_PID), so each drain pays for identifying its launch
        env.update(hermetic.hermetic_env(self.home, "Bench", "bench@example.invalid"))
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
        hermetic.init_repo(main, self.git, readme="bench\n")
        paths = {"main": main}
        for wt in worktrees:
            paths[wt] = hermetic.add_worktree(main, top / wt, wt, self.git)
        common = Path(self.git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=main))
        return common, paths


def payload(event, session, cwd):
    return json.dumps(hermetic.payload(event, session, cwd)).encode()


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
        ctx = hermetic.context_of(ans) or ""
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
        ctx = hermetic.context_of(ans) or ""
        if "mail for this worktree" not in ctx:
            return f"queued mail was not shown (stdout {stdout[:300]!r})"
        note = (ans or {}).get("systemMessage")
        if note and "shown to the model" not in note:
            return f"fault reported: {note[:300]}"  # the user's line about what was shown is no fault
        self.batches.append(len(self.FRAME.findall(ctx)))
        return None


def fill_box(common_dir, recipient, n, sender_path, journal=False, sent_records=False):
    """Queue n valid messages for `recipient`, written with the product's own format code
    (message.build/encode into the box's inbox); no fsync, so 10,000 take seconds."""
    from git_korus_mail.core import keys
    from git_korus_mail.store import message
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
