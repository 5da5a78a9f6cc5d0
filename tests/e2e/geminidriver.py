"""Run the real `gemini` CLI (pinned by install-gemini.sh) offline against geminimock (stdlib only).

    gemini = Gemini(gemini_bin, mock, home)        # home: this test's HOME (~/.gemini written)
    run = gemini.run("prompt", cwd=worktree)        # gemini -p; run.session_id, run.response, run.stderr
    gemini.run("again", cwd=worktree, resume=run.session_id)

Offline (docs/CLIENTS.md, "Gemini CLI: offline"): GOOGLE_GEMINI_BASE_URL names the mock on
127.0.0.1 (Gemini accepts http only for localhost), GEMINI_API_KEY is a dummy, the auth type is
the API key's (`security.auth.selectedType`), GEMINI_CLI_NO_RELAUNCH keeps one node process
(the hooks' parent). The person's own choices are the test's to make, as a person would:
`trust` lists a folder in ~/.gemini/trustedFolders.json (Gemini runs no hook, and refuses a
headless run, in a folder nobody trusted).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

TIMEOUT = 120
MODEL = "gemini-2.5-flash"
_SCRUB = ("CLAUDE", "ANTHROPIC", "CODEX", "OPENAI", "GEMINI", "GOOGLE")


def find_gemini() -> tuple[str | None, str]:
    env = os.environ.get("KORUS_E2E_GEMINI")
    if env:
        return (env, "KORUS_E2E_GEMINI") if os.access(env, os.X_OK) else (None, f"KORUS_E2E_GEMINI={env} is not executable")
    cache = Path(os.environ.get("KORUS_E2E_CACHE") or Path.home() / ".cache" / "korus-mail-e2e") / "gemini"
    p = cache / "node_modules" / ".bin" / "gemini"
    if os.access(p, os.X_OK):
        return str(p), f"cache {cache}"
    return None, f"no gemini CLI (KORUS_E2E_GEMINI unset, nothing in {cache})"


@dataclass
class GeminiRun:
    argv: list
    rc: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict:
        try:
            out = json.loads(self.stdout)
        except ValueError:
            return {}
        return out if isinstance(out, dict) else {}

    @property
    def session_id(self) -> str | None:
        return self.data.get("session_id")

    @property
    def response(self) -> str | None:
        return self.data.get("response")

    def person_lines(self) -> list[str]:
        """What Gemini showed the person of our hooks (headless: stderr's hook system messages)."""
        return re.findall(r"^Hook system message: (.*)$", self.stderr, re.M)

    def check(self) -> "GeminiRun":
        assert self.rc == 0, f"gemini exited {self.rc}\n{self.argv}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"
        return self


class Gemini:
    def __init__(self, binary: str, mock, home: Path, path_prefix: str = ""):
        self.binary = binary
        self.mock = mock
        self.home = Path(home)
        (self.home / ".gemini").mkdir(parents=True, exist_ok=True)
        settings = self.home / ".gemini" / "settings.json"
        if not settings.exists():
            settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}, indent=2) + "\n")
        self.path_prefix = path_prefix
        self.procs: list[subprocess.Popen] = []

    def trust(self, *folders) -> None:
        """The person trusts these folders, as Gemini's own dialog would record it."""
        path = self.home / ".gemini" / "trustedFolders.json"
        rules = json.loads(path.read_text()) if path.exists() else {}
        rules.update({os.path.realpath(str(f)): "TRUST_FOLDER" for f in folders})
        path.write_text(json.dumps(rules, indent=2))

    def allow_mail_commands(self) -> None:
        """The person's line that lets the model run `git korus-mail` in Gemini's default approval
        mode (docs/CLIENTS.md, "Gemini CLI: the shell tool")."""
        path = self.home / ".gemini" / "settings.json"
        data = json.loads(path.read_text())
        data.setdefault("tools", {})["allowed"] = ["run_shell_command(git korus-mail)"]
        path.write_text(json.dumps(data, indent=2) + "\n")

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
        env.update(HOME=str(self.home), GEMINI_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=self.mock.base_url,
                   GEMINI_CLI_NO_RELAUNCH="true", NO_COLOR="1")
        if self.path_prefix:
            env["PATH"] = self.path_prefix + os.pathsep + env.get("PATH", "")
        return env

    def argv(self, prompt: str, resume: str | None = None, yolo: bool = False, extra: tuple = ()) -> list:
        argv = [self.binary, "-m", MODEL, "-o", "json", *(["--approval-mode", "yolo"] if yolo else []), *extra]
        if resume:
            argv += ["--resume", resume]
        return argv + ["-p", prompt]

    def run(self, prompt: str, cwd, resume: str | None = None, yolo: bool = False, extra: tuple = ()) -> GeminiRun:
        argv = self.argv(prompt, resume, yolo, extra)
        proc = subprocess.run(argv, cwd=str(cwd), env=self.env(), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=TIMEOUT)
        return GeminiRun(argv, proc.returncode, proc.stdout, proc.stderr)

    def start(self, prompt: str, cwd, resume: str | None = None, yolo: bool = False) -> subprocess.Popen:
        """A run as a process of its own (a test kills it, or waits for it)."""
        proc = subprocess.Popen(self.argv(prompt, resume, yolo), cwd=str(cwd), env=self.env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        self.procs.append(proc)
        return proc

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, 9)
                except OSError:
                    pass
                proc.wait()


def which_node() -> str | None:
    return shutil.which("node")
