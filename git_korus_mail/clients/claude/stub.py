"""The stub Claude Code's hook entries call (`<mail>/hooks/claude-hook`, from hooks/claude-hook.sh):
it runs the baked-in git-korus-mail, and answers in hook JSON when that cannot run."""

import json
import os
import re

from git_korus_mail.errors import MailError
from git_korus_mail.shell import sh_quote
from git_korus_mail.wiring import stub as hookstub
from git_korus_mail.wiring.record import HOOKS_SUBDIR

STUB_NAME = "claude-hook"


def stub_path(root):
    return os.path.join(root.path, HOOKS_SUBDIR, STUB_NAME)


def _template_path():
    from git_korus_mail.shipped import shipped_file
    path = shipped_file("hooks", "claude-hook.sh")
    if path is not None:
        return path
    raise MailError("the hook template claude-hook.sh is missing from this installation; reinstall it")


def _json_inside(text):
    """The inside of a JSON string literal for `text`, ASCII only (the stub adds the quotes)."""
    return json.dumps(text, ensure_ascii=True)[1:-1]


def render_stub(helper, repo=None):
    """The stub's text for `helper`, with the reinstall advice for this machine (core/advice.py)
    baked in: when the stub needs it, the package may not run at all. Every value is quoted
    here, in Python, so the stub stays valid shell and its fault valid JSON whatever it holds."""
    from git_korus_mail.core import advice
    with open(_template_path(), encoding="utf-8") as f:
        text = f.read()
    values = {"@HELPER@": sh_quote(helper),
              "@HELPER_JSON@": sh_quote(_json_inside(helper)),
              "@ADVICE_JSON@": sh_quote(_json_inside(advice.advice(helper, repo)))}
    return re.sub("@HELPER_JSON@|@ADVICE_JSON@|@HELPER@", lambda m: values[m.group(0)], text)


def write_stub(root, helper, force=False, repo=None):
    """Write the stub when absent, different (template, helper or advice changed) or forced."""
    data = render_stub(helper, repo).encode("utf-8", "surrogateescape")
    return hookstub.write_executable(stub_path(root), data, force)
