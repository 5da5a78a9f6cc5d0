"""One source for the command surface: the docopt usage blocks in git_korus_mail/cli.py.

Every command and option they define (and the fixed values a completion offers, which
tests/surface.py reads from the backticks in an option's description) must appear in the
man page, in each completion script, in docs/CONTRACT.md and in the README's tour; and
none of those may name a command or option the usage lacks. This file reads the files as
text, each with a parser made for its format (the SYNOPSIS and COMMANDS sections of the
man page, the case tables of the bash script, fish's `complete` lines, ...), so it needs
no shell. tests/test_completions.py then asks the real shells what they offer, driven by
the same surface.
"""

import re
from collections import Counter
from pathlib import Path

import pytest

import surface

ROOT = Path(__file__).resolve().parent.parent
MAN_PAGE = ROOT / "man" / "git-korus-mail.1"
CONTRACT = ROOT / "docs" / "CONTRACT.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
README = ROOT / "README.md"
BASH_SCRIPT = ROOT / "completions" / "git-korus-mail.bash"
ZSH_SCRIPT = ROOT / "completions" / "_git-korus-mail"
FISH_SCRIPT = ROOT / "completions" / "git-korus-mail.fish"
FISH_CONF_SCRIPT = ROOT / "completions" / "git-korus-mail-conf.fish"

# Options of other programs that these files name on purpose (git's, pipx's, Claude Code's).
# Anything else that looks like a long option must be one of ours.
FOREIGN = {
    "man": {"--git-common-dir", "--mirror", "--resume", "--stat"},
    "docs": {"--show-toplevel", "--resume", "--continue", "--mirror",  # git's; claude --resume
             "--no-daemon", "--managed-daemon", "--sandbox",  # codex's terminal UI, its daemon, its sandbox
             "--print", "--input-format",  # claude's (docs/HOOKS.md, the wake-up tier)
             "--dangerously-skip-permissions", "--permission-mode",  # claude's (docs/CLIENTS.md, its permission mode)
             "--approval-mode",  # gemini's (docs/CLIENTS.md, "The modes each client is tested in")
             "--prompt", "--allowed-tools", "--skip-trust",  # gemini's (docs/CLIENTS.md, "Gemini CLI")
             "--base", "--runs",  # bench/hotpath_ab.py's (docs/HOOKS.md, "Starting Python")
             "--no-verify"},  # git commit's, past the commit guard (docs/CLIENTS.md, "Reservations before an edit")
    "readme": {"--force", "--resume", "--continue"},            # pipx install --force; claude --resume
    "bash": {"--porcelain"},
    "zsh": {"--porcelain"},
    "fish": {"--porcelain", "--git-dir", "--work-tree", "--namespace", "--config-env"},
}

LONG_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


@pytest.fixture(scope="module")
def cmds():
    return surface.commands()


def expected_options(cmd):
    """{option: takes an argument} a completion offers for cmd: its long options."""
    return {o: arg for o, arg in cmd.options.items() if o.startswith("--")}


def long_options_in(text):
    return set(LONG_OPTION.findall(text))


# -- the usage itself ------------------------------------------------------------------
def test_usage_surface_is_what_the_cli_parses(cmds):
    """The derivation reads what docopt reads: spot-check it against literal values."""
    assert surface.subcommands() == ["send", "ask", "reply", "list", "who", "status", "inbox", "read", "log", "reserve", "cancel", "forward", "off",
                                     "on", "drain",
                                     "install", "uninstall", "doctor", "release", "completion", "remote"]
    assert cmds[None].options == {"--version": False, "-h": False, "--help": False}
    assert cmds["send"].values == {"--to": (".", "all"), "--kind": ("note", "handoff", "alert")}
    assert cmds["uninstall"].values == {"--scope": ("local", "user")}
    assert cmds["install"].values == {"--scope": ("local", "user"), "--client": ("claude", "codex", "gemini", "all")}
    assert cmds["drain"].values == {"--client": ("claude", "codex", "gemini")}
    assert cmds["forward"].values == {"--to": (".",)}
    assert cmds["completion"].choices == ("bash", "zsh", "fish")
    assert cmds["send"].end_of_options and cmds["send"].arguments == ("<body>",)
    assert {o for o, arg in cmds["send"].options.items() if arg} == \
        {"--repo", "--to", "--kind", "--ttl", "--session", "--wait"}


