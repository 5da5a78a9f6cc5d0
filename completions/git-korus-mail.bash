# bash completion for git-korus-mail                    -*- shell-script -*-
#
# Completes both spellings:
#   git-korus-mail <TAB>     through __git_korus_mail_dashed (complete -F)
#   git korus-mail <TAB>     through git's own completion, which calls the
#                            function _git_korus_mail for the "korus-mail"
#                            subcommand (dashes become underscores)
#
# Install one of:
#   cp git-korus-mail.bash ~/.local/share/bash-completion/completions/git-korus-mail
#       (bash-completion loads it on demand, for "git-korus-mail" and, through
#       git's completion, for "git korus-mail")
#   echo 'source /path/to/git-korus-mail.bash' >> ~/.bashrc
#   echo 'eval "$(git-korus-mail completion bash)"' >> ~/.bashrc
#
# Destinations for --to come from one "git worktree list --porcelain" call.
# Works with bash 3.2 and later; uses git's helpers (__gitcomp, __gitcomp_nl,
# __git_find_on_cmdline) when git's completion is loaded, and equivalent local
# code when it is not.

__git_korus_mail_subcommands='send ask reply list who status inbox read log reserve cancel forward off on drain install uninstall doctor release completion remote'

# Options that take a value, either as "--opt=value" or as "--opt value".
__git_korus_mail_valued=' --repo --to --kind --ttl --session --wait --scope --client --timeout --again --ids --since --label --creds --note '

# __git_korus_mail_options SUBCOMMAND: the options of SUBCOMMAND, as its usage in cli.py
# has them (tests/test_surface.py checks that they agree).
__git_korus_mail_options ()
{
	case $1 in
	send)             echo '--repo= --to= --all-worktrees --kind= --ttl= --session= --create --no-wake --wait= --json' ;;
	ask)              echo '--repo= --to= --again= --timeout= --json' ;;
	reply)            echo '--repo= --json' ;;
	list)             echo '--repo= --all --json' ;;
	status)           echo '--repo= --all --clone --json' ;;
	inbox)            echo '--repo= --all --json' ;;
	read)             echo '--repo= --json --raw' ;;
	log)              echo '--repo= --follow --since= --json' ;;
	reserve)          echo '--repo= --ttl= --note= --block --list --drop --force --json' ;;
	doctor|who)       echo '--repo= --json' ;;
	forward)          echo '--repo= --to= --json' ;;
	off|on|release|cancel) echo '--repo=' ;;
	drain)            echo '--repo= --client= --watch' ;;
	install)          echo '--repo= --scope= --client= --urgent --force --trust-codex-config' ;;
	uninstall)        echo '--repo= --scope= --purge --yes' ;;
	completion)       echo '--repo= --ids=' ;;
	remote)           echo '--repo= --json --label= --creds= --force' ;;
	esac
}

# __git_korus_mail_comp WORDS [PREFIX] [CUR] [SUFFIX]
# Same contract as git's __gitcomp: fill COMPREPLY with the words of WORDS
# that start with CUR, adding a space unless the word ends in "=".
__git_korus_mail_comp ()
{
	if declare -F __gitcomp >/dev/null 2>&1; then
		__gitcomp "$@"
		return
	fi
	local cur_="${3-$cur}" c i=0 IFS=$' \t\n'
	COMPREPLY=()
	for c in $1; do
		c="$c${4-}"
		if [[ $c == "$cur_"* ]]; then
			case $c in
			*=) ;;
			*) c="$c " ;;
			esac
			COMPREPLY[i++]="${2-}$c"
		fi
	done
}

# __git_korus_mail_comp_nl LIST [PREFIX] [CUR] [SUFFIX]
# Same contract as git's __gitcomp_nl: LIST is newline-separated, every
# match gets SUFFIX (default: a space).
__git_korus_mail_comp_nl ()
{
	if declare -F __gitcomp_nl >/dev/null 2>&1; then
		__gitcomp_nl "$@"
		return
	fi
	local cur_="${3-$cur}" c i=0 IFS=$'\n'
	COMPREPLY=()
	for c in $1; do
		if [[ $c == "$cur_"* ]]; then
			COMPREPLY[i++]="${2-}$c${4- }"
		fi
	done
}

