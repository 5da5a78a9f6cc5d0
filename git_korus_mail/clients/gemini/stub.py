"""The stub Gemini CLI's hook entries call (`<mail>/hooks/gemini-hook`): the one template
(hooks/hook.sh) with Gemini's values. It runs the baked-in git-korus-mail's `drain
--client=gemini`, and answers in hook JSON when that cannot run (rendered and written by
wiring/stub.py). A stub, not the helper's own path, in the hook command: Gemini fingerprints a
project hook by its command, so it must not change when the helper does.

The fault report is said at SessionStart (to the model and the person) and at AfterAgent, where
a run ends (to the person: Gemini's stop hook). No fast-path key: Gemini 0.61.0 names the session
in a hook's environment (GEMINI_SESSION_ID) but no variable names its process, so the stub has no
launch to spell a stamp's name from and every event runs the drain (docs/HOOKS.md, "The fast
path"; docs/CLIENTS.md, "Gemini CLI", "Launch").

Before an edit (BeforeTool, clients/gemini/preedit.py) the stub answers in sh while the clone holds no
reservation (hooks/hook.sh, `pre_edit_events`)."""

from git_korus_mail.wiring import stub as hookstub

STUB = hookstub.Stub("gemini-hook", "gemini", opening_event="SessionStart", end_event="AfterAgent",
                     pre_edit_events=("BeforeTool",))
stub_path = STUB.path            # (root) -> the stub's path
render_stub = STUB.render        # (helper, repo=None) -> its text, every value quoted for shell and JSON
write_stub = STUB.write          # (root, helper, force=False, repo=None) -> (path, "current" or "written")