def test_top_level_usage_lists_every_command():
    # subcommands() is the top-level list; each name in it must have its own usage block
    assert sorted(surface.subcommands()) == sorted(surface.usage_docs().keys() - {None})


# -- man page --------------------------------------------------------------------------
def roff_plain(src):
    s = re.sub(r"\\f(?:[BIRP]|\(..|\[[^]]*\])", "", src)
    s = s.replace("\\-", "-").replace("\\&", "").replace("\\ ", " ").replace("\\(dq", '"')
    return s


def man_section(name):
    text = roff_plain(MAN_PAGE.read_text(encoding="utf-8"))
    return text.split(f"\n.SH {name}\n", 1)[1].split("\n.SH ", 1)[0]


def man_synopsis_lines():
    """Each .SY/.YS block as one usage line, in the usage's own notation (<arg>, dashed name)."""
    lines = []
    for block in re.findall(r"^\.SY (.*?)^\.YS", man_section("SYNOPSIS"), re.S | re.M):
        words = []
        for raw in block.splitlines():
            if raw.startswith(".I "):                     # an argument: <name>
                words.append(f"<{raw[3:].strip()}>")
            else:
                words.append(raw.replace('"', ""))
        line = " ".join(" ".join(words).split())
        # roff italics for option arguments (--to=\fIdest\fR) lost their markup: restore <dest>
        line = re.sub(r"(--[a-z-]+=)([a-z]+)", r"\1<\2>", line)
        line = re.sub(r"(?<![\w<-])(path|body|box|id|question)\]", r"<\1>]", line)
        line = re.sub(r"(?<![\w<-])pathspec\.\.\.", "<pathspec>...", line)  # reserve's repeated argument
        lines.append(line.replace("git korus-mail", surface.PROG, 1))
    return lines


def usage_lines(cmds):
    return [ln for cmd in cmds.values() for ln in cmd.lines]


def assert_same_lines(got, cmds, where):
    want = Counter(usage_lines(cmds))
    got = Counter(got)
    assert got == want, (f"{where} differs from the usage in cli.py;\n  missing: {sorted(want - got)}"
                         f"\n  not in the usage: {sorted(got - want)}")


def test_man_synopsis_is_the_usage(cmds):
    assert_same_lines(man_synopsis_lines(), cmds, "man page SYNOPSIS")


def man_subsections():
    """{heading: body} of the COMMANDS section, and the text before the first .SS."""
    parts = re.split(r"^\.SS (.*)$", man_section("COMMANDS"), flags=re.M)
    return parts[0], {h.strip('"'): body for h, body in zip(parts[1::2], parts[2::2])}


def man_items(body):
    """The options a subsection documents as .TP items, each with the name of its argument:
    {"--to": "<dest>", "--json": None, "--": None} (from `.BI --to= dest`, `.B --json`)."""
    items = {}
    for opt, arg in re.findall(r"^\.TP\n\.BI? (\S+?)(?:= (\S+))?$", body, re.M):
        items[opt] = f"<{arg}>" if arg else None
    return items


def top_heading(cmds):
    return ", ".join(cmds[None].options)                  # "--version, -h, --help"


def test_man_commands_section_has_one_subsection_per_command(cmds):
    _, subs = man_subsections()
    assert sorted(subs) == sorted(surface.subcommands() + [top_heading(cmds)])


