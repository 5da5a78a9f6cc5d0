"""A second client, for tests only: proof that a client is one module beside clients/claude/.

Its protocol is its own and deliberately unlike Claude Code's: stdin is `key value` lines
(`event`, `session`, `cwd`), the launch's process id comes from FAKE_CLIENT_PID, and the answer
is plain text: `to-model:` followed by the context, and/or one `to-user: <notice>` line. Its
events are hello (opens a launch), look (a turn), done (the turn is over: consume) and bye.
It implements the interface commands/drain.serve asks of a client's hook-protocol module, and
nothing in git_korus_mail knows it exists.
"""

from git_korus_mail.store.launch import Launch, NoLaunch

NAME = "fake"
PHASE_OF = {"hello": ("show", True, False), "look": ("show", False, False),
            "done": ("consume", False, False), "bye": ("end", False, False)}


class BadPayload(Exception):
    pass


class Payload:
    def __init__(self, event, session, cwd):
        self.event, self.session, self.cwd = event, session, cwd


def read_payload(data):
    fields = {}
    for line in data.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(" ")
        fields[key] = value
    for key in ("event", "session", "cwd"):
        if not fields.get(key):
            raise BadPayload(f"no {key} line")
    return Payload(fields["event"], fields["session"], fields["cwd"])


def launch_of(environ):
    raw = environ.get("FAKE_CLIENT_PID", "")
    if not raw.isdigit():
        return NoLaunch("FAKE_CLIENT_PID is not set")
    return Launch.of_process(NAME, int(raw))


def drain_facts(payload, environ):
    from git_korus_mail.core.drain_context import DrainFacts
    phase, opening, frequent = PHASE_OF.get(payload.event, (None, False, False))
    return DrainFacts(phase, payload.session, payload.cwd, label=payload.event, opening=opening, frequent=frequent,
                      launch=launch_of(environ), account=environ.get("FAKE_CLIENT_HOME") or None)


def session_of(environ):
    return environ.get("FAKE_CLIENT_SESSION")


def context_output(event, text, notice=None):
    out = "to-model:\n" + text
    return out + ("\nto-user: " + notice if notice else "")


def user_notice_output(text):
    return "to-user: " + text


def fault_output(event, text):
    return user_notice_output(text)


def answer(event, context, notice, shown=None):
    if context and PHASE_OF.get(event, ("",))[0] == "show":
        if shown:  # the person's line: its own channel, after the notice
            notice = (notice + "\n" if notice else "") + shown.line()
        return context_output(event, context, notice)
    if notice:
        return user_notice_output(notice)
    return None
