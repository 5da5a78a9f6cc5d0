#!/bin/sh
# git-korus-mail hook stub, ID: @ID@
# Written by `git korus-mail install` into <git-common-dir>/mail/hooks/<client>-hook, one for
# each client, from one template (hooks/hook.sh); removed by `git korus-mail uninstall`. Do not
# edit: install rewrites a stub that differs. The ID names this template's text outside the
# block of values below (wiring/stub.py recognises the stubs of older templates by their IDs).
#
# The client runs it as   '<this file>' <EventName> [--repo '<clone>']
# with the hook payload (JSON) on stdin, which the helper inherits untouched.
#
# Why the helper is run and not exec'd: when it cannot run (its venv's interpreter is gone
# after a Python upgrade: exit 127; its package cannot be imported: a traceback, exit 1),
# the client would show the model and the user nothing. So its answer is captured with
# its exit status: a good answer is passed on unchanged, a failure becomes our own fault
# report in the event's form (docs/HOOKS.md, "The stub"). One fork and builtins only on
# the good path; the failure path may spend a few processes to say what went wrong.

# The values, quoted by install (wiring/stub.py `render`), the only part that differs between
# clients: `client` (the drain's --client), `helper` (the git-korus-mail that ran install, by
# absolute path: an editor extension's PATH often lacks pipx's bin dir, so PATH is only the
# fallback), `helper_json` and `advice_json` (the insides of JSON string literals, for the fault
# report), `python` and `pypath` (the helper's interpreter and where it finds this package and
# its libraries: docs/HOOKS.md, "Starting Python"; `fast_start`: the helper's second line when its
# script takes that start), `fast_session` and `fast_launch` (the fast
# path's key, read from the hook's environment; empty for a client whose hooks' environment
# does not name the session), `fast_events` (the events the fast path may answer),
# `opening_event` and `end_event` (where the fault report is said: a session's start, a run's end;
# `end_event` and `prompt_event` are also the turn's ends the fast path may record),
# `pre_edit_events` (the events before an edit: reservations, below), and `fast_head` (for a
# client whose hooks' environment names no session: how its payload begins, the session's
# value next; the fast path's key is then that session and the stub's parent, below).
# start values
@VALUES@
# end values

# Reservations (docs/HOOKS.md, "Before an edit"): a clone with no reservation answers an edit
# here, with one test and no output. <mail>/RESERVED exists while any reservation may (the
# store makes it before a record and removes it after the last: store/reservations.py).
if [ -n "${1-}" ]; then
    case " $pre_edit_events " in *" $1 "*) [ -e "${0%/*}/../RESERVED" ] || exit 0 ;; esac
fi