def test_man_documents_each_commands_options_in_its_subsection(cmds):
    preamble, subs = man_subsections()
    # --repo is described once, before the first command, for every command that has it
    assert re.search(r"^\.BI --repo= path$", preamble, re.M), "COMMANDS must open with --repo"
    without_repo = [n for n in surface.subcommands() if "--repo" not in cmds[n].options]
    names = r"\s+and\s+".join(rf"(?:\.B )?{n}" for n in without_repo)
    every = rf"Every command (?:except|but)\s+{names}\s+accepts\n" if without_repo else r"Every command accepts\n"
    assert re.search(every, preamble), \
        f"the --repo paragraph must name the commands without it: {without_repo}"
    for name in surface.subcommands():
        cmd = cmds[name]
        want = {o: cmd.placeholders.get(o) for o in expected_options(cmd) if o != "--repo"}
        if cmd.end_of_options:
            want["--"] = None
        assert man_items(subs[name]) == want, name
    top = subs[top_heading(cmds)]
    for opt in cmds[None].options:
        assert re.search(rf"^\.B {re.escape(opt)}$", top, re.M), opt


def bold_words(body):
    """Words the man page sets in bold: .B word, .BR word , \\fBword\\fR."""
    words = set()
    for m in re.findall(r"^\.BR? (.*)$", body, re.M):
        words.update(w.strip('",;:()') for w in m.split())
    return words


def test_man_names_each_value_a_completion_offers(cmds):
    _, subs = man_subsections()
    addressing = man_section("ADDRESSING")
    for name in surface.subcommands():
        cmd = cmds[name]
        where = bold_words(subs[name]) | (bold_words(addressing) if "--to" in cmd.values else set())
        for opt, values in cmd.values.items():
            missing = [v for v in values if v not in where]
            assert not missing, f"man page: {name} {opt} does not name {missing}"
        assert set(cmd.choices) <= bold_words(subs[name]), name


def test_man_names_no_option_the_usage_lacks():
    named = long_options_in(roff_plain(MAN_PAGE.read_text(encoding="utf-8")))
    assert named - FOREIGN["man"] - surface.all_options() == set()
    assert surface.all_options() - {"-h"} <= named


def invocations(text):
    """(subcommand, [option words]) for every `git korus-mail ...` / `git-korus-mail ...` written
    out in a text, the words up to the end of the line or a shell operator."""
    out = []
    # not after "# ": a shell comment runs nothing (the stub's ID line, `# git-korus-mail hook stub, ID: ...`)
    for m in re.finditer(r"(?<!# )git[ -]korus-mail((?: +[^\s`|&;#\"']+)*)", text):
        words = m.group(1).split()
        if not words:
            continue
        sub = None if words[0].startswith("-") else words[0]
        out.append((sub, [w.split("=", 1)[0] for w in words if w.startswith("--") and w != "--"]))
    return out


def assert_invocations_known(text, cmds, where):
    seen = set()
    for sub, opts in invocations(text):
        if sub is not None and not re.fullmatch(r"[a-z]+", sub):
            continue                            # `git korus-mail <command> -h`, `...mail.fish`
        assert sub in cmds, f"{where}: `git korus-mail {sub}` is no command"
        unknown = [o for o in opts if o not in cmds[sub].options]
        assert not unknown, f"{where}: `git korus-mail {sub or ''}` has no {unknown}"
        seen.add(sub)
    return seen


def test_man_examples_use_only_the_usage(cmds):
    blocks = re.findall(r"^\.EX\n(.*?)^\.EE", roff_plain(MAN_PAGE.read_text(encoding="utf-8")), re.S | re.M)
    assert blocks
    assert_invocations_known("\n".join(blocks), cmds, "man page example")


# -- docs/CONTRACT.md --------------------------------------------------------------------
def contract_section():
    text = CONTRACT.read_text(encoding="utf-8")
    return text.split("\n## Command surface", 1)[1].split("\n## ", 1)[0]


