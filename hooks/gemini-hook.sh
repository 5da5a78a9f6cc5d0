#!/bin/sh
# git-korus-mail gemini-hook template-version=2
# Written by `git korus-mail install` into <git-common-dir>/mail/hooks/ and removed by
# `git korus-mail uninstall`. Do not edit: install rewrites a stub that differs.
#
# Gemini CLI runs it as   '<this file>' <EventName> [--repo '<clone>']
# with the hook payload (JSON) on stdin, which the helper inherits untouched.
#
# Why the helper is run and not exec'd: when it cannot run (its venv's interpreter is gone
# after a Python upgrade: exit 127; its package cannot be imported: a traceback, exit 1),
# Gemini would show the model and the user nothing. So its answer is captured with
# its exit status: a good answer is passed on unchanged, a failure becomes our own fault
# report in the event's form (docs/HOOKS.md, "The stub"). One fork and builtins only on
# the good path; the failure path may spend a few processes to say what went wrong.

# The git-korus-mail that ran install, by absolute path: an editor extension's PATH
# often lacks pipx's bin dir, so PATH is only the fallback.
helper=@HELPER@
# Each value below is the inside of a JSON string literal (escaped by install).
helper_json=@HELPER_JSON@
advice_json=@ADVICE_JSON@
# The helper's interpreter, and where it finds this package and its libraries (both as install
# found them): the drain is started as `python -S`, skipping site.py's start-up work, while the
# helper's #! line still names that interpreter (docs/HOOKS.md, "Starting Python").
python=@PYTHON@
pypath=@PYPATH@
FAST_START="# git-korus-mail fast-start=1"  # the helper's second line when its script has that start

event=${1-}
[ $# -gt 0 ] && shift

run=
if [ -f "$helper" ] && [ -x "$helper" ]; then
    run=$helper
else
    # the fallback, by path: a fault report names it and reads its #! line
    run=$(command -v git-korus-mail 2>/dev/null) || run=
fi

if [ -n "$run" ]; then
    first= second=
    if [ "$run" = "$helper" ] && [ -n "$pypath" ]; then
        { IFS= read -r first && IFS= read -r second; } <"$run" 2>/dev/null || first=
    fi
    if [ "$first" = "#!$python" ] && [ "$second" = "$FAST_START" ] && [ -x "$python" ]; then
        answer=$(KORUS_MAIL_PYPATH=$pypath "$python" -S "$run" drain --client=gemini "$@")
    else
        answer=$("$run" drain --client=gemini "$@")
    fi
    status=$?
    if [ "$status" -eq 0 ] || [ -n "$answer" ]; then
        # The drain's answer, even from a run that died later (it is written before the
        # display markers, and they may exist): dropping it would hide shown mail.
        [ -z "$answer" ] || printf '%s\n' "$answer"
        exit 0
    fi
else
    status=
    [ -t 0 ] || cat >/dev/null 2>&1
fi

# The helper failed and said nothing: say why, in printable ASCII without quotes or
# backslashes, so it can sit inside a JSON string as it is.
killed=
clean() { printf '%s' "$1" | LC_ALL=C tr -cd ' -~' | tr -d '"\\' | cut -c1-300; }
if [ -z "$run" ]; then
    why="helper not found (was $helper_json; no git-korus-mail on PATH either)"
else
    why="$(clean "$run") drain exited $status"
    first=
    IFS= read -r first <"$run" 2>/dev/null
    interp=${first#\#!}
    interp=${interp%% *}
    if [ "$status" -eq 127 ] && [ "$interp" != "$first" ] && [ ! -x "$interp" ]; then
        why="$why: its Python interpreter $(clean "$interp") is gone (a Python upgrade removes a venv's base)"
    elif [ "$status" -gt 128 ] && [ "$status" -lt 160 ] && "$run" --version </dev/null >/dev/null 2>&1; then
        # Killed by a signal (137: SIGKILL, from the OOM killer or a time limit) while the
        # helper itself runs: no broken install, and reinstalling would change nothing. The
        # drain's moves are crash-safe, so the mail stays queued for the next event.
        killed="$why: killed by signal $((status - 128)) (out of memory, or a time limit), not a broken install"
    else
        detail=$("$run" --version </dev/null 2>&1 | tail -n 1)
        [ -z "$detail" ] || why="$why: $(clean "$detail")"
    fi
fi
if [ -n "$killed" ]; then
    fault="git korus-mail: $killed; the mail stays queued and is shown at a later event"
else
    fault="git korus-mail: $why; mail is not being delivered. Fix: $advice_json"
fi

# Exit 0: on another code Gemini would drop the output. Said where a reader decides,
# as the drain reports its own faults: at SessionStart (to the model and the user) and at
# AfterAgent (to the user). Repeating it at every prompt and tool call would flood both.
case "$event" in
    SessionStart)
        printf '{"systemMessage": "%s", "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "%s"}}\n' \
            "$fault" "$fault"
        ;;
    AfterAgent)
        printf '{"systemMessage": "%s"}\n' "$fault"
        ;;
esac
exit 0
