#!/usr/bin/env bash
# The whole test suite, from a fresh clone: a venv with the package and its test
# extras, the pinned Claude Code and Codex CLIs for the end-to-end tests, then pytest: the whole
# suite on the main Python (.venv), then everything but the e2e tests on every other
# CPython that requires-python claims (3.9-3.13), each in its own .venv-3.X.
# README's test command and .ci/run both call exactly this.
# KORUS_TEST_PYTHONS="3.9 3.13" narrows the matrix (locally; "" skips it).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'

# Shells and man tools for the completion and man-page tests, tmux for `read` on a real
# terminal (tests/test_read_terminal.py). Installed only where we may (CI, or root with
# apt); elsewhere those tests skip and say why.
if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  for tool in zsh fish groff man tmux; do command -v "$tool" >/dev/null || need+=("$tool"); done
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

# The real Codex CLI (pinned) for the cross-client e2e tests, cached beside Claude Code.
if codex_bin=$(bash tests/e2e/install-codex.sh); then
  export KORUS_E2E_CODEX="$codex_bin"
elif [ "${CI:-}" = true ]; then
  echo "tests/run.sh: could not install the Codex CLI" >&2
  exit 1
else
  echo "tests/run.sh: no Codex CLI (npm missing?); the Codex e2e tests will skip" >&2
fi

# Lint first, in the log: a name that no longer exists fails here, not at pytest start-up.
echo "+ ruff check ." >&2
.venv/bin/ruff check .
# Types, once, on the main Python (the commands and what is strict: tests/typecheck.sh).
bash tests/typecheck.sh

# Every CPython the package claims: the non-e2e suite on each other version (pyenv's, or
# python3.X on PATH). Missing one fails under CI=true; elsewhere it is skipped, and said.
find_python() {
  local v=$1 root newest
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  newest=$(ls -d "$root/versions/$v".* 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$newest" ] && [ -x "$newest/bin/python3" ]; then
    echo "$newest/bin/python3"
  else
    command -v "python$v" 2>/dev/null
  fi
}

main_version=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
status=0
summary=()
# -rs: every skip says why (a shell or tool missing here).
if .venv/bin/python -m pytest -p no:cacheprovider -rs "$@"; then
  summary+=("Python $main_version (.venv, whole suite): passed")
else
  status=1; summary+=("Python $main_version (.venv, whole suite): FAILED")
fi

for v in ${KORUS_TEST_PYTHONS-3.9 3.10 3.11 3.12 3.13}; do
  [ "$v" = "$main_version" ] && continue  # the full run above was on it
  if ! py=$(find_python "$v") || [ -z "$py" ]; then
    if [ "${CI:-}" = true ]; then
      echo "tests/run.sh: Python $v is missing; CI runs the suite on every supported version" >&2
      status=1; summary+=("Python $v: MISSING")
    else
      echo "tests/run.sh: no Python $v here; skipping its run (CI=true would fail)" >&2
      summary+=("Python $v: skipped (not installed here)")
    fi
    continue
  fi
  venv=.venv-$v
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e '.[test]'
  echo "tests/run.sh: Python $v ($py), without the e2e tests" >&2
  if "$venv/bin/python" -m pytest -p no:cacheprovider -rs -m "not e2e" --ignore=tests/e2e "$@"; then
    summary+=("Python $v ($venv, without e2e): passed")
  else
    status=1; summary+=("Python $v ($venv, without e2e): FAILED")
  fi
done
printf 'tests/run.sh: %s\n' "${summary[@]}" >&2
exit "$status"