# The fast path (docs/HOOKS.md, "The fast path"): a tool call with nothing new for this launch
# is answered here, without starting Python, when the drain's stamp for the launch
# (<mail>/fast/<session id>@<pid>) was made in this very directory and the box's inbox has not
# changed since: the same mtime, and no name in it that the stamp's names/ does not list (an
# mtime can be set back; a name cannot hide). Or the box has no inbox at all (a worktree that
# never got mail): the stamp's inbox link still names nothing, and a publication makes the inbox
# before it links a message in, so nothing is queued (no clock involved). Any doubt (no stamp,
# a broken one, another directory, a changed inbox, OFF) runs the drain as before. Builtins
# only: the payload is left unread (Claude Code does not need it read). The key and the events
# are the client's values above; a client whose hooks' environment names no session has none.
#
# A payload's head (docs/HOOKS.md, "Codex's key: the payload's head"): with `fast_head`, the
# session is the payload's first field and the launch the process that started this stub. One
# read(2) of at most 512 bytes (dd: one process, against a whole payload that may carry a tool's
# output); the bytes taken are handed back in front of the rest when the drain runs (below), so
# it reads the payload the client wrote, less the trailing newlines $( ) drops from a payload the
# head holds whole (the event's identity ignores them: clients/codex/protocol._event_key). `exec`:
# dd is the substitution's own process, not one more fork (measured: 1.5 ms an event here).
# The head is taken at every event but the watcher's, so the drain knows the key wherever it
# must remove the launch's stamp too (a consume, an end, an opening show).
fast= head= headed= key=
if [ -n "$fast_head" ] && [ -n "${1-}" ] && [ "${1-}" != Watch ]; then
    head=$(exec dd bs=512 count=1 2>/dev/null)
    headed=1
    case "$head" in
        "$fast_head"*\"*)
            fast_session=${head#"$fast_head"}
            fast_session=${fast_session%%\"*}
            fast_launch=$PPID
            ;;
    esac
fi
[ -z "$fast_session" ] || [ -z "$fast_launch" ] || key=$fast_session@$fast_launch
case " $fast_events " in *" ${1-} "*) fast=$key ;; esac
if [ -n "$fast" ]; then
    case "$fast" in
        .* | *[!A-Za-z0-9._@-]*) ;;
        *)
            mail=${0%/*}
            mail=${mail%/*}
            here=$PWD
            # cd -P: every test below reads one stamp, even while a drain replaces it
            if [ ! -e "$mail/OFF" ] && cd -P "$mail/fast/$fast" 2>/dev/null; then
                nothing=
                if [ cwd -ef "$here" ]; then
                    # no inbox: the link is there and resolves to nothing (a stat, not a clock)
                    if [ -L inbox ] && [ ! -e inbox ]; then
                        nothing=1
                    elif [ -f seen ] && [ -d inbox ] && [ -d names ] \
                            && [ ! inbox -nt seen ] && [ ! seen -nt inbox ]; then
                        nothing=1
                        for f in inbox/*; do
                            # (an empty inbox leaves the pattern itself, which names nothing)
                            if [ -e "$f" ] || [ -L "$f" ]; then
                                [ -e "names/${f#inbox/}" ] || { nothing=; break; }
                            fi
                        done
                    fi
                fi
                # A turn with nothing new (docs/HOOKS.md): the stamp's box link says the drain
                # found nothing a prompt or a Stop would do; the stub records the turn's state
                # (store/presence.py, <session>.state) with one mv, or leaves the event to Python.
                turn=$fast_session.state
                if [ -n "$nothing" ]; then
                    if [ "${1-}" = "$end_event" ] || [ "${1-}" = "$prompt_event" ]; then
                        nothing=
                        if [ -d box ] && [ -d box/sessions ] && [ ! -e "box/sessions/$fast_session.faults" ]; then
                            state=idle
                            [ "${1-}" = "$end_event" ] || state=working
                            tmp=box/sessions/.$turn.$$
                            # (a directory in its place would take the file inside: not a turn record)
                            if [ ! -d "box/sessions/$turn" ] && printf '%s %s %s\n' "$state" "${1-}" "$$" >"$tmp" 2>/dev/null \
                                    && mv -f "$tmp" "box/sessions/$turn" 2>/dev/null; then
                                nothing=1
                                # written first, looked at second: a watcher arming now sees the
                                # prompt's state; one armed before is ended by the drain
                                if [ "$state" = working ]; then
                                    for w in "box/watch/$fast_session@"*; do
                                        case "$w" in
                                            *.wakes) ;;
                                            *) if [ -e "$w" ] || [ -L "$w" ]; then nothing=; fi ;;
                                        esac
                                    done
                                fi
                            fi
                            [ -e "$tmp" ] && rm -f "$tmp" 2>/dev/null
                        fi
                    elif [ -d box ] && [ -f "box/sessions/$turn" ]; then
                        # a tool call after a Stop the stub answered (a continued turn): the
                        # drain records the session working again
                        state=
                        IFS=' ' read -r state _ <"box/sessions/$turn" 2>/dev/null
                        [ "$state" != idle ] || nothing=
                    fi
                fi
                [ -z "$nothing" ] || exit 0
                cd "$here" 2>/dev/null || cd /
            fi
            ;;
    esac
fi

event=${1-}
[ $# -gt 0 ] && shift

run=
if [ -f "$helper" ] && [ -x "$helper" ]; then
    run=$helper
else
    # the fallback, by path: a fault report names it and reads its #! line
    run=$(command -v git-korus-mail 2>/dev/null) || run=
fi

if [ "$event" = Watch ]; then
    # The wake-up tier's watcher (docs/HOOKS.md, "The wake-up tier"), run only by a client whose
    # wiring arms it (Claude Code's). Claude Code wakes the model when this exits 2, so only the
    # helper's own wake line leads there: a helper that is missing, fails, or dies says nothing
    # and exits 0. Its stderr goes nowhere, since Claude Code would
    # put stderr into the wake text.
    [ -n "$run" ] || exit 0
    # KORUS_MAIL_STUB: the watcher ends when this file goes (uninstall disarms the tier)
    said=$(KORUS_MAIL_STUB=$0 "$run" drain --client="$client" --watch "$@" 2>/dev/null) || exit 0
    case "$said" in
        "korus-mail-wake "*)
            printf '%s\n' "${said#korus-mail-wake }" >&2
            exit 2
            ;;
    esac
    exit 0
fi

if [ -n "$run" ]; then
    first= second=
    if [ "$run" = "$helper" ] && [ -n "$pypath" ]; then
        { IFS= read -r first && IFS= read -r second; } <"$run" 2>/dev/null || first=
    fi
    quick=
    [ "$first" = "#!$python" ] && [ "$second" = "$fast_start" ] && [ -x "$python" ] && quick=1
    # with a head taken (above): that head, then the rest, the bytes the client wrote in order,
    # and the key looked up, for the drain to stamp under (clients/codex/protocol.fast_key_of)
    if [ -n "$headed" ] && [ -n "$quick" ]; then
        answer=$({ printf '%s' "$head"; exec cat; } \
            | KORUS_MAIL_FAST_KEY=$key KORUS_MAIL_PYPATH=$pypath "$python" -S "$run" drain --client="$client" "$@")
    elif [ -n "$headed" ]; then
        answer=$({ printf '%s' "$head"; exec cat; } | KORUS_MAIL_FAST_KEY=$key "$run" drain --client="$client" "$@")
    elif [ -n "$quick" ]; then
        answer=$(KORUS_MAIL_PYPATH=$pypath "$python" -S "$run" drain --client="$client" "$@")
    else
        answer=$("$run" drain --client="$client" "$@")
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

# Exit 0: on another code the client would drop the output. Said where a reader decides,
# as the drain reports its own faults: at the session's start (`opening_event`: to the model
# and the user) and at a run's end (`end_event`: to the user). Repeating it at every prompt and
# tool call would flood both.
if [ "$event" = "$opening_event" ]; then
    printf '{"systemMessage": "%s", "hookSpecificOutput": {"hookEventName": "%s", "additionalContext": "%s"}}\n' \
        "$fault" "$opening_event" "$fault"
elif [ "$event" = "$end_event" ]; then
    printf '{"systemMessage": "%s"}\n' "$fault"
fi
exit 0
