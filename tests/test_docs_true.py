"""Issue 25, "Docs that are wrong": what README.md, the man page, docs/DESIGN.md and
docs/STORE.md claim about the code, checked against the code, so each claim stays true."""

import re
from pathlib import Path

import pytest

import test_layers
from git_korus_mail.clients.claude import protocol as claude

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
MAN = (ROOT / "man" / "git-korus-mail.1").read_text()
DESIGN = (ROOT / "docs" / "DESIGN.md").read_text()
STORE = (ROOT / "docs" / "STORE.md").read_text()
WORDS = {5: "five", 6: "six", 7: "seven"}


def _man_text(roff):
    """The words of a roff fragment: requests and font escapes dropped, `\\-` a hyphen."""
    text = re.sub(r"^\.(B|BR|RB|BI|I)\s+", "", roff, flags=re.M)
    text = re.sub(r"^\.[A-Z]+.*$", "", text, flags=re.M)
    return " ".join(text.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace('"', "").split())


def test_man_names_every_client_and_every_event_install_wires():
    name = MAN.split(".SH NAME", 1)[1].split(".SH", 1)[0]
    assert "between Claude Code sessions" not in name and "Codex CLI" in name
    install = _man_text(MAN.split(".SS install", 1)[1].split(".TP", 1)[0])
    n = len(claude.EVENTS)
    assert f"for {WORDS[n]} events" in install, install
    for event in claude.EVENTS:
        assert event in install, (event, install)
    assert "--urgent" in install and "drain --watch" in install
    delivery = _man_text(MAN.split(".SH DELIVERY", 1)[1].split(".TP", 1)[0])
    assert f"for {WORDS[n]} Claude Code hook events" in delivery, delivery


def test_man_does_not_say_sessionstart_shows_all_mail():
    assert "Shows all mail queued" not in MAN
    assert "as much of it as fits in one event's context" in _man_text(MAN)


def test_man_and_readme_say_where_git_help_finds_the_page():
    assert "MANPATH" in MAN.split(".SH ENVIRONMENT", 1)[1]
    assert 'export MANPATH="$HOME/.local/share/man:$MANPATH"' in README
    assert '"man/git-korus-mail.1" = "share/man/man1/git-korus-mail.1"' in (ROOT / "pyproject.toml").read_text()


def _sh_blocks(text):
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def test_readme_install_starts_from_a_fresh_machine():
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = _sh_blocks(setup)
    assert blocks[0].startswith("git clone "), blocks[0]  # a checkout first: `pipx install .` needs one
    assert "pipx install ." in blocks[1] and "cd " in blocks[0]
    assert "python3-venv" in setup  # stock Debian and Ubuntu lack the venv module
    path_line = next(b for b in blocks if "export PATH" in b)
    assert "~/.zshrc" in path_line and "~/.bashrc" in path_line, path_line  # zsh never reads ~/.profile


def test_readme_layer_map_follows_the_layers_the_layer_test_ranks():
    layout = README.split("## Layout", 1)[1]
    bullets = re.findall(r"^- `([a-z_]+)(?:\.py|/)`", layout, flags=re.M)
    assert bullets[:7] == ["cli", "commands", "clients", "wiring", "core", "relay", "store"], bullets
    ranks = [test_layers.RANK[test_layers.layer_of(b)] for b in bullets[:7]]
    assert ranks == sorted(ranks, reverse=True) and len(set(ranks)) == len(ranks), ranks  # one bullet a layer
    assert test_layers.layer_of("wiring") == "wiring"  # its own layer, between clients and core (issue 24)


def test_readme_names_the_module_that_builds_typed_arguments():
    assert "`commands/params.py` turns docopt's dict into each command's typed arguments" in " ".join(README.split())
    assert "def typed(" in (ROOT / "git_korus_mail" / "commands" / "params.py").read_text()
    cli = (ROOT / "git_korus_mail" / "cli.py").read_text()
    assert "from git_korus_mail.commands.params import typed" in cli


PATH_REF = re.compile(r"`((?:store|core|commands|clients|wiring)/[a-z_/]+\.py)")


@pytest.mark.parametrize("name,text", [("README.md", README), ("DESIGN.md", DESIGN), ("STORE.md", STORE)])
def test_every_module_a_doc_names_exists(name, text):
    missing = sorted({p for p in PATH_REF.findall(text) if not (ROOT / "git_korus_mail" / p).is_file()})
    assert not missing, (name, missing)


def test_design_names_the_file_that_consumes_and_the_wake_tier_as_built():
    assert "not built yet" not in DESIGN
    # the consume is a module function of store/moves.py (issue 24): DESIGN names it so
    assert "`store.moves.consume`" in DESIGN
    assert "\ndef consume(" in (ROOT / "git_korus_mail" / "store" / "moves.py").read_text()
    assert "Box.consume" not in DESIGN and "store/files.Box.consume" not in DESIGN
    assert (ROOT / "git_korus_mail" / "core" / "wake.py").is_file()


def test_store_md_names_every_box_subdirectory_used_outside_the_store():
    """STORE.md: nothing outside the store opens a file there, and the subdirectory names code
    outside it passes to a Box are each in its Layout."""
    layout = STORE.split("## Layout", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\s+([a-z_]+)(?:/|\s)", layout, flags=re.M))
    used = set()
    for path in (ROOT / "git_korus_mail").rglob("*.py"):
        if "store" in path.relative_to(ROOT / "git_korus_mail").parts[:1]:
            continue
        used |= set(re.findall(r'\.(?:names|count|path_of|has|open_sub|ensure_sub)\("([a-z_]+)"', path.read_text()))
    assert used and used <= documented, sorted(used - documented)
    assert "nothing outside it opens a file there" in " ".join(STORE.split())
