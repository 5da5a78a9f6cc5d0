#!/usr/bin/env bash
# The whole test suite, from a fresh clone. README's test command and .ci/run both call exactly
# this. The tiers (what runs on which CPython, and why) are in docs/TESTING.md:
#   - the main Python (.venv): every test, the end-to-end ones with the real CLIs included;
#   - every other CPython that requires-python claims (3.9-3.13), each in its own .venv-3.X:
#     every test but the `e2e`, `slow` and `once` tiers, which cannot break on one CPython and
#     not another (docs/TESTING.md says why for each).
# It ends with a table of each stage's minutes, so that every run shows the budget (CI: 90 min).
#
# KORUS_TEST_PYTHONS="3.9 3.13" narrows the matrix (locally; "" skips it).
# KORUS_TEST_WORKERS=N sets pytest-xdist's workers (default: twice the cores, since most tests
# wait on the processes they start; 0 runs in one process).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
workers=${KORUS_TEST_WORKERS:-$(( $(nproc) * 2 ))}
xdist=()
[ "$workers" -gt 0 ] && xdist=(-n "$workers")

# ---- the stage table -------------------------------------------------------------------------
stage_rows=()
run_start=$SECONDS
stage_start=0
stage_name=""
begin() { stage_name=$1; stage_start=$SECONDS; echo "tests/run.sh: --- $stage_name" >&2; }
end() {  # end RESULT
  local s=$(( SECONDS - stage_start ))
  stage_rows+=("$(printf '%-46s %6d:%02d  %s' "$stage_name" $((s / 60)) $((s % 60)) "$1")")
  stage_name=""
}
table() {
  local rc=$?
  [ -n "$stage_name" ] && end "INTERRUPTED (exit $rc)"
  local s=$(( SECONDS - run_start ))
  {
    echo
    printf '%-46s %9s  %s\n' "stage" "min:sec" "result"
    printf '%s\n' "${stage_rows[@]}"
    printf '%-46s %6d:%02d\n' "total" $((s / 60)) $((s % 60))
  } >&2
}
trap table EXIT

# ---- install ---------------------------------------------------------------------------------
# Bytecode: every test starts the product as fresh processes, and this environment may set
# PYTHONDONTWRITEBYTECODE, so an editable install would compile the package again in every one
# of them (a third of the suite's time). Compile once after install, as pip does for a wheel;
# PYTHONDONTWRITEBYTECODE only stops writing, never reading.
install_venv() {  # install_venv VENV PYTHON
  [ -x "$1/bin/python" ] || "$2" -m venv "$1"
  "$1/bin/python" -m pip install -q --disable-pip-version-check -e '.[test]'
  "$1/bin/python" -m compileall -q git_korus_mail tests bench >/dev/null
}

begin "install (.venv, test extras, bytecode)"
install_venv .venv "$python"
end ok

# Shells and man tools for the completion and man-page tests, tmux for `read` on a real
# terminal, strace and faketime for the store's deterministic race and clock tests. Installed
# only where we may (CI, or root with apt); elsewhere those tests skip and say why.
begin "system tools (apt, when missing)"
if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  for tool in zsh fish groff man tmux strace faketime; do command -v "$tool" >/dev/null || need+=("$tool"); done
  [ -f /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
  if [ ${#need[@]} -gt 0 ]; then
    pkgs=()
    for t in "${need[@]}"; do
      case $t in groff) pkgs+=(groff-base) ;; man) pkgs+=(man-db) ;; *) pkgs+=("$t") ;; esac
    done
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  fi
  end "ok (${#need[@]} installed)"
else
  end "skipped (not CI as root)"
fi

# The real Claude Code and Codex CLIs (pinned) for tests/e2e, cached in ~/.cache/korus-mail-e2e:
# a machine that kept its cache installs nothing. With CI=true they must be there: the e2e
# tests fail rather than skip without them.
begin "pinned CLIs (Claude Code, Codex, Gemini; cached)"
if claude_bin=$(bash tests/e2e/install-claude.sh); then
  export KORUS_E2E_CLAUDE="$claude_bin"
elif [ "${CI:-}" = true ]; then
  echo "tests/run.sh: could not install the Claude Code CLI" >&2
  exit 1
else
  echo "tests/run.sh: no Claude Code CLI (npm missing?); the e2e tests will skip" >&2
fi
if codex_bin=$(bash tests/e2e/install-codex.sh); then
  export KORUS_E2E_CODEX="$codex_bin"
elif [ "${CI:-}" = true ]; then
  echo "tests/run.sh: could not install the Codex CLI" >&2
  exit 1
else
  echo "tests/run.sh: no Codex CLI (npm missing?); the Codex e2e tests will skip" >&2
fi
if gemini_bin=$(bash tests/e2e/install-gemini.sh); then
  export KORUS_E2E_GEMINI="$gemini_bin"
elif [ "${CI:-}" = true ]; then
  echo "tests/run.sh: could not install the Gemini CLI" >&2
  exit 1
else
  echo "tests/run.sh: no Gemini CLI (npm missing?); the Gemini e2e tests will skip" >&2
fi
end ok

# ---- lint and types, once --------------------------------------------------------------------
# First, in the log: a name that no longer exists fails here, not at pytest start-up. Their
# result does not depend on the interpreter running pytest, so the `once` tests that repeat them
# (tests/test_lint.py) know from KORUS_LINT_RAN that this run already did.
begin "lint (ruff)"
echo "+ ruff check ." >&2
.venv/bin/ruff check .
end ok
begin "types (mypy --strict)"
bash tests/typecheck.sh
end ok
export KORUS_LINT_RAN=1

# ---- the suite on every CPython --------------------------------------------------------------
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
# -rs: every skip says why (a shell or tool missing here).
begin "Python $main_version: every test (e2e, slow, once)"
if .venv/bin/python -m pytest -p no:cacheprovider -rs "${xdist[@]}" "$@"; then
  end passed
else
  status=1; end FAILED
fi

for v in ${KORUS_TEST_PYTHONS-3.9 3.10 3.11 3.12 3.13}; do
  [ "$v" = "$main_version" ] && continue  # the full run above was on it
  if ! py=$(find_python "$v") || [ -z "$py" ]; then
    begin "Python $v"
    if [ "${CI:-}" = true ]; then
      echo "tests/run.sh: Python $v is missing; CI runs the suite on every supported version" >&2
      status=1; end MISSING
    else
      echo "tests/run.sh: no Python $v here; skipping its run (CI=true would fail)" >&2
      end "skipped (not installed here)"
    fi
    continue
  fi
  begin "Python $v: install .venv-$v"
  install_venv ".venv-$v" "$py"
  end ok
  begin "Python $v: all but e2e, slow, once"
  echo "tests/run.sh: Python $v ($py), without the e2e, slow and once tiers" >&2
  if ".venv-$v/bin/python" -m pytest -p no:cacheprovider -rs "${xdist[@]}" \
      -m "not e2e and not slow and not once" --ignore=tests/e2e "$@"; then
    end passed
  else
    status=1; end FAILED
  fi
done
exit "$status"
