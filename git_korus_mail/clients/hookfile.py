"""A hooks file in Claude Code's shape ({"hooks": {Event: [{"matcher"?, "hooks": [handler]}]}})
as Codex (`hooks.json`) and Gemini (`settings.json`) read it: the entries install writes, checks
and removes, the file on disk, and doctor's read-back of every wired file.

The editing and the restoring are wiring/hookdoc.py's. What differs per client is values only
(`HookFile`): its events, the events whose group carries `"matcher": "*"`, the timeout of each
(Codex counts seconds, Gemini milliseconds), the tail every clone's stub path ends with (the mark
of our entries), and any extra check of its own (docs/CLIENTS.md, "What install writes").
"""

import json
import os

from git_korus_mail.errors import MailError
from git_korus_mail.wiring import hookdoc

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

    from git_korus_mail.clients.interface import Checked, Doc, Group, Wired
    from git_korus_mail.wiring.hookdoc import Files

BadHooks = hookdoc.BadHooks
hook_command = hookdoc.hook_command
read = hookdoc.read  # (raw bytes or None, parsed dict or None); MailError when we cannot merge


def read_back(path: str) -> "Tuple[Optional[Doc], List[str]]":
    """doctor's read of one wired file: (its document, []) or (None, [why it cannot be read]):
    absent, not JSON, or not a hooks document."""
    try:
        _raw, data = read(path)
    except MailError as exc:
        return None, [str(exc)]
    return (None, ["missing"]) if data is None else (data, [])


def dump(data: "Doc", raw: "Optional[bytes]") -> bytes:
    """`data` as JSON in the style of the file it came from (indent 2 for a new one)."""
    text = raw.decode("utf-8") if raw else ""
    out = json.dumps(data, indent=2, ensure_ascii=not text or text.isascii())
    if not text or text.endswith("\n"):
        out += "\n"
    return out.encode("utf-8")


class HookFile:
    """One client's hook entries. `timeouts` maps an event to its timeout in the client's unit,
    with `default` for every other; `matchers` adds events whose one group matches only some
    tools (event -> the client's matcher: the editing tools before an edit, issue 29);
    `extra_check(doc)` adds the client's own problems of a file that has the right entries."""

    def __init__(self, stub_tail: str, events: "Sequence[str]", matched: "Sequence[str]",
                 default_timeout: int, timeouts: "Mapping[str, int]",
                 extra_check: "Optional[Callable[[Doc], List[str]]]" = None,
                 matchers: "Optional[Mapping[str, str]]" = None) -> None:
        self.stub_tail, self.events, self.matched = stub_tail, tuple(events), tuple(matched)
        self.default_timeout, self.timeouts = default_timeout, dict(timeouts)
        self.extra_check = extra_check
        self.matchers = dict(matchers or {})

    def wanted_groups(self, stub: str, repo: "Optional[str]" = None) -> "Dict[str, Group]":
        out: "Dict[str, Group]" = {}
        for event in self.events:
            group: "Group" = {"matcher": "*"} if event in self.matched else {}
            group["hooks"] = [{"type": "command", "command": hook_command(stub, event, repo),
                               "timeout": self.timeouts.get(event, self.default_timeout)}]
            out[event] = group
        for event, matcher in self.matchers.items():
            out[event] = {"matcher": matcher, "hooks": [
                {"type": "command", "command": hook_command(stub, event, repo),
                 "timeout": self.timeouts.get(event, self.default_timeout)}]}
        return out

    def stub_of(self, hook: object) -> "Optional[str]":
        """The stub path a handler calls when it is one of ours (any clone's), else None."""
        return hookdoc.stub_of(hook, self.stub_tail)

    def merge(self, doc: "Doc", stub: str, repo: "Optional[str]" = None, force: bool = False) -> "Doc":
        return hookdoc.merge(doc, stub, self.stub_tail, self.wanted_groups(stub, repo), force)

    def remove(self, doc: "Doc", stub: str) -> "Tuple[Doc, int]":
        return hookdoc.remove(doc, stub, self.stub_tail)

    def callers(self, doc: object) -> "List[Tuple[str, str]]":
        return hookdoc.callers(doc, self.stub_tail)

    def check(self, doc: "Doc", stub: str, repo: "Optional[str]" = None) -> "List[str]":
        try:
            hookdoc.validate(doc)
        except BadHooks as exc:
            return [str(exc)]
        problems = hookdoc.event_problems(doc, stub, self.stub_tail, self.wanted_groups(stub, repo),
                                          too_few="entries missing")
        if self.extra_check is not None:
            problems += self.extra_check(doc)
        return problems

    def wire_file(self, path: str, stub: str, repo: "Optional[str]", force: bool, files: "Files") -> str:
        """Merge our entries into one file; `files` is the scope's record of files. makedirs: the
        client's config folder itself may not exist yet."""
        return hookdoc.wire_file(path, stub, self.stub_tail, files, dump=dump, force=force, mkdir=os.makedirs,
                                 merged=lambda base: self.merge(base, stub, repo, force=force))

    def unwire_file(self, path: str, stub: str, rec: "Optional[Dict[str, Any]]") -> "Optional[str]":
        """Take our entries out of one file, restoring its bytes where we can."""
        return hookdoc.unwire_file(path, stub, self.stub_tail, rec, dump=dump)

    def check_wired(self, client: str, stub_file: str, wired: "Wired",
                    run_stub: "Optional[Callable[[str, Optional[str], str], Optional[str]]]",
                    ask: "Optional[Callable[[str, Optional[str], str], List[str]]]" = None) -> "Checked":
        """doctor's [(label, [problems])]: each wired file read back and checked, the stub run
        once per file as the client runs it (`run_stub(stub, repo, cwd)`, None: not run), then
        `ask(path, repo, cwd)`, the client's own question about that file, and the stub itself
        first."""
        results: "Checked" = []
        for path, repo, cwd in wired:
            data, unread = read_back(path)
            if data is None:
                results.append((path, unread))
                continue
            problems = self.check(data, stub_file, repo)
            if run_stub is not None and not problems:
                problem = run_stub(stub_file, repo, cwd)
                if problem:
                    problems.append(problem)
            if ask is not None:
                problems += ask(path, repo, cwd)
            results.append((path, problems))
        if wired:
            stub_problems: "List[str]" = []
            if not (os.path.isfile(stub_file) and os.access(stub_file, os.X_OK)):
                stub_problems.append(f"missing or not executable: run `git korus-mail install --client {client}`")
            results.insert(0, (stub_file, stub_problems))
        return results
