"""The stub Claude Code's hook entries call (`<mail>/hooks/claude-hook`): the one template
(hooks/hook.sh) with Claude Code's values. It runs the baked-in git-korus-mail, and answers in
hook JSON when that cannot run (rendered and written by wiring/stub.py).

The fast path's key: every hook's environment names the session (CLAUDE_CODE_SESSION_ID) and the
Claude Code process (CLAUDE_PID), so the stub spells `<session>@<pid>` without reading the payload
(protocol.fast_key_of is the drain's side; docs/HOOKS.md, "The fast path")."""

from git_korus_mail.wiring import stub as hookstub

STUB = hookstub.Stub("claude-hook", "claude", session_env="CLAUDE_CODE_SESSION_ID", launch_env="CLAUDE_PID",
                     fast_events=("PostToolUse", "UserPromptSubmit", "Stop"), opening_event="SessionStart",
                     end_event="Stop", prompt_event="UserPromptSubmit", pre_edit_events=("PreToolUse",))
stub_path = STUB.path            # (root) -> the stub's path
render_stub = STUB.render        # (helper, repo=None) -> its text, every value quoted for shell and JSON
write_stub = STUB.write          # (root, helper, force=False, repo=None) -> (path, "current" or "written")