# Print the subcommand on the command line (first match after the command
# word at index __git_cmd_idx), or nothing.
__git_korus_mail_find_sub ()
{
	if declare -F __git_find_on_cmdline >/dev/null 2>&1; then
		__git_find_on_cmdline "$__git_korus_mail_subcommands"
		return
	fi
	local c=$((__git_cmd_idx + 1)) w
	while [ $c -lt $cword ]; do
		w=${words[c]}
		case $w in
		--*=*) ;;
		-*)
			case $__git_korus_mail_valued in
			*" $w "*) c=$((c + 1)) ;;
			esac
			;;
		*)
			case " $__git_korus_mail_subcommands " in
			*" $w "*) echo "$w" ;;
			esac
			return
			;;
		esac
		c=$((c + 1))
	done
}

# Print the value of option $1 (e.g. --repo) if it is on the command line.
__git_korus_mail_optval ()
{
	local c=$((__git_cmd_idx + 1)) w
	while [ $c -lt $cword ]; do
		w=${words[c]}
		case $w in
		"$1="*) echo "${w#*=}"; return ;;
		"$1") echo "${words[c + 1]}"; return ;;
		--) return ;;
		esac
		c=$((c + 1))
	done
}

# Is option $1 (e.g. --json, --to) already on the command line?
__git_korus_mail_has_opt ()
{
	local c=$((__git_cmd_idx + 1))
	while [ $c -lt $cword ]; do
		case ${words[c]} in
		"$1"|"$1="*) return 0 ;;
		--) return 1 ;;
		esac
		c=$((c + 1))
	done
	return 1
}

