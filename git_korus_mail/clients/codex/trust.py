"""Hook trust and project trust in the user's Codex config, through Codex's own app-server.

Codex silently skips a hook nobody has trusted, and an edit to a hook (its command, timeout,
matcher) makes it untrusted again. Trust lives in `$CODEX_HOME/config.toml`:
`[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash = "sha256:..."`, and a
project's `.codex/` hooks load only when `[projects."<path>"] trust_level = "trusted"`.
We never compute a hash or edit that TOML ourselves: `codex app-server` (JSON-RPC on stdio)
lists each hook's key, current hash and trust status (`hooks/list`) and writes config keys
(`config/batchWrite`); the app-server is what Codex's own terminal UI uses for the same job
(docs/CLIENTS.md, "Codex CLI: trust").

For an exact uninstall, the config file's bytes (and mode) before our first write and after
our last are recorded: when the file is still as we left it, uninstall puts the first back
byte for byte; when someone changed it since, only our keys are removed, by the app-server.
"""

import json
import os
import select
import shutil
import subprocess
import time

from git_korus_mail.errors import MailError
from git_korus_mail.wiring import files as wfiles

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import IO, Any, Callable, Collection, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

    Json = Any  # a JSON-RPC result, as the app-server sent it: read with .get and isinstance
    # The hooks.json files whose hooks count as ours: a set of paths, or a test of a path.
    Sources = Union[Set[str], FrozenSet[str], Callable[[str], bool]]

RPC_TIMEOUT = 30
CODEX_ENV = "KORUS_MAIL_CODEX"  # the codex to ask, when `codex` on PATH is not the one


def find_codex() -> str:
    path = os.environ.get(CODEX_ENV) or shutil.which("codex")
    if not path or not os.access(path, os.X_OK):
        raise MailError("Codex CLI not found (no `codex` on PATH, $KORUS_MAIL_CODEX unset): install wires Codex "
                        "through its app-server; put codex on PATH or set KORUS_MAIL_CODEX=<path>, then run "
                        "`git korus-mail install --client codex` again")
    return path


def config_path() -> str:
    from git_korus_mail.clients.codex.hooksfile import codex_home
    return os.path.join(codex_home(), "config.toml")


