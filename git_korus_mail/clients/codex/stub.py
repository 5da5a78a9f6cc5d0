"""The stub Codex's hook entries call (`<mail>/hooks/codex-hook`, from hooks/codex-hook.sh): it
runs the baked-in git-korus-mail's `drain --client=codex`, and answers in hook JSON when that
cannot run (rendered and written by wiring/stub.py). A stub, not the helper's own path, in
the hook command: Codex trusts a hook by the hash of its command, so the command must not
change when the helper does."""

from git_korus_mail.wiring import stub as hookstub

STUB = hookstub.Stub("codex-hook", "codex-hook.sh")  # <mail>/hooks/codex-hook, from hooks/codex-hook.sh
stub_path = STUB.path            # (root) -> the stub's path
render_stub = STUB.render        # (helper, repo=None) -> its text, every value quoted for shell and JSON
write_stub = STUB.write          # (root, helper, force=False, repo=None) -> (path, "current" or "written")