# __git_korus_mail_relpath TARGET BASE: set __git_korus_mail_rel to the path of
# TARGET relative to BASE (both absolute and free of "." and ".."; BASE
# may be "/").
__git_korus_mail_relpath ()
{
	local target=$1 base=${2%/} up=
	while [[ -n $base && $target != "$base" && $target != "$base"/* ]]; do
		base=${base%/*}
		up="../$up"
	done
	if [[ -z $base ]]; then
		__git_korus_mail_rel="$up${target#/}"
	elif [[ $target == "$base" ]]; then
		__git_korus_mail_rel=${up%/}
		[[ -z $__git_korus_mail_rel ]] && __git_korus_mail_rel=.
	else
		__git_korus_mail_rel="$up${target#"$base"/}"
	fi
}

# __git_korus_mail_dests REPO CUR KEYWORDS: print newline-separated --to candidates:
# KEYWORDS (newline-separated: "all" and "." for send, "." for forward, which takes
# one worktree), and for every other worktree its name (last path component,
# when unique) and its path (absolute or relative to the cwd: the shorter one
# when CUR is empty, both otherwise).  The worktree the cwd is in is left out
# (send refuses it by path or name; "." is the way to mail yourself), and so
# are bare and prunable entries.  One git call.
__git_korus_mail_dests ()
{
	local repo=$1 cur_=$2 keywords=$3 line here own= p q n d dup out
	local -a wts gitc
	# "git -C <dir> korus-mail ...": the command will run in <dir>, so list
	# and relativize from there (__git_C_args is set by git's completion).
	# This function runs in a command substitution, so cd is harmless.
	local i=1
	while [[ $i -lt ${#__git_C_args[@]} ]]; do
		cd -- "${__git_C_args[i]}" 2>/dev/null || return 0
		i=$((i + 2))
	done
	gitc=(git)
	[[ -n $repo ]] && gitc=(git -C "$repo")
	wts=()
	while IFS= read -r line; do
		case $line in
		'worktree '*)
			wts[${#wts[@]}]=${line#worktree }
			;;
		bare|prunable|'prunable '*)
			# not a checkout a session can run in
			[[ ${#wts[@]} -gt 0 ]] && wts=("${wts[@]:0:${#wts[@]}-1}")
			;;
		esac
	done < <("${gitc[@]}" worktree list --porcelain 2>/dev/null)

	here=$(pwd -P 2>/dev/null) || here=$PWD
	# own worktree: the longest listed path containing the cwd
	for p in "${wts[@]}"; do
		if [[ $here == "$p" || $here == "$p"/* || $PWD == "$p" || $PWD == "$p"/* ]]; then
			[[ ${#p} -gt ${#own} ]] && own=$p
		fi
	done

	out=$keywords
	for p in "${wts[@]}"; do
		[[ $p == "$own" ]] && continue
		n=${p##*/}
		[[ -z $n || $n == all || $n == . ]] && continue
		dup=0
		for d in "${wts[@]}"; do
			[[ ${d##*/} == "$n" ]] && dup=$((dup + 1))
		done
		if [[ $dup -eq 1 ]]; then
			printf -v q '%q' "$n"
			out+=$'\n'"$q"
		fi
	done
	for p in "${wts[@]}"; do
		[[ $p == "$own" ]] && continue
		__git_korus_mail_relpath "$p" "$here"
		if [[ -z $cur_ ]]; then
			if [[ ${#__git_korus_mail_rel} -lt ${#p} ]]; then
				printf -v q '%q' "$__git_korus_mail_rel"
			else
				printf -v q '%q' "$p"
			fi
			out+=$'\n'"$q"
		else
			printf -v q '%q' "$p"
			out+=$'\n'"$q"
			printf -v q '%q' "$__git_korus_mail_rel"
			out+=$'\n'"$q"
		fi
	done
	printf '%s\n' "$out"
}

# Print the ids that subcommand $1 can take here, newest first, one a line (one call of
# "git korus-mail completion --ids", which only reads).
__git_korus_mail_ids ()
{
	local repo
	local -a gitc=(git "${__git_C_args[@]}")
	repo=$(__git_korus_mail_optval --repo)
	[[ -n $repo ]] && gitc+=(-C "$repo")
	"${gitc[@]}" korus-mail completion --ids="$1" 2>/dev/null
}

# Does the command line hold no argument yet after subcommand SUB (options and their
# values do not count)?
__git_korus_mail_no_arg_yet ()
{
	local c=$((__git_cmd_idx + 1)) w seen=
	while [ $c -lt $cword ]; do
		w=${words[c]}
		if [[ -z $seen ]]; then
			[[ $w == "$1" ]] && seen=1
		else
			case $w in
			--*=*) ;;
			-*)
				case $__git_korus_mail_valued in
				*" $w "*) c=$((c + 1)) ;;
				esac
				;;
			*) return 1 ;;
			esac
		fi
		c=$((c + 1))
	done
	return 0
}

# Complete the value VAL of option OPT; PFX is prepended to each candidate.
__git_korus_mail_value ()
{
	local opt=$1 val=$2 pfx=$3
	case $opt in
	--to)
		local keywords=$'all\n.'
		[[ $(__git_korus_mail_find_sub) == forward ]] && keywords=.
		[[ $(__git_korus_mail_find_sub) == ask ]] && keywords=
		__git_korus_mail_comp_nl \
			"$(__git_korus_mail_dests "$(__git_korus_mail_optval --repo)" "$val" "$keywords")" \
			"$pfx" "$val"
		;;
	--scope)
		__git_korus_mail_comp 'local user' "$pfx" "$val"
		;;
	--client)
		if [[ $(__git_korus_mail_find_sub) == drain ]]; then
			__git_korus_mail_comp 'claude codex gemini' "$pfx" "$val"
		else
			__git_korus_mail_comp 'claude codex gemini all' "$pfx" "$val"
		fi
		;;
	--kind)
		__git_korus_mail_comp 'note handoff alert' "$pfx" "$val"
		;;
	--repo)
		# directories; with -o filenames readline quotes them and adds the "/"
		local IFS=$'\n' d i=0 slash=/
		compopt -o filenames 2>/dev/null && slash=
		COMPREPLY=()
		for d in $(compgen -d -- "$val"); do
			COMPREPLY[i++]="$pfx$d$slash"
		done
		;;
	*)
		# --ttl, --session, --timeout, --again, --label, --creds: free-form; offer nothing, not even file names
		COMPREPLY=()
		compopt +o default +o bashdefault 2>/dev/null
		;;
	esac
}

