"""Whether Gemini CLI 0.61.0 would run our hooks in a folder, read from the files Gemini itself
reads, never written, and without running Gemini (docs/CLIENTS.md, "Gemini CLI: doctor").

Gemini 0.61.0 has no command that lists the hooks it loads (`gemini hooks` only migrates Claude
Code's; `/hooks` is a panel of its terminal UI), and a probe run would run our hooks against the
person's mail and write a session into their history. What decides, in its own code:
- folder trust (`security.folderTrust.enabled`, default on; GEMINI_CLI_TRUST_WORKSPACE=true
  trusts every folder): in a folder its trust file does not trust, it loads no hook at all, and
  not the folder's `.gemini/settings.json`;
- `hooksConfig.enabled` false in any settings file it merges turns every hook off;
- `hooksConfig.disabled` (what `/hooks disable` writes) lists hooks by name, and a hook with no
  name is named by its command: one of our commands there is skipped.
A project hook that is new to `~/.gemini/trusted_hooks.json` only draws a warning; it still runs.
"""

import json
import os

from git_korus_mail.clients.gemini import settingsfile

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

SYSTEM_DEFAULT = "/etc/gemini-cli/settings.json"  # Linux; GEMINI_CLI_SYSTEM_SETTINGS_PATH overrides


def system_settings_path() -> str:
    return os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or SYSTEM_DEFAULT


def _load(path: str) -> "Optional[Dict[str, Any]]":
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _section(doc: "Dict[str, Any]", *keys: str) -> "Any":
    cur: "Any" = doc
    for key in keys:
        cur = cur.get(key) if isinstance(cur, dict) else None
    return cur


def settings_files(cwd: str) -> "List[str]":
    """The settings Gemini merges for `cwd`, lowest first: the user's, the folder's, the system's
    (which overrides both)."""
    return [settingsfile.user_settings_path(), os.path.join(cwd, settingsfile.PROJECT_FILE), system_settings_path()]


def problems(cwd: str, commands: "Sequence[str]", folder_trusted: "Callable[[str], Optional[bool]]",
             trust_file: str, checked: str = "") -> "List[str]":
    """What in Gemini's own files keeps it from running `commands` (our hook commands) in `cwd`.
    `checked`: the settings file whose own hooksConfig.enabled was judged already."""
    found: "List[str]" = []
    docs: "List[Tuple[str, Dict[str, Any]]]" = []
    for path in settings_files(cwd):
        doc = _load(path)
        if doc is not None:
            docs.append((path, doc))
    trust_on = True
    for _path, doc in docs:
        enabled = _section(doc, "security", "folderTrust", "enabled")
        if isinstance(enabled, bool):
            trust_on = enabled
    # GEMINI_CLI_TRUST_WORKSPACE=true trusts every folder for a Gemini started with it: one from
    # this shell, when doctor's environment has it
    trusted = not trust_on or folder_trusted(cwd) is True or os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true"
    if not trusted:
        found.append(f"{cwd} is not trusted in {trust_file}: Gemini runs no hook there; trust it in Gemini "
                     f"(its \"Trust this folder?\" dialog; install does not)")
    project = os.path.join(cwd, settingsfile.PROJECT_FILE)
    wanted = set(commands)
    for path, doc in docs:
        if path == project and not trusted:
            continue  # Gemini does not read an untrusted folder's settings
        if _section(doc, "hooksConfig", "enabled") is False and path != checked:
            found.append(f"hooksConfig.enabled is false in {path}: Gemini runs no hook")
        disabled = _section(doc, "hooksConfig", "disabled")
        if isinstance(disabled, list):
            ours = sorted(wanted.intersection(d for d in disabled if isinstance(d, str)))
            if ours:
                found.append(f"hooksConfig.disabled in {path} turns off {len(ours)} of our hooks "
                             f"(`/hooks enable` in Gemini, or take them out of that list)")
    return found


def other_after_agent(cwd: str) -> "List[str]":
    """The settings files Gemini merges for `cwd` that hold an AfterAgent hook not ours: any of
    them may continue a run (`decision: "deny"`), and our AfterAgent cannot know it will
    (docs/CLIENTS.md, "stop_hook_active, observed")."""
    found: "List[str]" = []
    for path in settings_files(cwd):
        doc = _load(path)
        groups = _section(doc, "hooks", "AfterAgent") if doc is not None else None
        if not isinstance(groups, list):
            continue
        hooks = [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list) for h in g["hooks"]]
        if any(settingsfile.FILE.stub_of(h) is None for h in hooks):
            found.append(path)
    return found


def is_gate(problem: str) -> bool:
    """Is this problem one of Gemini's own gates (trust, hooksConfig), which only the person
    changes, in Gemini (settingsfile.FILE.check says a file's own hooksConfig.enabled alike)?"""
    return " is not trusted in " in problem or problem.startswith("hooksConfig.")
