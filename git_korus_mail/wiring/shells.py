"""After a plain pipx install: the one line each shell needs before it completes our command.

pipx links the zsh function into <completion dir>/zsh/site-functions, which zsh does not
search by default, and fish's startup file (vendor_conf.d, which `git korus-mail <TAB>`
needs: fish loads a completion file by command name, and the command is `git`) not at
all. Neither can be fixed from inside the package, so install prints the one line each
shell needs, once, and README and the man page carry the same lines for pipx's defaults.
"""

import os

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import List, Tuple

ZSH_FUNCTION = "_git-korus-mail"
FISH_FILE = "git-korus-mail.fish"


def _share_dirs() -> "List[str]":
    """Where an installer linked our shell files: pipx's completion dir, then this venv's share/."""
    import sys
    dirs: "List[str]" = []
    if os.environ.get("PIPX_COMPLETION_DIR"):
        dirs.append(os.environ["PIPX_COMPLETION_DIR"])
    dirs.append(os.path.join(os.path.expanduser("~"), ".local", "share"))
    dirs.append(os.path.join(sys.prefix, "share"))
    return dirs


def _tilde(path: str) -> str:
    home = os.path.expanduser("~").rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def _shell_word(path: str) -> str:
    """`path` for the setup line: ~/ kept unquoted so the shell expands it, the rest quoted if need be."""
    from git_korus_mail.shell import sh_quote
    path = _tilde(path)
    safe = all(c.isalnum() or c in "._-/+~" for c in path) and "~" not in path[1:]
    if safe:
        return path
    if path.startswith("~/"):
        return "~/" + sh_quote(path[2:])
    return sh_quote(path)


def zsh_setup_line(site_functions: str) -> str:
    d = _shell_word(site_functions)
    # compinit again after adding the dir: this works wherever the line lands in .zshrc
    return f"echo 'fpath=({d} $fpath); autoload -Uz compinit && compinit' >> ~/.zshrc"


def fish_setup_line(vendor_file: str) -> str:
    # a link, not a copy: it follows the file an upgrade replaces
    conf = os.path.join(os.environ.get("XDG_CONFIG_HOME") or "~/.config", "fish", "conf.d")
    return f"mkdir -p {_shell_word(conf)} && ln -sf {_shell_word(vendor_file)} {_shell_word(conf)}/{FISH_FILE}"


def _fish_vendor_conf() -> bool:
    """Is our startup file in a vendor_conf.d that fish reads (a distribution package puts it there)?"""
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    dirs = [data_home] + (os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share").split(":")
    return any(d and os.path.isfile(os.path.join(d, "fish", "vendor_conf.d", FISH_FILE)) for d in dirs)


def setup_lines() -> "List[Tuple[str, str, str]]":
    """[(shell, why, line)] for each of zsh and fish that is installed here and not yet set up."""
    import shutil
    out: "List[Tuple[str, str, str]]" = []
    home = os.path.expanduser("~")
    if shutil.which("zsh"):
        for base in _share_dirs():
            d = os.path.join(base, "zsh", "site-functions")
            if os.path.isfile(os.path.join(d, ZSH_FUNCTION)):
                rc = os.path.join(os.environ.get("ZDOTDIR") or home, ".zshrc")
                try:
                    with open(rc, encoding="utf-8", errors="replace") as f:
                        text = f.read()
                except OSError:
                    text = ""
                default = d in ("/usr/share/zsh/site-functions", "/usr/local/share/zsh/site-functions",
                                "/usr/share/zsh/vendor-completions")
                if not default and d not in text and _tilde(d) not in text:
                    out.append(("zsh", f"zsh does not search {d}", zsh_setup_line(d)))
                break
    if shutil.which("fish"):
        conf = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"),
                            "fish", "conf.d", FISH_FILE)
        for base in _share_dirs():
            vendor = os.path.join(base, "fish", "vendor_completions.d", FISH_FILE)
            if os.path.isfile(vendor):
                if not os.path.exists(conf) and not _fish_vendor_conf():
                    out.append(("fish", "fish loads nothing of ours for `git korus-mail`", fish_setup_line(vendor)))
                break
    return out
