"""Run the real `codex` CLI (pinned by install-codex.sh) offline against codexmock (stdlib only).

    codex = Codex(codex_bin, mock, home)        # home: this test's CODEX_HOME (config.toml written)
    run = codex.run("prompt", cwd=worktree)      # codex exec; run.session_id, run.stdout, run.stderr
    codex.run("again", cwd=worktree, resume=run.session_id)

The config keeps every run offline: the mock as the only model provider, plugins off (else
Codex looks up github.com and chatgpt.com), no update check, no analytics
(docs/CLIENTS.md, "Codex CLI: offline"). With `trace=True` the run is traced with strace
(connect calls of every thread and child), so a test can assert that Codex connected to
nothing but the mock.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

TIMEOUT = 90
_SCRUB = ("CLAUDE", "ANTHROPIC", "CODEX", "OPENAI", "KORUS_MAIL_CODEX")

CONFIG = """\
model = "mock-model"
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "{base_url}"
wire_api = "responses"
env_key = "MOCK_API_KEY"

[analytics]
enabled = false

[features]
plugins = false
"""


def find_codex() -> tuple[str | None, str]:
    env = os.environ.get("KORUS_E2E_CODEX")
    if env:
        return (env, "KORUS_E2E_CODEX") if os.access(env, os.X_OK) else (None, f"KORUS_E2E_CODEX={env} is not executable")
    cache = Path(os.environ.get("KORUS_E2E_CACHE") or Path.home() / ".cache" / "korus-mail-e2e") / "codex"
    for p in sorted(cache.glob("node_modules/@openai/codex-linux-*/vendor/*/bin/codex")):
        if os.access(p, os.X_OK):
            return str(p), f"cache {cache}"
    return None, f"no codex CLI (KORUS_E2E_CODEX unset, nothing in {cache})"


@dataclass
class CodexRun:
    argv: list
    rc: int
    stdout: str
    stderr: str
    trace: str = ""

    @property
    def session_id(self) -> str | None:
        m = re.search(r"^session id: (\S+)$", self.stderr + "\n" + self.stdout, re.M)
        return m.group(1) if m else None

    def check(self) -> "CodexRun":
        assert self.rc == 0, f"codex exited {self.rc}\n{self.argv}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"
        return self

    def inet_peers(self) -> set[str]:
        """Every inet address:port a traced run connected to (AF_INET and AF_INET6, TCP or UDP,
        so a DNS lookup counts too)."""
        out = set()
        for line in self.trace.splitlines():
            if "connect(" not in line or "sa_family=AF_INET" not in line:
                continue
            port = re.search(r"sin6?_port=htons\((\d+)\)", line)
            addr = re.search(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', line)
            out.add(f"{(addr.group(1) or addr.group(2)) if addr else '?'}:{port.group(1) if port else '?'}")
        return out


class Codex:
    def __init__(self, binary: str, mock, home: Path, path_prefix: str = ""):
        self.binary = binary
        self.mock = mock
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        config = self.home / "config.toml"
        if not config.exists():
            config.write_text(CONFIG.format(base_url=mock.base_url))
        self.path_prefix = path_prefix

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
        env.update(CODEX_HOME=str(self.home), MOCK_API_KEY="mock-key", NO_COLOR="1")
        if self.path_prefix:
            env["PATH"] = self.path_prefix + os.pathsep + env.get("PATH", "")
        return env

    def run(self, prompt: str, cwd, resume: str | None = None, sandbox: str | None = "danger-full-access",
            trace: bool = False, extra: tuple = ()) -> CodexRun:
        # sandbox=None: no -s at all, Codex's own default (read-only in an untrusted project,
        # workspace-write in a trusted one)
        argv = [self.binary, "exec", *(["-s", sandbox] if sandbox else []), *extra]
        if resume:
            argv += ["resume", resume]
        argv.append(prompt)
        trace_file = None
        if trace:
            trace_file = self.home / f"strace-{time.time_ns()}.txt"
            argv = [shutil.which("strace"), "-f", "-qq", "-e", "trace=connect", "-o", str(trace_file), *argv]
        proc = subprocess.run(argv, cwd=str(cwd), env=self.env(), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=TIMEOUT)
        traced = trace_file.read_text() if trace_file is not None and trace_file.exists() else ""
        return CodexRun(argv, proc.returncode, proc.stdout, proc.stderr, traced)
