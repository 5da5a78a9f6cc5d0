"""Caps in UTF-16 code units, the unit Claude Code's 10,000 inline limit counts (a JavaScript
string's length): a character outside the BMP is two. Observed with 2.1.332: 4,022 code points
that were 8,022 units went inline, 11,022 units were saved to a file and only previewed.

Lengths here are computed outside the product: len(text.encode("utf-16-le")) // 2.
"""

import pytest

from helpers import context_of, hook, launch_dir, run_cli
from git_korus_mail.core import render
from git_korus_mail.store import message

NOW = 1_800_000_000.0
FULL = "/repo/.git/mail/box/web-0123456789abcdef01234567/inbox/x.json"
SEEN = "/repo/.git/mail/box/web-0123456789abcdef01234567/seen/x.json"
INLINE_LIMIT = 10_000  # Claude Code 2.1.332, in UTF-16 units


def u16(text):
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def msg(body, sender=None):
    return message.build(body, "/repo/web", "web-0123", sender or {"path": "/repo/api", "branch": "main",
                                                                    "session": "sess-1"}, now=NOW - 60)


EMOJI = "\U0001F600"       # two UTF-16 units
EMOJI_BODIES = {
    "emoji-lines": "\n".join(EMOJI * 150 for _ in range(20)),           # 150 emoji = 300 units a line
    "one-emoji-line": EMOJI * 5000,
    "mixed": "\n".join(("ab" + EMOJI + "é") * 60 for _ in range(30)),
    "flags-and-skin-tones": "\n".join("\U0001F1EB\U0001F1F7\U0001F44D\U0001F3FD" * 40 for _ in range(40)),
}


@pytest.mark.parametrize("line", [EMOJI * 500, ("a" + EMOJI) * 300, EMOJI * 10 + "\x1b" * 10 + EMOJI * 300])
def test_escape_line_caps_utf16_units(line):
    for cap in list(range(0, 60)) + [199, 200, 201, 399, 400, 401]:
        text, cut = render.escape_line(line, cap)
        assert u16(text) <= cap, (cap, u16(text))
        full, _ = render.escape_line(line, 10 ** 6)
        assert cut == (u16(full) > cap)


@pytest.mark.parametrize("name", sorted(EMOJI_BODIES))
def test_render_message_caps_utf16_units(name):
    m = msg(EMOJI_BODIES[name])
    for cap in (200, 500, 1000, 2999, 3000):
        r = render.render_message(m, "1/1", "abcdef012345", FULL, SEEN, cap, NOW)
        assert r is None or u16(r.text) <= cap, (cap, u16(r.text))


def test_a_block_exactly_at_the_cap_is_whole_and_one_unit_less_is_cut():
    m = msg("\n".join(EMOJI * 100 for _ in range(5)))  # 5 lines of 200 units, all under the line cap
    whole = render.render_message(m, "1/1", "abcdef012345", FULL, SEEN, 10 ** 6, NOW)
    assert not whole.truncated
    size = u16(whole.text)
    assert size > len(whole.text)  # the emoji count twice
    at = render.render_message(m, "1/1", "abcdef012345", FULL, SEEN, size, NOW)
    assert at is not None and not at.truncated and at.text == whole.text
    below = render.render_message(m, "1/1", "abcdef012345", FULL, SEEN, size - 1, NOW)
    assert below is None or (below.truncated and u16(below.text) <= size - 1)


def test_an_emoji_heavy_batch_stays_under_the_event_cap_in_utf16_units():
    items = [(msg(body), FULL, SEEN) for body in EMOJI_BODIES.values()] * 3
    text, blocks, deferred = render.render_batch(items, "/repo/web", NOW, 0, now=NOW)
    assert blocks and deferred == len(items) - len(blocks)
    assert u16(text) <= render.EVENT_CAP < INLINE_LIMIT
    for b in blocks:
        assert u16(b.text) <= render.MESSAGE_CAP


def test_emoji_mail_through_the_hook_stays_inline(clone):
    """The observed failure: an emoji-heavy body rendered to 11,204 units and reached the model as a
    preview. Each event's context must stay under 10,000 units, and every message gets shown whole
    or cut with a note, over as many events as it takes."""
    bodies = [EMOJI_BODIES["emoji-lines"], EMOJI_BODIES["mixed"], EMOJI * 4000, EMOJI_BODIES["flags-and-skin-tones"]]
    ids = [run_cli("send", "--to", "../web", "-", cwd=clone.main, input=b, check=True).stdout.split()[1]
           for b in bodies]
    seen = set()
    for event in ["SessionStart"] + ["PostToolUse"] * 6:
        answer, _ = hook(event, clone.web, "s1")
        ctx = context_of(answer)
        if ctx is None:
            continue
        assert u16(ctx) <= render.EVENT_CAP < INLINE_LIMIT, u16(ctx)
        seen.update(i for i in ids if i in ctx)
    assert seen == set(ids)


