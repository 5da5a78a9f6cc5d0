"""Codex CLI before an edit (issue 29, reservations; docs/CLIENTS.md, "Reservations before an
edit"). Observed on 0.171.0 offline (tests/e2e/test_reserve_clients_e2e.py):

- PreToolUse fires for Codex's own editing tool, `apply_patch` (tool_name "apply_patch",
  tool_input.command = the patch text), as well as for the shell ("Bash"); it fires in the
  default sandbox too, before the sandbox judges the write;
- `hookSpecificOutput.additionalContext` reaches the model as a developer message placed
  between the tool call and its output: after the patch, so the telling is a refusal, once
  (core/reservations.before_edit);
- `permissionDecision: "deny"` with a `permissionDecisionReason` refuses the call: the patch is
  not applied, and the model reads "Command blocked by PreToolUse hook: <reason>" as its output;
- `permissionDecision: "ask"` is not supported (the hook counts as failed and the call runs), so
  the person has no per-edit override: the refusal names `reserve --drop ... --force`.

The paths come from the patch's own headers (`*** Add File:`, `*** Update File:`, `*** Delete
File:`, `*** Move to:`), relative to the session's cwd. A shell command that writes files
(including `apply_patch` typed into the shell) is not read: the commit guard catches it.
The answer takes Claude Code's shape (clients/hookjson.pre_tool_use_output).
"""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, List, Mapping, Optional

PRE_EDIT_EVENT = "PreToolUse"
EDIT_TOOLS = ("apply_patch",)
MATCHER = "apply_patch"  # Codex matches it as a regex; the tool name is checked again above
HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
MAX_PATHS = 256  # a patch's files read at most: the match stays bounded


def patch_paths(patch: str) -> "List[str]":
    """The files an apply_patch patch writes, in order, each once."""
    out: "List[str]" = []
    for line in patch.split("\n"):
        if not line.startswith("*** "):
            continue
        for head in HEADERS:
            if line.startswith(head):
                path = line[len(head):].strip()
                if path and "\0" not in path and path not in out:
                    out.append(path)
                break
        if len(out) >= MAX_PATHS:
            break
    return out


def paths(event: str, raw: "Mapping[str, Any]") -> "Optional[List[str]]":
    """The files an editing tool is about to write ([] for another tool), or None when the
    event is no pre-edit event (the drain then does its usual work). `raw`: the payload."""
    if event != PRE_EDIT_EVENT:
        return None
    args = raw.get("tool_input")
    if raw.get("tool_name") not in EDIT_TOOLS or not isinstance(args, dict):
        return []
    patch = args.get("command")
    return patch_paths(patch) if isinstance(patch, str) else []

