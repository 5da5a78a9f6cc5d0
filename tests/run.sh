#!/usr/bin/env bash
# The whole test suite, from a fresh clone: a venv with the package and its test
# extras, the pinned Claude Code CLI for the end-to-end tests, then pytest.
# README's test command and .ci/run both call exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'

# Shells and man tools for the completion and man-page tests. Installed only where we
# may (CI, or root with apt); elsewhere those tests skip and say why.
if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  for tool in zsh fish groff man; do command -v "$tool" >/dev/null || need+=("$tool"); done
  [ -f /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
  if [ ${#need[@]} -gt 0 ]; then
    pkgs=()
    for t in "${need[@]}"; do
      case $t in groff) pkgs+=(groff-base) ;; man) pkgs+=(man-db) ;; *) pkgs+=("$t") ;; esac
    done
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  fi
fi

# The real Claude Code CLI (pinned) for tests/e2e. With CI=true it must be there: the
# e2e tests fail rather than skip without it.
if claude_bin=$(bash tests/e2e/install-claude.sh); then
  export KORUS_E2E_CLAUDE="$claude_bin"
elif [ "${CI:-}" = true ]; then
  echo "tests/run.sh: could not install the Claude Code CLI" >&2
  exit 1
else
  echo "tests/run.sh: no Claude Code CLI (npm missing?); the e2e tests will skip" >&2
fi

# Lint first, in the log: a name that no longer exists fails here, not at pytest start-up.
echo "+ ruff check ." >&2
.venv/bin/ruff check .

# -rs: every skip says why (a shell or tool missing here).
exec .venv/bin/python -m pytest -p no:cacheprovider -rs "$@"
