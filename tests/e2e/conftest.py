"""Fixtures for the end-to-end tests that run the real Claude Code CLI.

Self-contained: relies on no top-level conftest. The CLI is found by
``claude_bin`` (env KORUS_E2E_CLAUDE, then the cache install made by
``tests/e2e/install-claude.sh``, then PATH). Without it the e2e tests are
skipped, except under CI=true, where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # so test modules can `import driver, mockapi` in any import mode
    sys.path.insert(0, str(HERE))

from driver import Claude  # noqa: E402
from mockapi import MockAPI  # noqa: E402

INSTALLER = HERE / "install-claude.sh"


def _pinned_version() -> str:
    """The version install-claude.sh pins (its VERSION= line): one place says it."""
    for line in INSTALLER.read_text(encoding="utf-8").splitlines():
        if line.startswith("VERSION="):
            return line.split("=", 1)[1].strip().strip('"\'')
    raise RuntimeError(f"{INSTALLER} has no VERSION= line")


PINNED_VERSION = _pinned_version()
INSTALL_HINT = f"install it with: export KORUS_E2E_CLAUDE=$(bash {INSTALLER.relative_to(HERE.parent.parent)})"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: end-to-end test that runs the real claude CLI against a mock API")


def _cache_dir() -> Path:
    return Path(os.environ.get("KORUS_E2E_CACHE") or Path.home() / ".cache" / "korus-mail-e2e")


def find_claude() -> tuple[str | None, str]:
    """(path or None, how it was found / why not)."""
    env = os.environ.get("KORUS_E2E_CLAUDE")
    if env:
        p = Path(env)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p.resolve()), "KORUS_E2E_CLAUDE"
        return None, f"KORUS_E2E_CLAUDE={env} is not an executable file"
    cached = _cache_dir() / "node_modules" / ".bin" / "claude"
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached), f"cache {_cache_dir()}"
    on_path = shutil.which("claude")
    if on_path:
        return on_path, "PATH"
    return None, f"no claude CLI (KORUS_E2E_CLAUDE unset, nothing in {_cache_dir()}, none on PATH)"


_PROBES: dict[str, tuple[bool, str]] = {}


def _probe(path: str) -> tuple[bool, str]:
    """(runs, `claude --version` output or the error)."""
    if path not in _PROBES:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
            text = (out.stdout or out.stderr).strip()
            _PROBES[path] = (out.returncode == 0, text or f"rc {out.returncode}")
        except (OSError, subprocess.TimeoutExpired) as e:
            _PROBES[path] = (False, str(e))
    return _PROBES[path]


def pytest_report_header(config: pytest.Config) -> str:
    path, how = find_claude()
    if not path:
        return f"e2e claude: none ({how})"
    ok, text = _probe(path)
    note = "" if text.startswith(PINNED_VERSION) else f" [expected {PINNED_VERSION}]"
    return f"e2e claude: {path} ({how}): {text if ok else 'does not run: ' + text}{note}"


@pytest.fixture(scope="session")
def claude_bin() -> str:
    path, how = find_claude()
    ci = os.environ.get("CI", "").lower() == "true"
    ok, text = _probe(path) if path else (False, "")
    if not ok:
        why = how if path is None else f"{path} does not run: {text}"
        if ci:
            pytest.fail(f"e2e: claude CLI missing under CI=true: {why}; {INSTALL_HINT}", pytrace=False)
        pytest.skip(f"e2e: {why}; {INSTALL_HINT}")
    return path


@pytest.fixture
def mockapi(tmp_path: Path):
    """A started MockAPI (empty script) logging to tmp_path/mockapi.jsonl."""
    api = MockAPI(log_path=str(tmp_path / "mockapi.jsonl")).start()
    yield api
    api.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory for claude to run in (not a git repo)."""
    p = tmp_path / "proj"
    p.mkdir()
    return p


@pytest.fixture
def claude(claude_bin: str, mockapi: MockAPI, tmp_path: Path):
    """A driver.Claude runner bound to this test's mock API and its own
    CLAUDE_CONFIG_DIR (tmp_path/claude-config). Kills leftovers at teardown."""
    runner = Claude(claude_bin, mockapi, tmp_path / "claude-config", skip_permissions=True)
    yield runner
    runner.cleanup()