# -- one event's memory: read no more of a message than can be rendered -----------------------------
def _write_huge(clone, count, size):
    import time as _time
    from git_korus_mail.core import keys
    run_cli("send", "--to", "../web", "the small one", cwd=clone.main, check=True)
    inbox = clone.mail_root / "box" / keys.key_for(str(clone.web)).name / "inbox"
    ids = []
    for i in range(count):
        m = message.build("y" * size, str(clone.web), "k", {"path": str(clone.main)},
                          now=_time.time() - 100 + i * 1e-3)
        (inbox / (m["id"] + ".json")).write_bytes(message.encode(m))
        ids.append(m["id"])
    return ids


# Runs the drain and prints its peak RSS. A separate small launcher, because Linux carries a
# process's peak across fork and exec: a drain forked from pytest itself would report pytest's
# own peak (114 MB late in a whole-suite run, 67 MB for the drain alone).
_PEAK_LAUNCHER = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdin=sys.stdin, stdout=sys.stdout, stderr=subprocess.DEVNULL)\n"
    "_pid, status, usage = os.wait4(p.pid, 0)\n"
    "sys.stderr.write(f'{status} {usage.ru_maxrss}')\n"
)


def _drain_peak_kib(cwd, event="SessionStart", session="s1"):
    import json
    import subprocess
    import tempfile
    from helpers import PYTHON
    payload = json.dumps({"session_id": session, "transcript_path": "", "cwd": str(cwd),
                          "hook_event_name": event, "source": "startup"}).encode()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as inp:
        inp.write(payload)
        inp.seek(0)
        proc = subprocess.run([PYTHON, "-c", _PEAK_LAUNCHER, PYTHON, "-m", "git_korus_mail", "drain"], cwd=cwd,
                              stdin=inp, stdout=out, stderr=subprocess.PIPE, check=True)
        status, peak = (int(x) for x in proc.stderr.split())
        assert status == 0
        out.seek(0)
        return peak, json.loads(out.read() or b"null")


def test_one_event_reads_huge_messages_without_holding_them(clone):
    """16 messages of 7.5 MiB: held whole, one event peaked at 140 MB; trimmed as parsed and
    with a byte budget per event, it stays under 100 MB (one file's parse and the interpreter)."""
    _write_huge(clone, 16, 7_500_000)
    peak, answer = _drain_peak_kib(clone.web)
    assert peak < 100 * 1024, f"{peak / 1024:.0f} MB"
    ctx = answer["hookSpecificOutput"]["additionalContext"]
    assert "more messages wait" in ctx  # the rest are deferred to later events, never dropped


def test_a_trimmed_body_still_says_how_long_it_is(clone):
    import json
    from git_korus_mail.core import keys
    [mid] = _write_huge(clone, 1, 1_000_000)
    answer, _ = hook("SessionStart", clone.web, "s1")
    ctx = context_of(answer)
    assert "of 1000000 characters shown; whole message:" in ctx
    marker = clone.mail_root / "box" / keys.key_for(str(clone.web)).name / "shown" / launch_dir("s1") / mid
    obs = json.loads(marker.read_text())
    assert obs["truncated"] is True and obs["body_chars"] == 1_000_000


def test_a_trimmed_message_renders_exactly_as_the_whole_one():
    import random
    rng = random.Random(16)
    alphabet = ["a", "b", " ", "\n", "\r", "\r\n", "\x1b", EMOJI, "é", "\u202e", "\U000E0041"]
    bodies = ["\x1b" * 5000 + "\n" + "\U000E0041" * 5000, "\n" * 5000, "\r\n" * 3000, "x" * 10_000 + "\r",
              "\n".join("L%d " % i + "z" * 500 for i in range(2000))]
    for _ in range(150):
        bodies.append("".join(rng.choice(alphabet) * rng.choice([1, 1, 3, 50, 450]) for _ in range(rng.randint(1, 60))))
    for body in bodies:
        m = msg(body)
        light, view = render.trim(m)
        assert light["body"] == ""
        for cap in (120, 700, 3000):
            whole = render.render_message(m, "1/1", "abcdef012345", FULL, SEEN, cap, NOW)
            cut = render.render_message(light, "1/1", "abcdef012345", FULL, SEEN, cap, NOW, view=view)
            assert (whole is None) == (cut is None)
            if whole is not None:
                assert (cut.text, cut.truncated, cut.body_chars) == (whole.text, whole.truncated, whole.body_chars)
