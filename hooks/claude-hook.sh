#!/bin/sh
# git-korus-mail claude-hook template-version=2
# Written by `git korus-mail install` into <git-common-dir>/mail/hooks/ and removed by
# `git korus-mail uninstall`. Do not edit: install rewrites a stub that differs.
#
# Claude Code runs it as   '<this file>' <EventName> [--repo '<clone>']
# with the hook payload (JSON) on stdin; the drain reads the payload, so stdin is
# handed over untouched by exec.

# The git-korus-mail that ran install, by absolute path: an editor extension's PATH
# often lacks pipx's bin dir, so PATH is only the fallback.
helper=@HELPER@
# The fault text as a JSON string literal, escaped by install whatever the path holds.
fault=@FAULT_JSON@

event=${1-}
[ $# -gt 0 ] && shift

if [ -f "$helper" ] && [ -x "$helper" ]; then
    exec "$helper" drain "$@"
fi
if command -v git-korus-mail >/dev/null 2>&1; then
    exec git-korus-mail drain "$@"
fi

# Neither exists: say so in the event's own JSON form, or Claude Code shows nothing
# and mail silently stops. Exit 0: on another code the output would be dropped.
[ -t 0 ] || cat >/dev/null 2>&1
# Said where a reader decides, as the drain reports its own faults: at SessionStart (to
# the model and the user) and at Stop (to the user). Repeating it at every prompt and
# tool call would flood both.
case "$event" in
    SessionStart)
        printf '{"systemMessage": %s, "hookSpecificOutput": {"hookEventName": "%s", "additionalContext": %s}}\n' \
            "$fault" "$event" "$fault"
        ;;
    Stop)
        printf '{"systemMessage": %s}\n' "$fault"
        ;;
esac
exit 0
