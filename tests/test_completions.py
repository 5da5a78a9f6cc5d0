"""Shell completions and the man page, tested through the real shells.

What each shell offers is checked against the command surface that tests/surface.py
derives from the docopt usage blocks in git_korus_mail/cli.py (tests/test_surface.py
reads the same files as text).  Bash is driven directly: a `bash -c` process sources the script, sets
COMP_WORDS/COMP_CWORD/COMP_LINE/COMP_POINT the way readline would, calls the
completion function and prints COMPREPLY.  zsh is driven through zpty with the
real compinit, fish through `complete -C`.  Everything runs in a temp clone with
a real linked worktree.

Debian packages for the full run (otherwise the tests that need them skip):
    git bash            (required; git ships /usr/share/bash-completion/completions/git)
    bash-completion     (the on-demand loader test)
    zsh fish groff-base man-db  (apt-get install -y git bash-completion zsh fish groff-base man-db)
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import surface

ROOT = Path(__file__).resolve().parent.parent
BASH_SCRIPT = ROOT / "completions" / "git-korus-mail.bash"
ZSH_SCRIPT = ROOT / "completions" / "_git-korus-mail"
FISH_SCRIPT = ROOT / "completions" / "git-korus-mail.fish"
MAN_PAGE = ROOT / "man" / "git-korus-mail.1"

GIT_BASH_COMPLETION = [
    "/usr/share/bash-completion/completions/git",
    "/usr/local/share/bash-completion/completions/git",
    "/usr/share/git/completion/git-completion.bash",          # Arch, Fedora (git-core-doc)
    "/usr/share/git-core/contrib/completion/git-completion.bash",
    "/etc/bash_completion.d/git",
    "/opt/homebrew/etc/bash_completion.d/git-completion.bash",
    "/usr/local/etc/bash_completion.d/git-completion.bash",
]
BASH_COMPLETION_FRAMEWORK = [
    "/usr/share/bash-completion/bash_completion",
    "/usr/local/share/bash-completion/bash_completion",
    "/opt/homebrew/share/bash-completion/bash_completion",
]
TIMEOUT = 60

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("git") is None,
                                reason="needs bash and git")


def test_ci_has_every_shell_these_tests_need():
    """Under CI=true (tests/run.sh installs them there) a missing shell fails, not skips: a
    completion test that never runs proves nothing. Elsewhere each test skips and says why (-rs)."""
    if os.environ.get("CI", "").lower() != "true":
        pytest.skip("not CI: a missing shell skips its tests, each saying why")
    missing = [t for t in ("zsh", "fish", "bash") if shutil.which(t) is None]
    if not any(os.path.isfile(p) for p in BASH_COMPLETION_FRAMEWORK):
        missing.append("bash-completion")
    assert not missing, f"CI must run the completion tests in real shells; missing: {missing}"


# -- the command surface: the usage blocks ---------------------------------------
COMMANDS = surface.commands()
SUBCOMMANDS = surface.subcommands()
WITH_OPTIONS = [n for n in SUBCOMMANDS if COMMANDS[n].options]


def long_options(sub):
    """The options a completion offers after `<sub> -`: the long ones."""
    return {o for o in COMMANDS[sub].options if o.startswith("--")}


# (subcommand, option, its fixed values): what `<sub> <opt> <TAB>` must offer
VALUED = [(n, o, v) for n in SUBCOMMANDS for o, v in COMMANDS[n].values.items()]
# options whose argument is free-form (a number, an id): nothing to offer, not even files
FREE_FORM = [(n, o) for n in SUBCOMMANDS for o, arg in COMMANDS[n].options.items()
             if arg and o not in COMMANDS[n].values and o not in ("--repo", "--to")]  # --to: destinations


def fixed_words(candidates, repo):
    """Candidates without the clone's worktrees (names and paths), which --to adds."""
    names = {p.name for p in (repo.main, repo.web, repo.spaced)}
    return sorted(c for c in candidates if "/" not in c and unescape(c) not in names)


