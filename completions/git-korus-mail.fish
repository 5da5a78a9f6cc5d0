# fish completion for git-korus-mail
#
# Completes both spellings:
#   git-korus-mail <TAB>
#   git korus-mail <TAB>    (extra "complete -c git" entries whose conditions
#                            match only when git's subcommand is korus-mail)
#
# Install:
#   cp git-korus-mail.fish ~/.config/fish/completions/
# fish autoloads that file for "git-korus-mail" only; for "git korus-mail" the
# file must also be loaded at startup (fish autoloads just git.fish for git):
#   cp git-korus-mail.fish ~/.config/fish/conf.d/
# or put this line in ~/.config/fish/config.fish instead of both:
#   git-korus-mail completion fish | source
# Loading it twice is harmless.
#
# Destinations for --to come from one "git worktree list --porcelain" call.

set -g __git_korus_mail_commands send ask reply list who status inbox read log reserve cancel forward off on drain install uninstall doctor release completion remote

# Print the words after the korus-mail command (as in "git-korus-mail ..." or
# "git [global options] korus-mail ..."), one per line; fail when the command
# line is neither.
function __git_korus_mail_args
    set -l tokens (commandline -opc)
    set -q tokens[1]; or return 1
    set -l cmd (string replace -r '.*/' '' -- $tokens[1])
    set -l rest
    if test "$cmd" = git-korus-mail
        set rest $tokens[2..-1]
    else if test "$cmd" = git
        set -l i 2
        set -l n (count $tokens)
        set -l found 0
        while test $i -le $n
            switch $tokens[$i]
                case -C -c --git-dir --work-tree --namespace --config-env
                    # git's global options that take the next word
                    set i (math $i + 2)
                case '-*'
                    set i (math $i + 1)
                case korus-mail
                    set found 1
                    break
                case '*'
                    return 1
            end
        end
        test $found = 1; or return 1
        set rest $tokens[(math $i + 1)..-1]
    else
        return 1
    end
    set -q rest[1]; and printf '%s\n' $rest
    return 0
end

# Print the directories of git's -C options before korus-mail, one per line.
function __git_korus_mail_cdirs
    set -l tokens (commandline -opc)
    test (string replace -r '.*/' '' -- "$tokens[1]") = git; or return 0
    set -l i 2
    set -l n (count $tokens)
    while test $i -lt $n
        switch $tokens[$i]
            case -C
                echo $tokens[(math $i + 1)]
                set i (math $i + 2)
            case -c --git-dir --work-tree --namespace --config-env
                set i (math $i + 2)
            case '-*'
                set i (math $i + 1)
            case '*'
                return 0
        end
    end
end

# True when the command line is git-korus-mail or git korus-mail.
function __git_korus_mail_in_cmd
    __git_korus_mail_args >/dev/null
end

# Print the subcommand (or the first stray word), nothing when none is given
# yet; fail when the command line is not ours.
function __git_korus_mail_sub
    set -l args (__git_korus_mail_args); or return 1
    set -l skip 0
    for a in $args
        if test $skip = 1
            set skip 0
            continue
        end
        switch $a
            case --repo --to --kind --ttl --session --wait --scope --client --timeout --again --ids --since --label --creds --note
                set skip 1
            case '-*'
            case '*'
                echo $a
                return 0
        end
    end
    return 0
end

function __git_korus_mail_needs_command
    set -l sub (__git_korus_mail_sub); or return 1
    test -z "$sub"
end

# __git_korus_mail_using CMD...: the subcommand is one of CMD...
function __git_korus_mail_using
    set -l sub (__git_korus_mail_sub); or return 1
    test -n "$sub"; and contains -- $sub $argv
end

# True when no argument follows the subcommand yet (options and their values do not count).
function __git_korus_mail_no_arg_yet
    set -l sub (__git_korus_mail_sub); or return 1
    set -l seen 0
    set -l skip 0
    for a in (__git_korus_mail_args)
        if test $skip = 1
            set skip 0
            continue
        end
        if test $seen = 0
            test "$a" = "$sub"; and set seen 1
            continue
        end
        switch $a
            case --repo --to --kind --ttl --session --wait --scope --client --timeout --again --ids --since --label --creds --note
                set skip 1
            case '-*'
            case '*'
                return 1
        end
    end
    return 0
end

