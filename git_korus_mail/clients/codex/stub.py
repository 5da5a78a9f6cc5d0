"""The stub Codex's hook entries call (`<mail>/hooks/codex-hook`): the one template
(hooks/hook.sh) with Codex's values. It runs the baked-in git-korus-mail's `drain
--client=codex`, and answers in hook JSON when that cannot run (rendered and written by
wiring/stub.py). A stub, not the helper's own path, in the hook command: Codex trusts a hook by
the hash of its command, so the command must not change when the helper does.

No fast-path key: Codex 0.171.0 names neither the session nor its process in a hook's
environment, and with its daemon one parent process runs the hooks of several sessions
(docs/CLIENTS.md, "Launch identity: what is proved"), so the stub cannot name a launch without
reading the payload (docs/HOOKS.md, "The fast path", "Codex has no fast path").

Before an edit (PreToolUse, clients/codex/preedit.py) the stub answers in sh while the clone holds no
reservation (hooks/hook.sh, `pre_edit_events`)."""

from git_korus_mail.wiring import stub as hookstub

STUB = hookstub.Stub("codex-hook", "codex", opening_event="SessionStart", end_event="Stop",
                     pre_edit_events=("PreToolUse",))
stub_path = STUB.path            # (root) -> the stub's path
render_stub = STUB.render        # (helper, repo=None) -> its text, every value quoted for shell and JSON
write_stub = STUB.write          # (root, helper, force=False, repo=None) -> (path, "current" or "written")
