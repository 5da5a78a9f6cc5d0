"""The stub Gemini CLI's hook entries call (`<mail>/hooks/gemini-hook`, from hooks/gemini-hook.sh):
it runs the baked-in git-korus-mail's `drain --client=gemini`, and answers in hook JSON when that
cannot run (rendered and written by wiring/stub.py). A stub, not the helper's own path, in the
hook command: Gemini fingerprints a project hook by its command, so it must not change when the
helper does."""

from git_korus_mail.wiring import stub as hookstub

STUB = hookstub.Stub("gemini-hook", "gemini-hook.sh")  # <mail>/hooks/gemini-hook, from hooks/gemini-hook.sh
stub_path = STUB.path            # (root) -> the stub's path
render_stub = STUB.render        # (helper, repo=None) -> its text, every value quoted for shell and JSON
write_stub = STUB.write          # (root, helper, force=False, repo=None) -> (path, "current" or "written")