# The ids the subcommand can take here, newest first (git korus-mail completion --ids,
# which only reads); git's -C and our --repo are passed on.
function __git_korus_mail_ids
    set -l gitc git
    for d in (__git_korus_mail_cdirs)
        set -a gitc -C $d
    end
    set -l args (__git_korus_mail_args)
    set -l i 1
    for a in $args
        set i (math $i + 1)
        switch $a
            case '--repo=*'
                set -a gitc -C (string replace -- '--repo=' '' $a)
            case --repo
                set -q args[$i]; and set -a gitc -C $args[$i]
        end
    end
    $gitc korus-mail completion --ids=(__git_korus_mail_sub) 2>/dev/null
end

# True when option $argv[1] (e.g. --to) is already on the command line.
function __git_korus_mail_has_opt
    for a in (__git_korus_mail_args)
        switch $a
            case $argv[1] "$argv[1]=*"
                return 0
            case --
                return 1
        end
    end
    return 1
end

# Print the path $argv[1] relative to $argv[2] (both absolute; $argv[2] may be /).
function __git_korus_mail_relpath
    set -l target $argv[1]
    set -l base (string replace -r '/$' '' -- $argv[2])
    set -l up ''
    while test -n "$base" -a "$target" != "$base"
        and not string match -q -- "$base/*" $target
        set base (string replace -r '/[^/]*$' '' -- $base)
        set up "../$up"
    end
    if test -z "$base"
        echo $up(string replace -r '^/' '' -- $target)
    else if test "$target" = "$base"
        set -l r (string replace -r '/$' '' -- $up)
        test -n "$r"; or set r .
        echo $r
    else
        echo $up(string sub -s (math (string length -- $base) + 2) -- $target)
    end
end

# --to candidates: all (not with the argument "one": forward takes one worktree), ., and
# every other worktree's name (when unique) and path (while nothing is typed the shorter of
# its relative and absolute path, as bash and zsh offer; both after that).
function __git_korus_mail_dests
    set -l repo
    set -l args (__git_korus_mail_args)
    set -l i 1
    for a in $args
        set i (math $i + 1)
        switch $a
            case '--repo=*'
                set repo (string replace -- '--repo=' '' $a)
            case --repo
                set -q args[$i]; and set repo $args[$i]
        end
    end
    # "git -C <dir> korus-mail": the command runs in <dir>; list and
    # relativize from there
    set -l gitc git
    set -l here (pwd -P)
    set -l cdirs (__git_korus_mail_cdirs)
    if set -q cdirs[1]
        for d in $cdirs
            set -a gitc -C $d
        end
        set here (command sh -c 'for d; do cd "$d" || exit 1; done; pwd -P' sh $cdirs 2>/dev/null)
        or return 0
    end
    test -n "$repo"; and set -a gitc -C $repo

    set -l wts
    for line in ($gitc worktree list --porcelain 2>/dev/null)
        switch $line
            case 'worktree *'
                set -a wts (string replace -- 'worktree ' '' $line)
            case bare prunable 'prunable *'
                # not a checkout a session can run in
                set -q wts[1]; and set -e wts[-1]
        end
    end

    set -l own ''
    for p in $wts
        if test "$here" = "$p"; or string match -q -- "$p/*" $here
            or begin; not set -q cdirs[1]; and test "$PWD" = "$p"; end
            or begin; not set -q cdirs[1]; and string match -q -- "$p/*" $PWD; end
            if test (string length -- $p) -gt (string length -- "$own")
                set own $p
            end
        end
    end

    test "$argv[1]" = one; or printf '%s\t%s\n' all 'every other worktree with a live session'
    printf '%s\t%s\n' . 'your own worktree'
    set -l others
    for p in $wts
        test "$p" = "$own"; or set -a others $p
    end
    set -l token (commandline -ct | string replace -r '^--to=' '')
    for p in $others
        set -l n (string replace -r '.*/' '' -- $p)
        contains -- "$n" '' all .; and continue
        set -l dup 0
        for d in $wts
            test (string replace -r '.*/' '' -- $d) = "$n"; and set dup (math $dup + 1)
        end
        test $dup = 1; and printf '%s\t%s\n' $n "worktree $p"
    end
    for p in $others
        set -l rel (__git_korus_mail_relpath $p $here)
        if test -z "$token"
            # as bash and zsh: the shorter of the two (fish shows a relative one, which starts
            # with ".", once a "." is typed)
            if test (string length -- $rel) -lt (string length -- $p)
                printf '%s\t%s\n' $rel 'worktree path'
            else
                printf '%s\t%s\n' $p 'worktree path'
            end
        else
            printf '%s\t%s\n' $p 'worktree path' $rel 'worktree path'
        end
    end
