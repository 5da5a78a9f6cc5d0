"""Gemini CLI before an edit (issue 29, reservations; docs/CLIENTS.md, "Reservations before an
edit"). Observed on 0.61.0 offline (tests/e2e/test_reserve_clients_e2e.py) and read in its
bundle (executeToolWithHooks):

- BeforeTool fires for the editing tools `write_file` and `replace` (tool_input.file_path),
  before the person's confirmation in the default approval mode;
- `{"decision": "deny", "reason": R}` refuses the call: the file is not written, and the model
  reads "Tool execution blocked: R" as the tool's error;
- `hookSpecificOutput.additionalContext` is *dropped* at BeforeTool (only AfterTool reads it),
  so an advisory reservation reaches the model only as a refusal: its first edit is refused with
  the tell, the same edit again goes through (told once: core/reservations.before_edit);
- `{"decision": "ask"}` forces the confirmation dialog, but a headless run (`-p`) then ends
  with no answer at all, so it is not used: the refusal names `reserve --drop ... --force`.

A shell command that writes files (run_shell_command) is not read: the commit guard catches it.
"""

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported (hot path)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional

PRE_EDIT_EVENT = "BeforeTool"
EDIT_TOOLS = ("write_file", "replace")
MATCHER = "write_file|replace"  # a regex to Gemini; the tool name is checked again below
REASON_LIMIT = 7000  # UTF-16 units, as protocol.CONTEXT_LIMIT: the reason is the tool's error


def paths(event: str, raw: "Mapping[str, Any]") -> "Optional[List[str]]":
    """The file an editing tool is about to write ([] for another tool), or None when the event
    is no pre-edit event (the drain then does its usual work). `raw`: the payload."""
    if event != PRE_EDIT_EVENT:
        return None
    args = raw.get("tool_input")
    if raw.get("tool_name") not in EDIT_TOOLS or not isinstance(args, dict):
        return []
    path = args.get("file_path")
    return [path] if isinstance(path, str) and path and "\0" not in path else []


def output(text: str, block: bool) -> str:
    """A refusal (a session's first edit of an advisory reservation, or any of a `--block` one):
    its reason the model's to read. Otherwise (no session to record a telling against): the
    person's line only (Gemini gives BeforeTool no context to the model)."""
    first = text.split("\n", 1)[0][:300]
    out: "Dict[str, Any]"
    if block:
        reason = text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT - 40].rsplit("\n", 1)[0] + "\n(cut)"
        out = {"decision": "deny", "reason": reason, "systemMessage": "refused an edit: " + first}
    else:
        out = {"systemMessage": first + " (advisory: the edit goes on; `git korus-mail reserve --list`)"}
    return json.dumps(out, ensure_ascii=True)
