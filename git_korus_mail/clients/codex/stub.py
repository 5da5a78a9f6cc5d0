"""The stub Codex's hook entries call (`<mail>/hooks/codex-hook`): the one template
(hooks/hook.sh) with Codex's values. It runs the baked-in git-korus-mail's `drain
--client=codex`, and answers in hook JSON when that cannot run (rendered and written by
wiring/stub.py). A stub, not the helper's own path, in the hook command: Codex trusts a hook by
the hash of its command, so the command must not change when the helper does.

The fast path's key: Codex 0.171.0 names neither the session nor its process in a hook's
environment, so the stub takes the session from the payload's head (its first field, written as
`SESSION_HEAD` then the id: measured, /work/shared/reference/codex-hooks.md "Events and stdin")
and the launch from its own parent, the process that ran the hook (docs/HOOKS.md, "Codex's key:
the payload's head"; protocol.fast_key_of is the drain's side).

Before an edit (PreToolUse, clients/codex/preedit.py) the stub answers in sh while the clone holds no
reservation (hooks/hook.sh, `pre_edit_events`)."""

from git_korus_mail.wiring import stub as hookstub

SESSION_HEAD = '{"session_id":"'  # how every payload Codex writes begins (compact JSON, this key first)
STUB = hookstub.Stub("codex-hook", "codex", fast_events=("PostToolUse", "UserPromptSubmit", "Stop"),
                     opening_event="SessionStart", end_event="Stop", prompt_event="UserPromptSubmit",
                     pre_edit_events=("PreToolUse",), session_head=SESSION_HEAD)
stub_path = STUB.path            # (root) -> the stub's path
render_stub = STUB.render        # (helper, repo=None) -> its text, every value quoted for shell and JSON
write_stub = STUB.write          # (root, helper, force=False, repo=None) -> (path, "current" or "written")
