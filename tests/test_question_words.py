"""Issue 25, "Questions": a question shown long after its sender's ask stopped waiting is not
rendered as if that ask still waited; what the model reads is true as of the show."""

from asking import start_ask, wait_question, working
from helpers import context_of, hook

S = "sess-web-late"


def test_a_question_shown_after_its_ask_timed_out_does_not_say_the_ask_waits(clone):
    working(clone, session="sess-web-early")  # someone at work there, so the ask waits, then times out
    p = start_ask(clone, "still there?", timeout=1)
    [qid] = wait_question(clone)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2, (out, err)  # the ask gave up: nobody waits any more
    answer, _ = hook("SessionStart", clone.web, S)
    text = context_of(answer)
    assert qid in text and "still there?" in text, text
    assert "ask waits" not in text, text
    assert "the answer reaches its sender as mail, whether or not its ask still waits" in " ".join(text.split())
    assert f"git korus-mail reply {qid} -- " in text
