#!/usr/bin/env bash
# Install the pinned Codex CLI used by the cross-client e2e tests into the e2e cache dir
# (only when it is missing) and print the absolute path of its native `codex` binary.
#
#   KORUS_E2E_CACHE   cache dir (default: $HOME/.cache/korus-mail-e2e), shared with
#                     install-claude.sh; Codex goes in its own prefix under it (codex/), so
#                     one npm install never prunes the other's tree.
#
# Only the npm registry is used. The package's native binary (static musl, about 424 MB
# with its helpers) comes in a per-platform optional dependency; nothing is downloaded at
# install time beyond the packages, and optional dependencies must stay on.
set -euo pipefail

VERSION="0.171.0"
PKG="@openai/codex@${VERSION}"
CACHE="${KORUS_E2E_CACHE:-${HOME}/.cache/korus-mail-e2e}"

die() { echo "install-codex.sh: $*" >&2; exit 1; }

mkdir -p "$CACHE/codex"
PREFIX="$(cd "$CACHE/codex" && pwd -P)"

native() {
    # The platform package's binary; the Node wrapper in .bin would add a node process
    # between Codex and its hooks.
    local triple
    case "$(uname -m)" in
        x86_64) triple=x86_64-unknown-linux-musl ;;
        aarch64|arm64) triple=aarch64-unknown-linux-musl ;;
        *) return 1 ;;
    esac
    ls -d "$PREFIX"/node_modules/@openai/codex-linux-*/vendor/"$triple"/bin/codex 2>/dev/null | head -n 1
}

works() {
    local bin out
    bin="$(native)" || return 1
    [ -n "$bin" ] && [ -x "$bin" ] || return 1
    out="$("$bin" --version 2>/dev/null)" || return 1
    case "$out" in *" ${VERSION}"|*" ${VERSION} "*) return 0 ;; esac
    return 1
}

if ! works; then
    command -v npm >/dev/null 2>&1 || die "npm not found (install Node.js first)"
    echo "install-codex.sh: installing ${PKG} into ${PREFIX}" >&2
    npm install --prefix "$PREFIX" --no-audit --no-fund --include=optional \
        "$PKG" >&2 || die "npm install failed"
    works || die "no native codex ${VERSION} under ${PREFIX} after install"
fi

native
