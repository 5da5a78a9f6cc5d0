"""The stub Claude Code's hook entries call (`<mail>/hooks/claude-hook`, from hooks/claude-hook.sh):
it runs the baked-in git-korus-mail, and answers in hook JSON when that cannot run (rendered
and written by wiring/stub.py)."""

from git_korus_mail.wiring import stub as hookstub

STUB = hookstub.Stub("claude-hook", "claude-hook.sh")  # <mail>/hooks/claude-hook, from hooks/claude-hook.sh
stub_path = STUB.path            # (root) -> the stub's path
render_stub = STUB.render        # (helper, repo=None) -> its text, every value quoted for shell and JSON
write_stub = STUB.write          # (root, helper, force=False, repo=None) -> (path, "current" or "written")
