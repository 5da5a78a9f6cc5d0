#!/usr/bin/env bash
# Install the pinned Claude Code CLI used by the e2e tests into a cache dir
# (only when it is missing) and print the absolute path of `claude` on stdout.
#
#   KORUS_E2E_CACHE   cache dir (default: $HOME/.cache/korus-mail-e2e)
#
# Only the npm registry is used. The package ships its native binary in a
# per-platform optional dependency, which its postinstall copies over the
# bin/claude.exe placeholder; optional dependencies must therefore stay on.
# Node < 22 prints an EBADENGINE warning; that is harmless.
set -euo pipefail

VERSION="2.1.332"
PKG="@anthropic-ai/claude-code@${VERSION}"
CACHE="${KORUS_E2E_CACHE:-${HOME}/.cache/korus-mail-e2e}"

die() { echo "install-claude.sh: $*" >&2; exit 1; }

mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd -P)"
BIN="${CACHE}/node_modules/.bin/claude"
PKGDIR="${CACHE}/node_modules/@anthropic-ai/claude-code"

works() {
    # The right version answers --version (the placeholder stub does not).
    [ -x "$BIN" ] || return 1
    local out
    out="$("$BIN" --version 2>/dev/null)" || return 1
    case "$out" in "${VERSION} "*|"${VERSION}") return 0 ;; esac
    return 1
}

if ! works; then
    command -v npm >/dev/null 2>&1 || die "npm not found (install Node.js first)"
    echo "install-claude.sh: installing ${PKG} into ${CACHE}" >&2
    # npm's output goes to stderr: stdout carries only the path.
    npm install --prefix "$CACHE" --no-audit --no-fund --include=optional \
        "$PKG" >&2 || die "npm install failed"
    if ! works && [ -f "${PKGDIR}/install.cjs" ]; then
        # An npm that skipped the postinstall: run it ourselves.
        echo "install-claude.sh: running the package's postinstall" >&2
        (cd "$PKGDIR" && node install.cjs) >&2 || true
    fi
    works || die "${BIN} does not run as Claude Code ${VERSION} after install"
fi

echo "$BIN"
