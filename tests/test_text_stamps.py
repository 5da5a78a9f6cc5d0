"""The stamps a person reads (commands/text.py `_stamps_for_people`) are rewritten by hand, not
with `re` (issue 26: importing it was 9 ms of CPU in every send, ask and reply). The pattern it
replaces is kept here as the reference, and the two must agree on every line."""

import random
import re

import pytest

from git_korus_mail.commands import text

PATTERN = re.compile(r"\b(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d{1,9})?Z")


def reference(line):
    if "T" not in line or "Z" not in line:
        return line
    return PATTERN.sub(r"\1 \2Z", line)


CASES = [
    "queued, as of 2026-12-02T04:24:08.123456Z: a session there is working",
    "2026-12-02T04:24:08Z",
    "at 2026-12-02T04:24:08.1Z and 2026-12-03T05:06:07.123456789Z, not 2026-12-03T05:06:07.1234567890Z",
    "id 20261202T042408.358777Z-p29708-792560aa973014ca (a message id is left alone)",
    "x2026-12-02T04:24:08Z (no word boundary)", "_2026-12-02T04:24:08Z", "-2026-12-02T04:24:08Z",
    "2026-12-02T04:24:08.Z", "2026-12-02T04:24:0Z", "2026-12-02T04:24:08.123", "T Z", "TZ", "",
    "\u0662\u0660\u0662\u0666-12-02T04:24:08Z (Arabic-Indic digits are \\d too)",
    "é2026-12-02T04:24:08Z", "2026-12-02T04:24:08Z2026-12-02T04:24:08Z", "2026-12-02TT04:24:08Z",
    "(2026-12-02T04:24:08.5Z)", "2026-12-02T04:24:08.000000Zulu",
]


@pytest.mark.parametrize("line", CASES)
def test_the_stamps_a_person_reads_are_rewritten_as_the_pattern_rewrites_them(line):
    assert text._stamps_for_people(line) == reference(line)


def test_random_lines_agree_with_the_pattern():
    rng = random.Random(26)
    alphabet = "0123456789-:.TZ a_\u0663é"
    stamp = "2026-12-02T04:24:08"
    for _ in range(20000):
        parts = []
        for _ in range(rng.randint(0, 4)):
            if rng.random() < 0.5:
                s = stamp
                if rng.random() < 0.3:  # one character changed
                    k = rng.randrange(len(s))
                    s = s[:k] + rng.choice(alphabet) + s[k + 1:]
                s += rng.choice(["", ".", "." + "1" * rng.randint(1, 11)]) + rng.choice(["Z", "", "Zx", " "])
                parts.append(s)
            else:
                parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))))
        line = "".join(parts)
        assert text._stamps_for_people(line) == reference(line), line


def test_a_send_loads_no_re():
    """What the rewrite is for: a command's person lines load neither re nor enum."""
    import subprocess
    import sys
    code = ("import sys; from git_korus_mail.commands import text; "
            "text._stamps_for_people('queued, as of 2026-12-02T04:24:08.123456Z'); "
            "sys.stdout.write(' '.join(m for m in ('re', 'enum', 'signal') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "", out


START = "import sys; from git_korus_mail.cli import main; raise SystemExit(main())"


@pytest.mark.parametrize("command", ["send", "ask"])
def test_send_and_ask_load_neither_re_nor_enum(clone, command):
    """A send and an ask, real processes, print their person lines (stamps included) and set
    their Ctrl-C handler (shell.on_sigint) without loading re, enum or the signal module."""
    import subprocess
    import sys
    args = [command, f"--to={clone.web}"] + (["--timeout=1"] if command == "ask" else []) + ["--", "hello"]
    # -c, not -m: runpy itself loads typing and re on 3.9 (importlib.util); the console script
    # and the hook stub start the package without it
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", START, *args], cwd=str(clone.main),
                          capture_output=True, text=True)
    assert proc.returncode in (0, 2), proc.stderr
    assert "as of 2026" in proc.stdout or "as of 20" in proc.stdout  # a stamp was printed for people
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "git_korus_mail.commands.text" in loaded  # the measurement itself works
    assert not loaded & {"re", "enum", "signal"}, sorted(loaded & {"re", "enum", "signal"})