class AppServer:
    """One `codex app-server` over stdio: initialize, then one request at a time."""

    def __init__(self, codex: str) -> None:
        import tempfile
        self._err = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._err, cwd=os.path.expanduser("~"))
        except OSError as exc:
            raise MailError(f"cannot run {codex} app-server: {exc.strerror}") from None
        self._buf = b""
        self._next = 0
        self.call("initialize", {"clientInfo": {"name": "git-korus-mail", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "initialized"})

    def _send(self, msg: "Dict[str, Any]") -> None:
        assert self.proc.stdin is not None  # Popen with stdin=PIPE
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def _line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None  # Popen with stdout=PIPE
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise MailError(f"codex app-server did not answer within {RPC_TIMEOUT} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                self._err.seek(0)
                tail = self._err.read().decode("utf-8", "replace").strip().splitlines()[-1:]
                raise MailError(f"codex app-server exited{': ' + tail[0] if tail else ''}")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def call(self, method: str, params: "Dict[str, Any]") -> "Json":
        self._next += 1
        self._send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        deadline = time.monotonic() + RPC_TIMEOUT
        while True:
            try:
                msg = json.loads(self._line(deadline))
            except ValueError:
                continue  # not a message of the protocol
            if isinstance(msg, dict) and msg.get("id") == self._next:
                if "error" in msg:
                    raise MailError(f"codex app-server: {method}: {msg['error'].get('message', msg['error'])}")
                return msg.get("result")

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self._err.close()

    def __enter__(self) -> "AppServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def our_hooks(server: AppServer, cwd: str, sources: "Sources",
              commands: "Collection[str]") -> "Dict[str, Dict[str, Any]]":
    """{command: hook record} for the hooks Codex lists at `cwd` whose command is one of ours,
    from one of the files in `sources` (a set of paths, or a test of a path). (In a linked worktree Codex 0.171.0 lists the main
    worktree's file: any of ours counts.)"""
    data = server.call("hooks/list", {"cwds": [cwd]}) or {}
    found: "Dict[str, Dict[str, Any]]" = {}
    for entry in data.get("data") or ():
        for hook in entry.get("hooks") or ():
            source = hook.get("sourcePath")
            if hook.get("command") in commands and (source in sources if isinstance(sources, (set, frozenset))
                                                    else sources(source)):
                found[hook["command"]] = hook
    return found


def _snapshot() -> "Tuple[Optional[bytes], Optional[int]]":
    """(bytes or None, mode or None) of the user's config.toml."""
    path = config_path()
    raw = wfiles.read_bytes(path)
    mode = None
    if raw is not None:
        mode = os.stat(path).st_mode & 0o7777
    return raw, mode


def _project_trusted(raw: "Optional[bytes]", project: str) -> bool:
    header = f'[projects."{project}"]'
    if raw is None:
        return False
    text = raw.decode("utf-8", "replace")
    at = text.find(header)
    if at < 0:
        return False
    body = text[at + len(header):].split("\n[", 1)[0]
    return any(line.replace(" ", "") == 'trust_level="trusted"' for line in body.splitlines())


WRITABLE_ROOTS = "sandbox_workspace_write.writable_roots"
TRUST_TURNS_ON = ("Codex then also applies that worktree's committed .codex/ files: config.toml "
                  "(sandbox_mode, approval_policy, mcp_servers commands it starts) and hooks.json")


def user_writable_roots(server: AppServer) -> "Optional[List[Any]]":
    """The user config's own `sandbox_workspace_write.writable_roots` (a list; None when unset):
    the user layer alone, so a managed or project layer's roots are never copied into it."""
    data = server.call("config/read", {"includeLayers": True}) or {}
    for layer in data.get("layers") or ():
        name = layer.get("name") or {}
        if name.get("type") == "user":
            roots = ((layer.get("config") or {}).get("sandbox_workspace_write") or {}).get("writable_roots")
            return list(roots) if isinstance(roots, list) else None
    return None


def trust(codex: str, targets: "Sequence[Tuple[str, bool]]", sources: "Sources", commands: "Collection[str]",
          rec: "Dict[str, Any]", out: "IO[str]", writable_root: "Optional[str]" = None,
          untrust_projects: bool = False) -> "List[Tuple[str, str]]":
    """Trust each project in `targets` ([(cwd, trust the project?)]) and exactly our hooks as
    Codex lists them there, then prove it through `hooks/list`. `writable_root`: the mail root,
    added to the sandbox's writable roots so the model's `send`, `ask` and `reply` can write in
    Codex's default sandbox (docs/CLIENTS.md, "Codex CLI: the sandbox"). `untrust_projects`:
    take back the project trust an earlier install gave (recorded as ours) that nobody chose.
    `rec` is the scope's record of the config. Returns [(cwd, problem)]."""
    raw, mode = _snapshot()
    if "config" not in rec:
        rec["config"] = {"path": config_path(), "original": None if raw is None else raw.decode("utf-8", "surrogateescape"),
                         "mode": mode, "keys": []}
    keys: "List[str]" = rec["config"]["keys"]
    problems: "List[Tuple[str, str]]" = []
    with AppServer(codex) as server:
        ours = [k for k in keys if k.startswith("projects.")] if untrust_projects else []
        if ours:
            server.call("config/batchWrite", {"edits": [{"keyPath": k, "value": None, "mergeStrategy": "replace"}
                                                        for k in ours]})
            for k in ours:
                keys.remove(k)
                out.write(f"codex config  {config_path()}  took back the trust of {k[len('projects.'):]} that an "
                          f"earlier install gave (only --trust-codex-config trusts a project)\n")
        projects = [cwd for cwd, project in targets if project and not _project_trusted(raw, cwd)]
        if projects:
            edits: "List[Dict[str, Any]]" = [{"keyPath": f'projects."{cwd}".trust_level', "value": "trusted", "mergeStrategy": "upsert"}
                     for cwd in projects]
            server.call("config/batchWrite", {"edits": edits})
            for cwd in projects:
                if f'projects."{cwd}"' not in keys:
                    keys.append(f'projects."{cwd}"')
                out.write(f"codex config  {config_path()}  trusted the project {cwd} (trust_level = \"trusted\"): "
                          f"{TRUST_TURNS_ON}\n")
        added_root = False
        if writable_root:
            roots = user_writable_roots(server)
            if writable_root not in (roots or ()):
                added_root = True
                server.call("config/batchWrite", {"edits": [{"keyPath": WRITABLE_ROOTS, "mergeStrategy": "upsert",
                                                             "value": (roots or []) + [writable_root]}]})
                rec["config"].setdefault("writable_root", writable_root)
                rec["config"].setdefault("roots_before", roots)
                out.write(f"codex config  {config_path()}  added {writable_root} to {WRITABLE_ROOTS}: the model's "
                          f"send, ask and reply can write the mail root in Codex's workspace-write sandbox\n")
        edits = []
        for cwd, _project in targets:
            for hook in our_hooks(server, cwd, sources, commands).values():
                key = f'hooks.state."{hook["key"]}"'
                if hook.get("trustStatus") != "trusted" and all(e["keyPath"] != key for e in edits):
                    edits.append({"keyPath": key, "value": {"trusted_hash": hook["currentHash"]},
                                  "mergeStrategy": "upsert"})
                    if key not in keys:
                        keys.append(key)
        if edits:
            server.call("config/batchWrite", {"edits": edits})
            out.write(f"codex config  {config_path()}  trusted {len(edits)} hook(s) of ours\n")
        if not projects and not edits and not added_root and not ours:
            out.write(f"codex config  {config_path()}  current\n")
        for cwd, _project in targets:
            problems += [(cwd, p) for p in verify_trust(server, cwd, sources, commands)]
    rec["config"]["after"] = (_snapshot()[0] or b"").decode("utf-8", "surrogateescape")
    return problems


def verify_trust(server: AppServer, cwd: str, sources: "Sources", commands: "Collection[str]") -> "List[str]":
    """[problems]: each of our commands must be listed by Codex at `cwd` and trusted."""
    found = our_hooks(server, cwd, sources, commands)
    problems: "List[str]" = []
    for command in commands:
        hook = found.get(command)
        if hook is None:
            problems.append(f"Codex does not load {command!r} at {cwd} (an untrusted project, or a hooks.json "
                            f"Codex cannot read): run `git korus-mail install --client codex` again")
        elif hook.get("trustStatus") != "trusted":
            problems.append(f"Codex reports {hook.get('key')} as {hook.get('trustStatus')}: it skips that hook "
                            f"silently; run `git korus-mail install --client codex`, or trust it in codex under /hooks")
    return problems


def untrust(rec: "Dict[str, Any]", out: "IO[str]") -> None:
    """Undo what trust() wrote in the user's config: its bytes when nothing else changed them,
    else only our keys (through the app-server)."""
    conf = rec.get("config")
    if not conf:
        return
    path = conf["path"]
    raw = wfiles.read_bytes(path)
    after = conf.get("after")
    original = conf.get("original")
    if raw is not None and after is not None and raw == after.encode("utf-8", "surrogateescape"):
        if original is None:
            os.unlink(path)
            out.write(f"codex config  {path}  removed (install created it)\n")
        else:
            wfiles.write_atomic(path, original.encode("utf-8", "surrogateescape"), conf.get("mode") or 0o600)
            os.chmod(path, conf.get("mode") or 0o600)
            out.write(f"codex config  {path}  restored\n")
        return
    if raw is None or not (conf.get("keys") or conf.get("writable_root")):
        return
    try:
        with AppServer(find_codex()) as server:
            edits: "List[Dict[str, Any]]" = [{"keyPath": k, "value": None, "mergeStrategy": "replace"}
                                             for k in conf.get("keys") or ()]
            ours = conf.get("writable_root")
            roots = user_writable_roots(server) if ours else None
            if ours and roots is not None and ours in roots:
                left = [r for r in roots if r != ours]
                # the key goes only when install made it and nothing else is in it now
                edits.append({"keyPath": WRITABLE_ROOTS, "mergeStrategy": "replace",
                              "value": None if not left and conf.get("roots_before") is None else left})
            if edits:
                server.call("config/batchWrite", {"edits": edits})
    except MailError as exc:
        out.write(f"codex config  {path}  changed since install; left our keys "
                  f"{', '.join(conf.get('keys') or [WRITABLE_ROOTS])}: {exc}\n")
        return
    out.write(f"codex config  {path}  changed since install: removed only our keys\n")