# Entry point for "git korus-mail", called by git's completion with cur,
# prev, words, cword (and, since git 2.31, __git_cmd_idx) set.  Also the
# worker behind the dashed command (see __git_korus_mail_dashed).
_git_korus_mail ()
{
	local idx=${__git_cmd_idx-} c
	if [[ -z $idx ]]; then
		# older git-completion.bash: locate the subcommand word ourselves
		idx=0
		for ((c = 1; c < cword; c++)); do
			if [[ ${words[c]} == korus-mail ]]; then
				idx=$c
				break
			fi
		done
	fi
	local __git_cmd_idx=$idx
	local sub opt val pfx=

	# Value of an option: "--opt=val" (one word after git's reassembly) or
	# "--opt val".
	case $cur in
	--*=*)
		opt=${cur%%=*}
		val=${cur#*=}
		# bash replaces only the text after "=" when "=" breaks words
		[[ ${COMP_WORDBREAKS-=} == *=* ]] || pfx="$opt="
		case $__git_korus_mail_valued in
		*" $opt "*)
			__git_korus_mail_value "$opt" "$val" "$pfx"
			return
			;;
		esac
		COMPREPLY=()
		return
		;;
	esac
	if [[ $cword -gt $((idx + 1)) ]]; then
		case $__git_korus_mail_valued in
		*" $prev "*)
			__git_korus_mail_value "$prev" "$cur" ""
			return
			;;
		esac
	fi

	sub=$(__git_korus_mail_find_sub)
	if [[ -z $sub ]]; then
		case $cur in
		-*) __git_korus_mail_comp '--version --help -h' ;;
		*) __git_korus_mail_comp "$__git_korus_mail_subcommands" ;;
		esac
		return
	fi

	case $sub in
	completion)
		if [[ $cur != -* ]]; then
			if [[ $prev == completion ]]; then
				__git_korus_mail_comp 'bash zsh fish'
			else
				COMPREPLY=()
			fi
			return
		fi
		;;
	remote)
		if [[ $cur != -* && $prev == remote ]]; then
			__git_korus_mail_comp 'add remove'
			return
		fi
		;;
	read|reply|cancel|release)
		# the message id: the ids this command can take here (not after "--", not the body)
		if [[ $cur != -* ]] && ! __git_korus_mail_has_opt -- && __git_korus_mail_no_arg_yet "$sub"; then
			__git_korus_mail_comp_nl "$(__git_korus_mail_ids "$sub")" "" "$cur"
			[[ ${#COMPREPLY[@]} -eq 0 ]] && compopt +o default +o bashdefault 2>/dev/null
			return 0
		fi
		;;
	esac

	# After "--" only the message body follows.
	if __git_korus_mail_has_opt --; then
		COMPREPLY=()
		compopt +o default +o bashdefault 2>/dev/null
		return
	fi

	local o opts= used
	for o in $(__git_korus_mail_options "$sub"); do
		used=${o%=}
		if [[ $used != --to ]] && __git_korus_mail_has_opt "$used"; then
			continue
		fi
		if [[ $sub == send ]]; then
			case $used in
			--to|--session|--create)
				__git_korus_mail_has_opt --all-worktrees && continue ;;
			--all-worktrees)
				__git_korus_mail_has_opt --to && continue ;;
			esac
		fi
		opts="$opts $o"
	done
	case $cur in
	-*|'')
		__git_korus_mail_comp "$opts"
		;;
	*)
		# a message body (send) or a stray word: nothing sensible to offer
		COMPREPLY=()
		;;
	esac
	[[ ${#COMPREPLY[@]} -eq 0 ]] && compopt +o default +o bashdefault 2>/dev/null
	return 0
}

# Rebuild words/cword/cur/prev from COMP_WORDS with "=" glued back on, the
# way git's completion does (bash splits "--to=x" into "--to" "=" "x").
__git_korus_mail_words ()
{
	local i j=0 w glue=
	words=("${COMP_WORDS[0]}")
	cword=0
	for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
		w=${COMP_WORDS[i]}
		if [[ -n $w && -z ${w//=} && $j -ge 1 ]]; then
			words[j]="${words[j]}$w"
			glue=1
		elif [[ -n $glue ]]; then
			words[j]="${words[j]}$w"
			glue=
		else
			j=$((j + 1))
			words[j]=$w
		fi
		[[ $i -eq $COMP_CWORD ]] && cword=$j
	done
	cur=${words[cword]-}
	prev=
	[[ $cword -gt 0 ]] && prev=${words[cword - 1]}
}

# Entry point for the dashed command "git-korus-mail".
__git_korus_mail_dashed ()
{
	local cur prev words cword __git_cmd_idx=0
	if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
		_get_comp_words_by_ref -n =: cur prev words cword
	else
		__git_korus_mail_words
	fi
	_git_korus_mail
}

complete -o bashdefault -o default -o nospace -F __git_korus_mail_dashed git-korus-mail 2>/dev/null ||
	complete -o default -o nospace -F __git_korus_mail_dashed git-korus-mail
