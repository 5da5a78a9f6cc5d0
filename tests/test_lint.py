"""The checks that catch what the tests themselves cannot: names that no longer exist.

`tests/e2e/conftest.py` once named two constants that had been removed; every e2e
test then died at start-up and nothing said why. ruff (F, B) is in the test extra and
in tests/run.sh before pytest; this test keeps it honest when pytest is run alone.

The ruff and mypy checks are the `once` tier (docs/TESTING.md): they run the .venv's tools, so
their result is the same whichever CPython runs pytest. tests/run.sh runs them as its own lint and
types stages first and says so with KORUS_LINT_RAN=1; then they are not run a second time.
"""

import os
import shutil
import subprocess
import sys

import pytest

from helpers import REPO_ROOT


def _not_run_already(what):
    if os.environ.get("KORUS_LINT_RAN") == "1":
        pytest.skip(f"{what} ran as tests/run.sh's own stage in this run")


def _ruff():
    exe = shutil.which("ruff", path=str(REPO_ROOT / ".venv" / "bin")) or shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff is not installed (it is in the test extra: pip install -e '.[test]')")
    return exe


@pytest.mark.once
def test_ruff_finds_nothing():
    _not_run_already("ruff")
    proc = subprocess.run([_ruff(), "check", "--select", "F,B", "--output-format", "concise", "."],
                          cwd=REPO_ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_e2e_report_header_runs(tmp_path):
    # the report header runs at start-up when pytest is rooted in tests/e2e: a NameError there kills
    # every e2e test. A stand-in CLI that answers --version is enough to reach the version check.
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '0.0.1 (Claude Code)'\n")
    fake.chmod(0o755)
    code = ("import sys; sys.path.insert(0, 'tests/e2e'); import conftest; "
            "print(conftest.pytest_report_header(None))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          env=dict(os.environ, KORUS_E2E_CLAUDE=str(fake)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "0.0.1 (Claude Code) [expected 2.1.332]" in proc.stdout, proc.stdout


def test_e2e_skip_says_how_to_install(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["KORUS_E2E_CLAUDE"] = str(tmp_path / "no-such-claude")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                           "tests/e2e/test_scenarios.py::test_helper_missing_is_not_silent"],
                          cwd=REPO_ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1 skipped" in proc.stdout and "tests/e2e/install-claude.sh" in proc.stdout, proc.stdout[-2000:]


def test_ci_runs_ruff_before_pytest():
    script = (REPO_ROOT / "tests" / "run.sh").read_text()
    assert "ruff check" in script
    assert script.index("ruff check") < script.index("-m pytest")


@pytest.mark.once
def test_types_check():
    _not_run_already("mypy (tests/typecheck.sh)")
    # tests/typecheck.sh is what tests/run.sh runs: the whole package, --strict
    exe = shutil.which("mypy", path=str(REPO_ROOT / ".venv" / "bin")) or shutil.which("mypy")
    if exe is None:
        pytest.skip("mypy is not installed (it is in the test extra: pip install -e '.[test]')")
    proc = subprocess.run(["bash", "tests/typecheck.sh"], cwd=REPO_ROOT, capture_output=True, text=True,
                          env=dict(os.environ, MYPY=exe))
    assert proc.returncode == 0, proc.stdout + proc.stderr