def contract_usage_lines():
    lines = []
    for raw in contract_section().splitlines():
        if raw.startswith("    " + surface.PROG):
            lines.append(re.split(r"\s{2,}", raw.strip())[0])      # drop a trailing comment
    return lines


def test_contract_usage_is_the_usage(cmds):
    assert_same_lines(contract_usage_lines(), cmds, "docs/CONTRACT.md")


def test_contract_explains_each_value(cmds):
    prose = "\n".join(ln for ln in contract_section().splitlines() if not ln.startswith("    "))
    for cmd in cmds.values():
        for opt, values in cmd.values.items():
            for v in values:
                pattern = rf"`{re.escape(v)}`" if not v.isalnum() else rf"(?<![\w-]){v}(?![\w-])"
                assert re.search(pattern, prose), f"docs/CONTRACT.md: {cmd.name} {opt} value {v!r}"


def markdown_code(text):
    """The code of a markdown text: fenced blocks and `inline spans` (prose may say
    "git korus-mail follows it"; code says what to run)."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return "\n".join(fenced + inline)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_name_no_command_or_option_the_usage_lacks(cmds, doc):
    text = doc.read_text(encoding="utf-8")
    assert long_options_in(text) - FOREIGN["docs"] - surface.all_options() == set()
    assert_invocations_known(markdown_code(text), cmds, f"docs/{doc.name}")


# -- README --------------------------------------------------------------------------------
def readme_tour():
    text = README.read_text(encoding="utf-8")
    return text.split("\n## A short tour\n", 1)[1].split("\n## ", 1)[0]


def test_readme_tour_shows_every_command(cmds):
    shown = assert_invocations_known(markdown_code(readme_tour()), cmds, "README tour")
    assert shown - {None} == set(surface.subcommands())


def test_readme_names_no_command_or_option_the_usage_lacks(cmds):
    text = README.read_text(encoding="utf-8")
    assert_invocations_known(markdown_code(text), cmds, "README")
    assert long_options_in(text) - FOREIGN["readme"] - surface.all_options() == set()


# -- completion scripts, read as text --------------------------------------------------------
def code(path):
    """The script without its comment lines (comments may name anything)."""
    return "\n".join(ln for ln in path.read_text(encoding="utf-8").splitlines()
                     if not ln.lstrip().startswith("#"))


def test_fish_startup_copy_is_the_fish_script():
    # pyproject ships the fish definitions twice (vendor_completions.d and vendor_conf.d);
    # the second is a link, so the checks of the first cover both
    assert FISH_CONF_SCRIPT.read_bytes() == FISH_SCRIPT.read_bytes()


@pytest.mark.parametrize("shell,path", [("bash", BASH_SCRIPT), ("zsh", ZSH_SCRIPT), ("fish", FISH_SCRIPT)])
def test_completion_names_exactly_the_usage_options(shell, path):
    text = code(path)
    named = long_options_in(text)
    if shell == "fish":                 # complete -l to: fish's spelling of --to
        named |= {"--" + o for ln in fish_complete_lines() for o in re.findall(r"(?<!\S)-l ([a-z][a-z0-9-]*)", ln)}
    assert named - FOREIGN[shell] - surface.all_options() == set(), f"{path.name} names unknown options"
    missing = {o for o in surface.all_options() if o.startswith("--")} - named
    assert not missing, f"{path.name} does not complete {missing}"


def bash_case_table(function):
    """{pattern: body} of the first `case` in a bash function."""
    text = BASH_SCRIPT.read_text(encoding="utf-8")
    body = re.search(rf"^{function} \(\)\n\{{\n(.*?)^\}}", text, re.S | re.M).group(1)
    return dict(re.findall(r"^\t([\w|-]+)\)\s+(.*?)\s*;;", body, re.M | re.S))


def test_bash_commands_and_options_are_the_usage(cmds):
    text = BASH_SCRIPT.read_text(encoding="utf-8")
    listed = re.search(r"^__git_korus_mail_subcommands='([^']*)'", text, re.M).group(1).split()
    assert listed == surface.subcommands()
    table = {}
    for pattern, body in bash_case_table("__git_korus_mail_options").items():
        words = re.fullmatch(r"echo '([^']*)'", body).group(1).split()
        for name in pattern.split("|"):
            assert name not in table, f"{name} twice in __git_korus_mail_options"
            table[name] = {w.rstrip("="): w.endswith("=") for w in words}
    want = {n: expected_options(cmds[n]) for n in surface.subcommands() if cmds[n].options}
    assert table == want
    valued = re.search(r"^__git_korus_mail_valued=' ([^']*) '", text, re.M).group(1).split()
    assert set(valued) == {o for o in surface.all_options() if o.startswith("--") and
                           any(c.options.get(o) for c in cmds.values())}
    top = re.search(r"-\*\) __git_korus_mail_comp '([^']*)'", text).group(1).split()
    assert sorted(top) == sorted(cmds[None].options)


def zsh_command_list():
    text = ZSH_SCRIPT.read_text(encoding="utf-8")
    block = re.search(r"^\s*commands=\(\n(.*?)^\s*\)", text, re.S | re.M).group(1)
    return re.findall(r"^\s*'([\w-]+):", block, re.M)


def test_zsh_commands_are_the_usage():
    assert zsh_command_list() == surface.subcommands()
    text = ZSH_SCRIPT.read_text(encoding="utf-8")
    branches = set()
    for pattern in re.findall(r"^\s+\(([\w|]+)\)\n\s+_arguments", text, re.M):
        branches.update(pattern.split("|"))
    assert branches == set(surface.subcommands())


def fish_complete_lines():
    """Every `complete` command of the fish script, continuation lines joined."""
    text = code(FISH_SCRIPT).replace("\\\n", " ")
    return [" ".join(ln.split()) for ln in text.splitlines() if ln.strip().startswith("complete ")]


def test_fish_commands_and_options_are_the_usage(cmds):
    text = FISH_SCRIPT.read_text(encoding="utf-8")
    listed = re.search(r"^set -g __git_korus_mail_commands (.*)$", text, re.M).group(1).split()
    assert listed == surface.subcommands()
    lines = fish_complete_lines()
    assert not [ln for ln, n in Counter(lines).items() if n > 1], "a complete line written twice"
    offered_commands, per_command, choices, top = [], {}, {}, set()
    for line in lines:
        longs = re.findall(r"(?<!\S)-l ([a-z][a-z0-9-]*)", line)
        shorts = re.findall(r"(?<!\S)-s ([a-zA-Z])", line)
        using = re.search(r"__git_korus_mail_using ([\w ]+?)(?:;|'|$)", line)
        if " -n $top " in line:
            if longs or shorts:
                top.update(["--" + o for o in longs] + ["-" + s for s in shorts])
            else:
                offered_commands += re.findall(r"(?<!\S)-a (\w+)", line)
        elif using and longs:
            for name in using.group(1).split():
                per_command.setdefault(name, {}).update({"--" + o: " -x " in f" {line} " for o in longs})
        elif using and "-a '(" in line:  # a positional's computed candidates: the ids
            continue
        elif using:                     # a positional's fixed words: completion bash zsh fish
            for name in using.group(1).split():
                choices.setdefault(name, []).extend(re.search(r"-a '([^']*)'", line).group(1).split())
    assert offered_commands == surface.subcommands()
    assert choices == {n: list(cmds[n].choices) for n in surface.subcommands() if cmds[n].choices}
    assert top == set(cmds[None].options)
    want = {n: expected_options(cmds[n]) for n in surface.subcommands() if cmds[n].options}
    assert per_command == want
    valued = re.search(r"^\s+case (--repo .*)$", text, re.M).group(1).split()
    assert set(valued) == {o for c in cmds.values() for o, arg in c.options.items() if arg}
