#!/usr/bin/env bash
# Type checks with mypy (in the test extra), run by tests/run.sh next to ruff and by
# tests/test_lint.py when pytest runs alone: the whole package, as pyproject.toml's [tool.mypy]
# configures it (for Python 3.9, the oldest we claim), with --strict. Every module is strict
# from its first commit: a new one with a function left unannotated fails here.
#
# The vocabulary the hints use (store/shapes.py, core/vocab.py, clients/interface.py) is read
# by mypy only: tests/test_vocab.py checks that nothing imports it at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
mypy=${MYPY:-.venv/bin/mypy}

echo "+ mypy --strict  (git_korus_mail, configured in pyproject.toml)" >&2
"$mypy" --strict