# -- a real clone with real linked worktrees -----------------------------------
def _env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "BASH_COMPLETION", "XDG_"))}
    env.update({
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "LANG": "C.UTF-8",
    })
    env.pop("BASH_ENV", None)
    env.pop("ENV", None)
    return env


class Repo:
    def __init__(self, base):
        base = Path(os.path.realpath(base))
        self.home = base / "home"
        self.home.mkdir()
        self.env = _env(self.home)
        self.main = base / "main"
        self.web = base / "web"
        self.spaced = base / "my wt"
        self.git("init", "-q", str(self.main), cwd=base)
        (self.main / "README").write_text("x\n")
        self.git("add", "README", cwd=self.main)
        self.git("commit", "-q", "-m", "init", cwd=self.main)
        self.git("worktree", "add", "-q", "-b", "web", str(self.web), cwd=self.main)
        self.git("worktree", "add", "-q", "-b", "spaced", str(self.spaced), cwd=self.main)
        self.sub = self.main / "src" / "deep"
        self.sub.mkdir(parents=True)

    def git(self, *args, cwd):
        subprocess.run(["git", *args], cwd=cwd, env=self.env, check=True, capture_output=True,
                       timeout=TIMEOUT)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return Repo(tmp_path_factory.mktemp("completion-clone"))


def run(argv, repo, cwd=None, env=None, input=None):
    p = subprocess.run(argv, cwd=str(cwd or repo.main), env=env or repo.env, input=input,
                       capture_output=True, text=True, timeout=TIMEOUT)
    return p


# -- bash ------------------------------------------------------------------------
def split_like_bash(line):
    """COMP_WORDS and COMP_CWORD as bash builds them with the default COMP_WORDBREAKS
    (for the unquoted lines used here): words split at blanks, '=' a word of its own."""
    words = []
    for token in line.split(" "):
        parts = re.split(r"(=)", token)
        parts = [p for p in parts if p != ""] or [""]
        words.extend(parts)
    if line.endswith(" "):
        words = words if words[-1] == "" else words + [""]
    return words, len(words) - 1


BASH_DRIVER = r"""
set -u
for f in $PRELOAD; do . "$f" >/dev/null 2>&1 || { echo "cannot source $f" >&2; exit 3; }; done
set +u
[ -n "$SCRIPT" ] && . "$SCRIPT"
COMP_LINE=$LINE
COMP_POINT=${#COMP_LINE}
COMP_WORDS=("$@")
COMP_CWORD=$CWORD
COMPREPLY=()
eval "$FUNC"
status=$?
[ "$status" -eq 124 ] && { COMPREPLY=(); eval "$FUNC"; }
printf '%s\n' "${COMPREPLY[@]}"
"""


def bash_complete(repo, line, func="__git_korus_mail_dashed", cwd=None, preload=(), script=BASH_SCRIPT,
                  extra_env=None):
    words, cword = split_like_bash(line)
    env = dict(repo.env)
    env.update({"PRELOAD": " ".join(str(p) for p in preload), "SCRIPT": str(script or ""),
                "LINE": line, "CWORD": str(cword), "FUNC": func})
    env.update(extra_env or {})
    p = run(["bash", "--norc", "--noprofile", "-c", BASH_DRIVER, "bash", *words], repo, cwd=cwd, env=env)
    assert p.returncode == 0, p.stderr
    # candidates carry git's trailing space (the completion runs with -o nospace)
    return [c[:-1] if c.endswith(" ") else c for c in p.stdout.split("\n")[:-1] if c != ""]


def unescape(word):
    return re.sub(r"\\(.)", r"\1", word)