end

if not set -q __git_korus_mail_completion_loaded
    set -g __git_korus_mail_completion_loaded 1

    for c in git-korus-mail git
        # no file names anywhere in our command lines
        complete -c $c -n __git_korus_mail_in_cmd -f

        set -l top __git_korus_mail_needs_command
        complete -c $c -n $top -f -a send -d 'Queue a message for other worktrees'
        complete -c $c -n $top -f -a ask -d 'Ask one worktree a question and wait for the answer'
        complete -c $c -n $top -f -a reply -d 'Answer a question, or reply to a message'
        complete -c $c -n $top -f -a list -d 'Every box: worktree, counts, sessions'
        complete -c $c -n $top -f -a who -d 'Every session of the clone, its name and state'
        complete -c $c -n $top -f -a status -d 'This box and the fate of mail it sent'
        complete -c $c -n $top -f -a inbox -d 'This worktree\'s mail: sender, state, first line'
        complete -c $c -n $top -f -a read -d 'One message whole, without consuming it'
        complete -c $c -n $top -f -a log -d 'The clone\'s history; --follow as it happens'
        complete -c $c -n $top -f -a reserve -d 'Say which paths you are changing'
        complete -c $c -n $top -f -a cancel -d 'Withdraw a message sent from here, not yet consumed'
        complete -c $c -n $top -f -a forward -d 'Move a stranded box\'s queued mail to a worktree'
        complete -c $c -n $top -f -a off -d 'Suppress delivery (queued mail is kept)'
        complete -c $c -n $top -f -a on -d 'Resume delivery'
        complete -c $c -n $top -f -a drain -d 'Hook entry point (run by Claude Code, Codex CLI)'
        complete -c $c -n $top -f -a install -d 'Wire Claude Code or Codex hooks to the drain'
        complete -c $c -n $top -f -a uninstall -d 'Remove what install added'
        complete -c $c -n $top -f -a doctor -d 'Check wiring, permissions, claims, clock'
        complete -c $c -n $top -f -a release -d 'Let go of a claim whose owner is gone'
        complete -c $c -n $top -f -a completion -d 'Print a shell completion script'
        complete -c $c -n $top -f -a remote -d 'Mail between clones on several machines (a NATS link)'
        complete -c $c -n $top -f -l version -d 'Print the version'
        complete -c $c -n $top -f -s h -l help -d 'Print the usage'

        complete -c $c -n '__git_korus_mail_using send ask reply list who status inbox read log reserve cancel forward off on drain install uninstall doctor release completion remote' \
            -x -l repo -a '(__fish_complete_directories)' -d 'Work on the clone containing this path'

        # send
        complete -c $c -n '__git_korus_mail_using send; and not __git_korus_mail_has_opt --all-worktrees' \
            -x -l to -a '(__git_korus_mail_dests)' -d 'Destination (repeatable)'
        complete -c $c -n '__git_korus_mail_using send; and not __git_korus_mail_has_opt --to' \
            -f -l all-worktrees -d 'Every other worktree of the clone'
        complete -c $c -n '__git_korus_mail_using send' \
            -x -l kind -a 'note handoff alert' -d 'Display-only label'
        complete -c $c -n '__git_korus_mail_using send' \
            -x -l ttl -d 'Expire unread after minutes (default 4320)'
        complete -c $c -n '__git_korus_mail_using send; and not __git_korus_mail_has_opt --all-worktrees' \
            -x -l session -d 'Show only to this session id'
        complete -c $c -n '__git_korus_mail_using send; and not __git_korus_mail_has_opt --all-worktrees' \
            -f -l create -d 'Allow a path that is no worktree of this clone'
        complete -c $c -n '__git_korus_mail_using send' \
            -f -l no-wake -d 'Do not wake an idle recipient'
        complete -c $c -n '__git_korus_mail_using send' \
            -x -l wait -d 'Seconds to wait for the proof of delivery (default 2)'
        complete -c $c -n '__git_korus_mail_using drain' -f -l watch -d 'The wake-up tier watcher'
        complete -c $c -n '__git_korus_mail_using send ask reply list who status inbox read log reserve forward doctor' \
            -f -l json -d 'Machine-readable output'
        complete -c $c -n '__git_korus_mail_using list status inbox' \
            -f -l all -d 'Show every entry, not only the latest'
        complete -c $c -n '__git_korus_mail_using status' \
            -f -l clone -d 'Journal events of every worktree'

        # log
        complete -c $c -n '__git_korus_mail_using log' -f -l follow -d 'Keep printing as things happen'
        complete -c $c -n '__git_korus_mail_using log' \
            -x -l since -d 'Only since a UTC time or a duration back'

        # reserve
        complete -c $c -n '__git_korus_mail_using reserve' -x -l ttl -d 'Lapse after minutes (default 240)'
        complete -c $c -n '__git_korus_mail_using reserve' -x -l note -d 'Why: told to whoever edits the paths'
        complete -c $c -n '__git_korus_mail_using reserve' -f -l block -d 'Also refuse the edits where a hook can'
        complete -c $c -n '__git_korus_mail_using reserve' -f -l list -d 'Every reservation of the clone'
        complete -c $c -n '__git_korus_mail_using reserve' -f -l drop -d 'End your reservations of these pathspecs'
        complete -c $c -n '__git_korus_mail_using reserve' -f -l force -d 'With --drop: another\'s too'

        # read
        complete -c $c -n '__git_korus_mail_using read' -f -l raw -d 'The body\'s bytes unchanged, for a pipe'

        # ask
        complete -c $c -n '__git_korus_mail_using ask' \
            -x -l to -a '(__git_korus_mail_dests one)' -d 'The worktree asked'
        complete -c $c -n '__git_korus_mail_using ask' \
            -x -l timeout -d 'Stop waiting after seconds (default 110)'
        complete -c $c -n '__git_korus_mail_using ask' \
            -x -l again -d 'Wait again for a question asked from here'

        # forward
        complete -c $c -n '__git_korus_mail_using forward' \
            -x -l to -a '(__git_korus_mail_dests one)' -d 'Destination worktree'

        # install / uninstall
        complete -c $c -n '__git_korus_mail_using install uninstall' \
            -x -l scope -a 'local user' -d 'Where hooks are registered'
        complete -c $c -n '__git_korus_mail_using install' \
            -x -l client -a 'claude codex gemini all' -d 'Which client to wire'
        complete -c $c -n '__git_korus_mail_using drain' \
            -x -l client -a 'claude codex gemini' -d 'Whose hook protocol'
        complete -c $c -n '__git_korus_mail_using install' -f -l urgent -d 'Arm the wake-up tier'
        complete -c $c -n '__git_korus_mail_using install' -f -l trust-codex-config -d 'Trust each worktree as a Codex project (turns on its .codex/ config)'
        complete -c $c -n '__git_korus_mail_using install' -f -l force -d 'Rewrite entries even when current'
        complete -c $c -n '__git_korus_mail_using uninstall' -f -l purge -d 'Also delete the mail root'
        complete -c $c -n '__git_korus_mail_using uninstall' -f -l yes -d 'Confirm --purge without asking'

        # the message id of read, reply, cancel and release: the ids each can take here
        complete -c $c -n '__git_korus_mail_using read reply cancel release; and __git_korus_mail_no_arg_yet' \
            -f -k -a '(__git_korus_mail_ids)' -d 'message id'

        # completion
        complete -c $c -n '__git_korus_mail_using completion' -f -a 'bash zsh fish' -d Shell
        complete -c $c -n '__git_korus_mail_using completion' \
            -x -l ids -d 'The ids a command takes here, one a line'

        # remote
        complete -c $c -n '__git_korus_mail_using remote; and __git_korus_mail_no_arg_yet' -f -a 'add remove' -d Action
        complete -c $c -n '__git_korus_mail_using remote' -f -l json -d 'Machine-readable output'
        complete -c $c -n '__git_korus_mail_using remote' -x -l label -d 'The name of this clone for the others'
        complete -c $c -n '__git_korus_mail_using remote' -x -l creds -d 'A NATS credentials file'
        complete -c $c -n '__git_korus_mail_using remote' -f -l force -d 'Remove even while mail waits in the outbox'
    end
end
