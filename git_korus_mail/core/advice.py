"""How to reinstall git-korus-mail on THIS machine: the advice every fault message gives.

`pipx install git-korus-mail` is no advice where pipx is not on PATH (the README's pipx
lives in ~/.cache/korus-pipx) or the package is on no index (installed from a checkout).
So the command is worked out from what installed the running copy: its venv (a pipx venv
has pipx_metadata.json), the pipx that made it, and the source it came from (PEP 610's
direct_url.json). Install bakes the result into the hook stub, because when the stub
needs it the package may be unable to run at all.
"""

import json
import os
import shutil
import sys

from git_korus_mail.shell import sh_quote

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Optional

DIST = "git-korus-mail"
# Where the README puts its own pipx: a venv, so a Python upgrade breaks it as well.
README_PIPX_VENV = os.path.join("~", ".cache", "korus-pipx")


def _home_relative(path: str) -> str:
    """`~/...` for a path under HOME: the advice reads as the README does, and still works."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")):]
    return path


def _q(path: str) -> str:
    """Shell-quote a path, keeping a leading ~/ outside the quotes so the shell expands it."""
    path = _home_relative(path)
    if path.startswith("~/"):
        rest = path[2:]
        safe = all(c.isalnum() or c in "._-/+" for c in rest)
        return "~/" + (rest if safe else sh_quote(rest))
    return sh_quote(path) if not all(c.isalnum() or c in "._-/+" for c in path) else path


def source_spec(prefix: "Optional[str]" = None) -> str:
    """What pip or pipx installs this from again: a local path (the checkout or wheel it came
    from, `-e` for an editable install) or the package name when it came from an index."""
    try:
        from importlib import metadata
        text = metadata.distribution(DIST).read_text("direct_url.json")
    except Exception:  # noqa: BLE001 - no metadata is no reason to give no advice
        text = None
    if text:
        try:
            data = json.loads(text)
        except ValueError:
            data = {}
        url = data.get("url") or ""
        if url.startswith("file://"):
            from urllib.parse import unquote
            path = unquote(url[len("file://"):])
            editable = bool((data.get("dir_info") or {}).get("editable"))
            return ("-e " if editable else "") + _q(path)
        if url:
            return sh_quote(url)
    return DIST


def _pipx_metadata(prefix: str) -> "Any":  # pipx_metadata.json as parsed: any JSON value, or None
    try:
        with open(os.path.join(prefix, "pipx_metadata.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _is_venv(d: str) -> bool:
    return os.path.isfile(os.path.join(d, "pyvenv.cfg"))


def _pipx_command(spec: str) -> str:
    """The commands that (re)make a working pipx and install `spec` with it."""
    on_path = shutil.which("pipx")
    if on_path:
        real = os.path.realpath(on_path)
        venv = os.path.dirname(os.path.dirname(real))
        if not _is_venv(venv):  # a system pipx (apt, brew): it survives a Python upgrade
            return f"pipx install --force {spec}"
        pipx_venv = venv
    else:
        # not on PATH: the README's own pipx (made anew if it is not there either)
        pipx_venv = os.path.expanduser(README_PIPX_VENV)
    # A pipx in a venv breaks with its base Python, exactly when this advice is needed: remake
    # its interpreter links first (venv on an existing venv keeps what is in it), then pipx.
    v = _q(pipx_venv)
    return (f"python3 -m venv {v} && {v}/bin/pip install -q pipx && "
            f"{v}/bin/pipx install --force {spec}")


def reinstall_command(helper: "Optional[str]" = None, repo: "Optional[str]" = None) -> str:
    """One shell line that reinstalls the running copy and rewires the clone `repo`."""
    prefix = sys.prefix
    spec = source_spec(prefix)
    meta = _pipx_metadata(prefix)
    if meta is not None:
        main = (meta.get("main_package") or {}).get("package_or_url")
        if main and spec == DIST and main != DIST:
            spec = _q(main) if os.path.exists(main) else sh_quote(main)
        cmd = _pipx_command(spec.replace("-e ", "--editable ", 1) if spec.startswith("-e ") else spec)
    elif prefix != getattr(sys, "base_prefix", prefix):
        # a plain venv (a developer's .venv): remake its interpreter, reinstall into it
        v = _q(prefix)
        cmd = f"python3 -m venv {v} && {v}/bin/pip install -q {spec}"
    else:
        cmd = f"python3 -m pip install --user {spec}"
    if helper:
        cmd += f" && {_q(helper)} install" + (f" --repo {_q(repo)}" if repo else "")
    return cmd


def advice(helper: "Optional[str]" = None, repo: "Optional[str]" = None) -> str:
    """The sentence fault messages end with."""
    return f"reinstall it: {reinstall_command(helper, repo)}"