def test_bash_script_parses():
    p = subprocess.run(["bash", "-n", str(BASH_SCRIPT)], capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0 and p.stderr == "", p.stderr


def test_bash_registers_dashed_command(repo):
    p = run(["bash", "--norc", "-c", f". {BASH_SCRIPT} && complete -p git-korus-mail && "
                                     "declare -F _git_korus_mail __git_korus_mail_dashed"], repo)
    assert p.returncode == 0, p.stderr
    assert "-F __git_korus_mail_dashed git-korus-mail" in p.stdout
    assert "_git_korus_mail" in p.stdout.split()


def test_bash_subcommand_prefix(repo):
    assert sorted(bash_complete(repo, "git-korus-mail s")) == ["send", "status"]


def test_bash_every_subcommand(repo):
    assert sorted(bash_complete(repo, "git-korus-mail ")) == sorted(SUBCOMMANDS)


def test_bash_top_level_options(repo):
    assert set(bash_complete(repo, "git-korus-mail -")) == set(COMMANDS[None].options)


@pytest.mark.parametrize("sub", WITH_OPTIONS)
def test_bash_options_of_each_subcommand(repo, sub):
    offered = bash_complete(repo, f"git-korus-mail {sub} -")
    assert {o.rstrip("=") for o in offered} == long_options(sub)
    # an option that takes an argument is offered as --opt= (the cursor stays for its value)
    assert {o.rstrip("=") for o in offered if o.endswith("=")} == \
        {o for o in long_options(sub) if COMMANDS[sub].options[o]}


@pytest.mark.parametrize("sub,opt,values", VALUED)
def test_bash_values_of_each_option(repo, sub, opt, values):
    for line in (f"git-korus-mail {sub} {opt} ", f"git-korus-mail {sub} {opt}="):
        assert fixed_words(bash_complete(repo, line), repo) == sorted(values), line


@pytest.mark.parametrize("sub,opt", FREE_FORM)
def test_bash_free_form_values_offer_nothing(repo, sub, opt):
    assert bash_complete(repo, f"git-korus-mail {sub} {opt} ") == []


def test_bash_send_options_exclude_each_other(repo):
    after_all = {o.rstrip("=") for o in bash_complete(repo, "git-korus-mail send --all-worktrees -")}
    assert "--to" not in after_all and "--session" not in after_all and "--create" not in after_all
    assert "--kind" in after_all
    after_to = {o.rstrip("=") for o in bash_complete(repo, "git-korus-mail send --to=web --json -")}
    assert "--all-worktrees" not in after_to and "--json" not in after_to
    assert "--to" in after_to                       # repeatable


def test_bash_to_offers_linked_worktree_path_and_name(repo):
    cands = bash_complete(repo, "git-korus-mail send --to ")
    assert "web" in cands                           # its name
    assert "all" in cands and "." in cands
    assert "main" not in cands                      # the own worktree is "."
    paths = {os.path.realpath(os.path.join(repo.main, unescape(c))) for c in cands if "/" in c}
    assert str(repo.web) in paths                   # its path (relative or absolute)
    assert str(repo.main) not in paths


def test_bash_to_absolute_and_relative_prefixes(repo):
    absolute = bash_complete(repo, f"git-korus-mail send --to {repo.web.parent}/w")
    assert absolute == [str(repo.web)]
    relative = bash_complete(repo, "git-korus-mail send --to ../../../w", cwd=repo.sub)
    assert relative == ["../../../web"]


def test_bash_to_equals_form(repo):
    assert bash_complete(repo, "git-korus-mail send --to=we") == ["web"]
    assert "web" in bash_complete(repo, "git-korus-mail send --to=")


def test_bash_to_quotes_a_path_with_a_space(repo):
    assert bash_complete(repo, "git-korus-mail send --to my") == [r"my\ wt"]


def test_bash_to_respects_repo_option(repo, tmp_path):
    # from outside any clone, --repo names the clone whose worktrees are offered
    outside = bash_complete(repo, "git-korus-mail send --to ", cwd=tmp_path)
    assert "web" not in outside
    anchored = bash_complete(repo, f"git-korus-mail send --repo {repo.main} --to ", cwd=tmp_path)
    assert "web" in anchored and "main" in anchored


def test_bash_scope_values(repo):
    assert bash_complete(repo, "git-korus-mail install --scope ") == ["local", "user"]
    assert bash_complete(repo, "git-korus-mail uninstall --scope=u") == ["user"]


def test_bash_completion_shells(repo):
    assert bash_complete(repo, "git-korus-mail completion ") == list(COMMANDS["completion"].choices)


def test_bash_kind_values(repo):
    assert bash_complete(repo, "git-korus-mail send --kind h") == ["handoff"]


def find_first(paths):
    for p in paths:
        if os.path.isfile(p):
            return p
    return None


def git_completion_script():
    return find_first(GIT_BASH_COMPLETION)


needs_git_completion = pytest.mark.skipif(
    git_completion_script() is None,
    reason="git's bash completion not found (Debian: it ships in the git package at "
           "/usr/share/bash-completion/completions/git)")


@needs_git_completion
def test_git_completion_calls_git_korus_mail(repo):
    pre = [git_completion_script()]
    assert sorted(bash_complete(repo, "git korus-mail s", func="__git_wrap__git_main", preload=pre)) \
        == ["send", "status"]
    cands = bash_complete(repo, "git korus-mail send --to ", func="__git_wrap__git_main", preload=pre)
    assert "web" in cands and "all" in cands
    # forward moves mail to one worktree: no `all` (found through git's own cmdline helpers)
    cands = bash_complete(repo, "git korus-mail forward x --to ", func="__git_wrap__git_main", preload=pre)
    assert "web" in cands and "." in cands and "all" not in cands
    assert bash_complete(repo, "git korus-mail install --scope=", func="__git_wrap__git_main",
                         preload=pre) == ["local", "user"]
    opts = {o.rstrip("=") for o in bash_complete(repo, "git korus-mail doctor --", func="__git_wrap__git_main",
                                                 preload=pre)}
    assert opts == long_options("doctor")


@needs_git_completion
def test_git_completion_honours_dash_C(repo):
    cands = bash_complete(repo, f"git -C {repo.web} korus-mail send --to ", func="__git_wrap__git_main",
                          preload=[git_completion_script()])
    assert "main" in cands and "web" not in cands   # run from web, main is the peer


@pytest.mark.skipif(find_first(BASH_COMPLETION_FRAMEWORK) is None or git_completion_script() is None,
                    reason="needs the bash-completion package (Debian: bash-completion) and git's completion")
def test_bash_completion_loads_script_on_demand(repo, tmp_path):
    """Installed as completions/git-korus-mail, bash-completion loads it the first
    time either spelling is completed."""
    user_dir = tmp_path / "bc"
    (user_dir / "completions").mkdir(parents=True)
    shutil.copy(BASH_SCRIPT, user_dir / "completions" / "git-korus-mail")
    env = {"BASH_COMPLETION_USER_DIR": str(user_dir)}
    framework = find_first(BASH_COMPLETION_FRAMEWORK)
    # git korus-mail: bash-completion loads git's completion, which loads ours
    driver_git = "_completion_loader git >/dev/null 2>&1; __git_wrap__git_main"
    got = bash_complete(repo, "git korus-mail s", func=driver_git, preload=[framework], script="",
                        extra_env=env)
    assert sorted(got) == ["send", "status"]
    # git-korus-mail: the default loader finds it by the command's name
    driver_dashed = ("_completion_loader git-korus-mail >/dev/null 2>&1; "
                     "f=$(complete -p git-korus-mail | sed 's/.* -F \\([^ ]*\\) .*/\\1/'); $f")
    got = bash_complete(repo, "git-korus-mail install --scope ", func=driver_dashed, preload=[framework],
                        script="", extra_env=env)
    assert got == ["local", "user"]


# -- zsh -------------------------------------------------------------------------
ZSH_DRIVER = r"""
# usage: zsh -f driver.zsh MODE SCRIPT_OR_DIR LINE   (MODE: fpath, source, or rc: the user's
# own ~/.zshrc sets completion up, as after the setup line install prints)
zmodload zsh/zpty || exit 3
mode=$1 target=$2 cmdline=$3
if [[ $mode == rc ]]; then zpty z zsh -i; else zpty z zsh -f -i; fi
zpty -w z 'PROMPT= RPROMPT= PS2='
if [[ $mode == fpath ]]; then
  zpty -w z "fpath=(${(q)target} \$fpath); autoload -Uz compinit; compinit -u -D"
elif [[ $mode == source ]]; then
  zpty -w z "autoload -Uz compinit; compinit -u -D; source ${(q)target}"
fi
zpty -w z 'zstyle ":completion:*" list-grouped false; zstyle ":completion:*" insert-tab false'
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a __h; builtin compadd -O __h "$@"; local m; for m in $__h; do print -r -- "<<KM>>$m"; done; builtin compadd "$@"; }'
zpty -w z '__km_end() { print -r -- "<<KM-END>>"; exit 0; }; comppostfuncs=(__km_end)'
zpty -w z 'print -r -- "<<KM-READY>>"'
local line
while zpty -r z line; do [[ $line == '<<KM-READY>>'* ]] && break; done
zpty -w -n z "$cmdline"$'\t'
while zpty -r z line; do
  line=${line%$'\r'*}
  [[ $line == *'<<KM-END>>'* ]] && break
  [[ $line == *'<<KM>>'* ]] && print -r -- "${line#*<<KM>>}"
  # what zsh prints on the terminal when the completion function itself fails
  [[ $line == *(parse error|command not found|not found:|bad pattern|(eval):)* ]] && print -r -- "<<KM-ERROR>>${line}"
done
zpty -d z
"""


def have_zsh_zpty():
    if shutil.which("zsh") is None:
        return False
    return subprocess.run(["zsh", "-f", "-c", "zmodload zsh/zpty"], capture_output=True,
                          timeout=TIMEOUT).returncode == 0


needs_zsh = pytest.mark.skipif(not have_zsh_zpty(), reason="zsh (with zsh/zpty) not installed (Debian: zsh)")


def zsh_has_git(repo):
    return subprocess.run(["zsh", "-f", "-c", "autoload -Uz compinit; compinit -u -D; (( $+functions[_git] ))"],
                          capture_output=True, env=repo.env, timeout=TIMEOUT).returncode == 0


def zsh_complete(repo, line, mode="fpath", cwd=None, tmp_path=None, env=None):
    if mode == "fpath":
        d = tmp_path / "zfunc"
        d.mkdir(exist_ok=True)
        shutil.copy(ZSH_SCRIPT, d / "_git-korus-mail")
        target = d
    else:
        target = ZSH_SCRIPT
    driver = tmp_path / "driver.zsh"
    driver.write_text(ZSH_DRIVER)
    p = run(["zsh", "-f", str(driver), mode, str(target), line], repo, cwd=cwd, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    errors = [ln for ln in lines if ln.startswith("<<KM-ERROR>>")]
    assert not errors, f"zsh printed errors completing {line!r}: {errors}"
    return sorted(set(lines))


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh not installed (Debian: zsh)")
def test_zsh_script_parses():
    p = subprocess.run(["zsh", "-n", str(ZSH_SCRIPT)], capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert ZSH_SCRIPT.read_text().startswith("#compdef git-korus-mail\n")


@needs_zsh
def test_zsh_dashed_command(repo, tmp_path):
    assert zsh_complete(repo, "git-korus-mail s", tmp_path=tmp_path) == ["send", "status"]
    assert zsh_complete(repo, "git-korus-mail install --scope ", tmp_path=tmp_path) == ["local", "user"]
    assert zsh_complete(repo, "git-korus-mail completion ", tmp_path=tmp_path) == \
        sorted(COMMANDS["completion"].choices)


@needs_zsh
def test_zsh_every_subcommand_and_top_level_option(repo, tmp_path):
    assert zsh_complete(repo, "git-korus-mail ", tmp_path=tmp_path) == sorted(SUBCOMMANDS)
    assert zsh_complete(repo, "git-korus-mail -", tmp_path=tmp_path) == sorted(COMMANDS[None].options)


@needs_zsh
@pytest.mark.parametrize("sub", WITH_OPTIONS)
def test_zsh_options_of_each_subcommand(repo, tmp_path, sub):
    assert set(zsh_complete(repo, f"git-korus-mail {sub} --", tmp_path=tmp_path)) == long_options(sub)


@needs_zsh
@pytest.mark.parametrize("sub,opt,values", VALUED)
def test_zsh_values_of_each_option(repo, tmp_path, sub, opt, values):
    got = zsh_complete(repo, f"git-korus-mail {sub} {opt} ", tmp_path=tmp_path)
    assert fixed_words(got, repo) == sorted(values)


@needs_zsh
@pytest.mark.parametrize("sub,opt", FREE_FORM)
def test_zsh_free_form_values_offer_nothing(repo, tmp_path, sub, opt):
    assert zsh_complete(repo, f"git-korus-mail {sub} {opt} ", tmp_path=tmp_path) == []


@needs_zsh
def test_zsh_send_options_complete_without_errors(repo, tmp_path):
    # `git korus-mail send --<TAB>` once printed "(eval):1: parse error near `)'": a colon in the
    # body's message made _arguments evaluate the rest as an action
    for line in ("git-korus-mail send --", "git-korus-mail send --to . ", "git-korus-mail send "):
        zsh_complete(repo, line, tmp_path=tmp_path)
    if zsh_has_git(repo):
        assert "--to" in zsh_complete(repo, "git korus-mail send --", tmp_path=tmp_path)
        zsh_complete(repo, "git korus-mail send --to . ", tmp_path=tmp_path)


@needs_zsh
def test_zsh_to_offers_worktrees(repo, tmp_path):
    cands = zsh_complete(repo, "git-korus-mail send --to ", tmp_path=tmp_path)
    assert {"all", ".", "web", "../web"} <= set(cands)
    assert "main" not in cands
    assert zsh_complete(repo, f"git-korus-mail send --to={repo.web.parent}/w", tmp_path=tmp_path) \
        == [str(repo.web)]


@needs_zsh
def test_zsh_git_subcommand(repo, tmp_path):
    """zsh's _git hands `git korus-mail ...` to the _git-korus-mail function."""
    if not zsh_has_git(repo):
        pytest.skip("zsh's own _git completion is not installed")
    assert zsh_complete(repo, "git korus-mail s", tmp_path=tmp_path) == ["send", "status"]
    assert "web" in zsh_complete(repo, "git korus-mail send --to ", tmp_path=tmp_path)


@needs_zsh
def test_zsh_git_lists_korus_mail(repo, tmp_path):
    """With _git-korus-mail in $fpath and the command on PATH, `git korus-<TAB>` offers it."""
    if not zsh_has_git(repo):
        pytest.skip("zsh's own _git completion is not installed")
    env = dict(repo.env, PATH=stub_command(tmp_path))
    assert "korus-mail" in zsh_complete(repo, "git korus-", tmp_path=tmp_path, env=env)


@needs_zsh
def test_zsh_sourced_script(repo, tmp_path):
    """`source <(git-korus-mail completion zsh)` after compinit registers it with compdef."""
    assert zsh_complete(repo, "git-korus-mail s", mode="source", tmp_path=tmp_path) == ["send", "status"]


# -- fish ------------------------------------------------------------------------
needs_fish = pytest.mark.skipif(shutil.which("fish") is None, reason="fish not installed (Debian: fish)")


def fish_complete(repo, line, cwd=None, source=True):
    script = f"source {FISH_SCRIPT}; " if source else ""
    p = run(["fish", "-c", script + "complete -C $argv[1]", line], repo, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return sorted({c.split("\t")[0] for c in p.stdout.splitlines()})


@needs_fish
def test_fish_script_parses():
    p = subprocess.run(["fish", "-n", str(FISH_SCRIPT)], capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0 and p.stderr == "", p.stderr


@needs_fish
def test_fish_dashed_command(repo):
    assert fish_complete(repo, "git-korus-mail s") == ["send", "status"]
    assert fish_complete(repo, "git-korus-mail install --scope ") == ["local", "user"]
    assert fish_complete(repo, "git-korus-mail completion ") == sorted(COMMANDS["completion"].choices)


@needs_fish
def test_fish_every_subcommand_and_top_level_option(repo):
    assert fish_complete(repo, "git-korus-mail ") == sorted(SUBCOMMANDS)
    assert fish_complete(repo, "git-korus-mail -") == sorted(COMMANDS[None].options)


@needs_fish
@pytest.mark.parametrize("sub", WITH_OPTIONS)
def test_fish_options_of_each_subcommand(repo, sub):
    assert set(fish_complete(repo, f"git-korus-mail {sub} --")) == long_options(sub)


@needs_fish
@pytest.mark.parametrize("sub,opt,values", VALUED)
def test_fish_values_of_each_option(repo, sub, opt, values):
    line = f"git-korus-mail {sub} {opt} "
    # fish hides candidates that start with "." until a "." is typed
    got = set(fish_complete(repo, line)) | set(fish_complete(repo, line + "."))
    assert fixed_words(got, repo) == sorted(values)


@needs_fish
@pytest.mark.parametrize("sub,opt", FREE_FORM)
def test_fish_free_form_values_offer_nothing(repo, sub, opt):
    assert fish_complete(repo, f"git-korus-mail {sub} {opt} ") == []


@needs_fish
def test_fish_to_offers_worktrees(repo):
    cands = fish_complete(repo, "git-korus-mail send --to ")
    assert {"all", "web"} <= set(cands)
    assert "main" not in cands
    # as bash and zsh: the relative path, not the absolute one (issue 25); fish hides
    # dot-candidates until a dot is typed
    assert str(repo.web) not in cands
    assert {".", "../web"} <= set(fish_complete(repo, "git-korus-mail send --to ."))
    assert "../../../web" in fish_complete(repo, "git-korus-mail send --to .", cwd=repo.sub)
    assert fish_complete(repo, f"git-korus-mail send --to {repo.web.parent}/w") == [str(repo.web)]


@needs_fish
def test_fish_git_subcommand(repo):
    assert fish_complete(repo, "git korus-mail s") == ["send", "status"]
    assert "web" in fish_complete(repo, "git korus-mail send --to ")
    # and nothing of ours leaks into other git subcommands
    assert "send" not in fish_complete(repo, "git worktree ")


def stub_command(tmp_path):
    """A PATH with an executable git-korus-mail stub, as after installation (shells
    only load completions for, or list, commands that exist)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "git-korus-mail"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    return f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"


@needs_fish
def test_fish_autoloads_for_dashed_command(repo, tmp_path):
    """Installed in a completions dir, fish loads it on first use."""
    d = repo.home / ".config" / "fish" / "completions"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(FISH_SCRIPT, d / "git-korus-mail.fish")
    env = dict(repo.env, PATH=stub_command(tmp_path))
    try:
        p = run(["fish", "-c", "complete -C $argv[1]", "git-korus-mail s"], repo, env=env)
    finally:
        (d / "git-korus-mail.fish").unlink()
    assert p.returncode == 0, p.stderr
    assert sorted(c.split("\t")[0] for c in p.stdout.splitlines()) == ["send", "status"]


# -- man page --------------------------------------------------------------------
def roff_plain(src):
    s = re.sub(r"\\f(?:[BIRP]|\(..|\[[^]]*\])", "", src)
    s = s.replace("\\-", "-").replace("\\&", "").replace("\\ ", " ").replace("\\(dq", '"')
    return s


def test_man_has_required_sections():
    text = MAN_PAGE.read_text(encoding="utf-8")
    for name in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "ADDRESSING", "DELIVERY", "FILES",
                 "GUARANTEES AND LIMITS", "EXIT STATUS", "ENVIRONMENT", "EXAMPLES", "SEE ALSO"):
        assert re.search(rf'^\.SH "?{name}"?$', text, re.M), name
    plain = roff_plain(text)
    assert re.search(r"^\.BR git-worktree \(1\)", plain, re.M), "SEE ALSO git-worktree(1)"
    for needle in ("129", "130", "CLAUDE_CONFIG_DIR", "NO_COLOR", "GIT_DIR",
                   "KORUS_MAIL_CRASH_AT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PID", "receipts/",
                   "quarantine/", "journal.jsonl", "4320", "10,000", "send --to ../web"):
        assert needle in plain, needle


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed (Debian: groff-base)")
def test_man_groff_warnings():
    p = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN_PAGE)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stderr


@pytest.mark.skipif(shutil.which("man") is None, reason="man not installed (Debian: man-db)")
def test_man_renders_within_80_columns(tmp_path):
    env = dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="", LANG="C.UTF-8", HOME=str(tmp_path))
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    p = subprocess.run(["man", "-l", str(MAN_PAGE)], capture_output=True, text=True, env=env,
                       timeout=TIMEOUT)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    plain = re.sub(r".\x08", "", p.stdout)
    assert "GUARANTEES AND LIMITS" in plain and "git korus-mail send" in plain
    too_wide = [ln for ln in plain.splitlines() if len(ln.expandtabs()) > 80]
    assert not too_wide, too_wide


# -- message ids for read, reply, cancel and release (issue 25) -------------------
@pytest.fixture(scope="module")
def mailed(tmp_path_factory):
    """A clone where main sent two messages to web, and `git korus-mail` is on PATH."""
    import sys
    r = Repo(tmp_path_factory.mktemp("completion-ids"))
    r.env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + r.env.get("PATH", "")
    r.ids = []
    for body in ("one", "two"):
        p = run([sys.executable, "-m", "git_korus_mail", "send", "--to", "../web", body], r)
        assert p.returncode == 0, p.stderr
        r.ids.append(p.stdout.split()[1])
    return r


def test_bash_offers_the_ids_each_command_takes(mailed):
    newest_first = mailed.ids[::-1]
    assert bash_complete(mailed, "git-korus-mail read ", cwd=mailed.web) == newest_first
    assert bash_complete(mailed, "git-korus-mail reply --json ", cwd=mailed.web) == newest_first
    assert bash_complete(mailed, "git-korus-mail cancel ", cwd=mailed.main) == newest_first
    assert bash_complete(mailed, "git-korus-mail cancel ", cwd=mailed.web) == []  # web sent nothing
    assert bash_complete(mailed, "git-korus-mail release ", cwd=mailed.main) == []  # no claim held
    assert bash_complete(mailed, f"git-korus-mail read {mailed.ids[0][:-3]}", cwd=mailed.web) == [mailed.ids[0]]
    after = bash_complete(mailed, f"git-korus-mail reply {mailed.ids[0]} ", cwd=mailed.web)  # the body
    assert not set(after) & set(mailed.ids)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh not installed (Debian: zsh)")
def test_zsh_offers_the_ids_each_command_takes(mailed, tmp_path):
    assert set(mailed.ids) <= set(zsh_complete(mailed, "git-korus-mail read ", cwd=mailed.web, tmp_path=tmp_path,
                                               env=mailed.env))
    assert set(mailed.ids) <= set(zsh_complete(mailed, "git-korus-mail cancel ", cwd=mailed.main,
                                               tmp_path=tmp_path, env=mailed.env))


@needs_fish
def test_fish_offers_the_ids_each_command_takes(mailed):
    assert fish_complete(mailed, "git-korus-mail read ", cwd=mailed.web) == sorted(mailed.ids)
    assert fish_complete(mailed, "git korus-mail cancel ", cwd=mailed.main) == sorted(mailed.ids)
    assert fish_complete(mailed, f"git-korus-mail reply {mailed.ids[0]} ", cwd=mailed.web) == []
