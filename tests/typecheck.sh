#!/usr/bin/env bash
# Type checks with mypy (in the test extra), run by tests/run.sh next to ruff and by
# tests/test_lint.py when pytest runs alone. Two passes:
#   1. the whole package, as pyproject.toml's [tool.mypy] configures it (for Python 3.9,
#      the oldest we claim; functions without hints are not checked inside yet);
#   2. --strict on the modules whose hints are complete: core/ entire, and store/ module by
#      module until it is entire too; a package joins the list when it passes.
set -euo pipefail
cd "$(dirname "$0")/.."
mypy=${MYPY:-.venv/bin/mypy}

strict=(
  # leaf utilities: every layer imports them, so strict callers need them typed first
  git_korus_mail/errors.py git_korus_mail/fastjson.py git_korus_mail/stamps.py git_korus_mail/crash.py
  git_korus_mail/ui.py git_korus_mail/shell.py git_korus_mail/shipped.py
  # the store and the core, each as a whole: a new module there is strict from its first commit
  git_korus_mail/store/ git_korus_mail/core/
)

echo "+ mypy  (git_korus_mail, configured in pyproject.toml)" >&2
"$mypy"
echo "+ mypy --strict ${strict[*]}" >&2
"$mypy" --strict "${strict[@]}"