# ---- assertions about what reached the model


def assert_model_saw(api: MockAPI, needle: str, kind: str | None = "agent", role: str | None = None) -> list:
    """Assert ``needle`` occurs in some logged request body (raw JSON text, or
    its decoded strings, so escapes cannot hide it). With ``role``, it must be
    in a message of that role ("system" is where most hook text arrives).
    Returns the matching requests."""
    hits = api.find(needle, kind=kind)
    if role is not None:
        hits = [r for r in hits if any(needle in t for t in r.texts(role))]
    assert hits, (f"{needle!r} reached no {kind or 'logged'} request"
                  f"{' in a ' + role + ' message' if role else ''}; requests:\n{api.summary()}")
    return hits


def assert_model_never_saw(api: MockAPI, needle: str, kind: str | None = None) -> None:
    hits = api.find(needle, kind=kind)
    assert not hits, f"{needle!r} unexpectedly reached requests {[r.seq for r in hits]}:\n{api.summary()}"


@pytest.fixture
def model_saw():
    """The assert_model_saw helper, as a fixture (tests need not import conftest)."""
    return assert_model_saw


@pytest.fixture
def model_never_saw():
    return assert_model_never_saw


# ---- the Codex CLI (tests/e2e/install-codex.sh), for the cross-client tests


@pytest.fixture(scope="session")
def codex_bin() -> str:
    from codexdriver import find_codex
    path, how = find_codex()
    ok, text = _probe(path) if path else (False, "")
    if not ok:
        why = how if path is None else f"{path} does not run: {text}"
        hint = "install it with: export KORUS_E2E_CODEX=$(bash tests/e2e/install-codex.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"e2e: codex CLI missing under CI=true: {why}; {hint}", pytrace=False)
        pytest.skip(f"e2e: {why}; {hint}")
    return path


OUTSIDE = "/var/tmp"  # not /tmp, not $TMPDIR: none of the roots Codex's default sandbox makes writable


@pytest.fixture
def outside(request: pytest.FixtureRequest):
    """A fresh directory outside every writable root of Codex's default sandbox, for a clone
    that only the mail root install adds to writable_roots may write in (the guide: the clone
    outside every writable root, not under /tmp)."""
    import tempfile
    if not os.access(OUTSIDE, os.W_OK):
        pytest.skip(f"{OUTSIDE} is not writable here")
    base = Path(tempfile.mkdtemp(prefix=f"korus-{request.module.__name__}-", dir=OUTSIDE))
    tmpdir = os.environ.get("TMPDIR")
    assert not str(base).startswith("/tmp/") and not (tmpdir and str(base).startswith(tmpdir))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def codexmock():
    from codexmock import ResponsesMock
    mock = ResponsesMock()
    yield mock
    mock.stop()


# ---- the Gemini CLI (tests/e2e/install-gemini.sh), for the cross-client tests


@pytest.fixture(scope="session")
def gemini_bin() -> str:
    from geminidriver import find_gemini
    path, how = find_gemini()
    ok, text = False, ""
    if path:
        import tempfile
        with tempfile.TemporaryDirectory() as home:  # even --version writes ~/.gemini/projects.json
            try:
                out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60,
                                     stdin=subprocess.DEVNULL,
                                     env=dict(os.environ, HOME=home, GEMINI_CLI_NO_RELAUNCH="true"))
                ok, text = out.returncode == 0, (out.stdout or out.stderr).strip()
            except (OSError, subprocess.TimeoutExpired) as e:
                text = str(e)
    if not ok:
        why = how if path is None else f"{path} does not run: {text}"
        hint = "install it with: export KORUS_E2E_GEMINI=$(bash tests/e2e/install-gemini.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"e2e: gemini CLI missing under CI=true: {why}; {hint}", pytrace=False)
        pytest.skip(f"e2e: {why}; {hint}")
    return path


@pytest.fixture
def geminimock():
    from geminimock import GeminiMock
    mock = GeminiMock()
    yield mock
    mock.stop()
