"""The test world the tests and bench/ share: a hermetic environment, real git repositories
with real linked worktrees, and hook payloads as Claude Code sends them.

Plain functions with no pytest in them, so bench/fixtures.py can import this module too
(it puts tests/ on sys.path): what is measured runs in the world that is tested.
"""

import os

# Environment that would change what git or the drain does: removed for every test and bench run.
SCRUB = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
         "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
         "CLAUDE_PID", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR", "CODEX_SESSION_ID", "CODEX_THREAD_ID", "KORUS_MAIL_CRASH_AT",
         "KORUS_MAIL_VERIFY", "NO_COLOR", "PYTHONPYCACHEPREFIX")

GITCONFIG = "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"


def hermetic_env(home, name, email):
    """The variables to set: our own HOME, git config and identity, Claude config dir, and this
    process as every drain's client launch (CLAUDE_PID), as Claude Code's hooks name theirs."""
    return {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
            "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CLAUDE_PID": str(os.getpid())}


def write_gitconfig(home):
    (home / ".gitconfig").write_text(GITCONFIG)


def init_repo(main, git, readme="hello\n"):
    """`git init` at `main` with one commit; `git(*args, cwd=...)` runs git (the caller's runner)."""
    git("init", "-q", "-b", "main", str(main), cwd=main.parent)
    (main / "README").write_text(readme)
    git("add", "README", cwd=main)
    git("commit", "-q", "-m", "init", cwd=main)


def add_worktree(main, path, branch, git):
    git("worktree", "add", "-q", str(path), "-b", branch, cwd=main)
    return path


def payload(event, session, cwd):
    """A hook payload as Claude Code sends it on stdin (SessionStart carries its source)."""
    p = {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": event}
    if event == "SessionStart":
        p["source"] = "startup"
    return p


def context_of(answer):
    """The additionalContext of a hook answer (parsed JSON), or None."""
    if not answer:
        return None
    return (answer.get("hookSpecificOutput") or {}).get("additionalContext")
