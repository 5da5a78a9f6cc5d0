"""Issue 25, "Width": every line a person reads fits in 100 columns, in a clone whose paths are
long and hold a space and `ü` (paths are cut from their start, as `status` does); `--json`
keeps every path whole."""

import json
import re

import pytest

from helpers import Clone, hook, run_cli
from install_fixtures import install

LIMIT = 100
ESC = re.compile(r"\x1b\[[0-9;]*m")


def columns(text):
    from git_korus_mail.commands.mailtext import columns as cols
    return cols(ESC.sub("", text))


def too_wide(text):
    """Lines over the limit, but for a command a person copies (a fix, a setup line): it is
    written whole, since a cut would make it wrong."""
    lines = text.splitlines()
    copied = {i for i, line in enumerate(lines) if line.startswith("         fix: ")
              or (i and lines[i - 1].endswith("set it up once with:"))}
    return [(columns(line), line) for i, line in enumerate(lines) if columns(line) > LIMIT and i not in copied]


@pytest.fixture
def long_clone(tmp_path):
    base = tmp_path / ("a rather long folder name with spaces and ü in it " * 2).strip()
    base.mkdir()
    c = Clone(base)
    c.web = c.add_worktree("wörk tree ü " + "x" * 40, branch="wörk-" + "x" * 40)
    return c


def _all_output(c):
    """(name, text) for what each command prints to a person."""
    outs = [("install", install(c.main).stdout + install(c.main).stderr)]
    hook("SessionStart", c.web, "s-" + "w" * 60)
    hook("UserPromptSubmit", c.web, "s-" + "w" * 60)
    sent = run_cli("send", "--to", str(c.web), "--", "hello", cwd=c.main, check=True)
    outs.append(("send", sent.stdout + sent.stderr))
    msg_id = sent.stdout.split()[1].rstrip(":")
    for args, cwd in ((("who",), c.main), (("list",), c.main), (("status",), c.main), (("inbox",), c.web),
                      (("read", msg_id), c.web), (("doctor",), c.main), (("cancel", msg_id), c.main),
                      (("status",), c.main), (("ask", f"--to={c.web}", "--timeout=1", "--", "there?"), c.main),
                      (("uninstall",), c.main)):
        proc = run_cli(*args, cwd=cwd)
        outs.append((" ".join(args), proc.stdout + proc.stderr))
    return outs


def test_every_line_a_person_reads_fits_100_columns(long_clone):
    assert len(str(long_clone.web)) > 150  # the paths alone are wider than the limit
    wide = {name: too_wide(text) for name, text in _all_output(long_clone)}
    assert not any(wide.values()), json.dumps({k: v for k, v in wide.items() if v}, indent=1, ensure_ascii=False)


def test_json_keeps_the_whole_path(long_clone):
    install(long_clone.main)
    hook("SessionStart", long_clone.web, "s-json")
    data = json.loads(run_cli("who", "--json", cwd=long_clone.main, check=True).stdout)
    assert str(long_clone.web) in json.dumps(data, ensure_ascii=False)
