#!/usr/bin/env bash
# Install the pinned Gemini CLI used by the cross-client e2e tests into the e2e cache dir
# (only when it is missing) and print the absolute path of its `gemini` entry point.
#
#   KORUS_E2E_CACHE   cache dir (default: $HOME/.cache/korus-mail-e2e), shared with
#                     install-claude.sh and install-codex.sh; Gemini goes in its own prefix
#                     under it (gemini/), so one npm install never prunes another's tree.
#
# Only the npm registry is used. Install scripts are skipped: the only ones are the native
# builds of optional modules (keytar, node-pty) that an offline, headless run never loads.
# The entry point is a node script: the hooks' parent is that node process (docs/CLIENTS.md).
set -euo pipefail

VERSION="0.61.0"
PKG="@google/gemini-cli@${VERSION}"
CACHE="${KORUS_E2E_CACHE:-${HOME}/.cache/korus-mail-e2e}"

die() { echo "install-gemini.sh: $*" >&2; exit 1; }

mkdir -p "$CACHE/gemini"
PREFIX="$(cd "$CACHE/gemini" && pwd -P)"
BIN="${PREFIX}/node_modules/.bin/gemini"

works() {
    [ -x "$BIN" ] || return 1
    local out home
    # --version prints the bare version; no relaunch (a second node process), and a HOME of its
    # own: even --version writes ~/.gemini/projects.json
    home="$(mktemp -d)"
    out="$(GEMINI_CLI_NO_RELAUNCH=true HOME="$home" "$BIN" --version 2>/dev/null)" || out=
    rm -rf "$home"
    [ "$out" = "$VERSION" ]
}

if ! works; then
    command -v npm >/dev/null 2>&1 || die "npm not found (install Node.js first)"
    echo "install-gemini.sh: installing ${PKG} into ${PREFIX}" >&2
    npm install --prefix "$PREFIX" --no-audit --no-fund --ignore-scripts \
        "$PKG" >&2 || die "npm install failed"
    works || die "${BIN} does not run as Gemini CLI ${VERSION} after install"
fi

echo "$BIN"
