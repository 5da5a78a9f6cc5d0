"""Caps in UTF-16 code units, the unit Claude Code's 10,000 inline limit counts (a JavaScript
string's length): a character outside the BMP is two. Observed with 2.1.332: 4,022 code points
that were 8,022 units went inline, 11,022 units were saved to a file and only previewed.

Lengths here are computed outside the product: len(text.encode("utf-16-le")) // 2.
"""

import pytest

from helpers import context_of, hook, run_cli
from git_korus_mail import message, render

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
