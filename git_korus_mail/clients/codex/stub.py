"""The stub Codex's hook entries call (`<mail>/hooks/codex-hook`, from hooks/codex-hook.sh): it
runs the baked-in git-korus-mail's `drain --client=codex`, and answers in hook JSON when that
cannot run. A stub, not the helper's own path, in the hook command: Codex trusts a hook by
the hash of its command, so the command must not change when the helper does."""

import json
import os
import re

from git_korus_mail.errors import MailError
from git_korus_mail.shell import sh_quote
from git_korus_mail.wiring import stub as hookstub
from git_korus_mail.wiring.record import HOOKS_SUBDIR

STUB_NAME = "codex-hook"
TEMPLATE = "codex-hook.sh"


def stub_path(root):
    return os.path.join(root.path, HOOKS_SUBDIR, STUB_NAME)


def _template_path():
    from git_korus_mail.shipped import shipped_file
    path = shipped_file("hooks", TEMPLATE)
    if path is not None:
        return path
    raise MailError(f"the hook template {TEMPLATE} is missing from this installation; reinstall it")


def _json_inside(text):
    return json.dumps(text, ensure_ascii=True)[1:-1]


def render_stub(helper, repo=None):
    """The stub's text for `helper`, every value quoted here so it stays valid shell and JSON."""
    from git_korus_mail.core import advice
    with open(_template_path(), encoding="utf-8") as f:
        text = f.read()
    values = {"@HELPER@": sh_quote(helper),
              "@HELPER_JSON@": sh_quote(_json_inside(helper)),
              "@ADVICE_JSON@": sh_quote(_json_inside(advice.advice(helper, repo)))}
    return re.sub("@HELPER_JSON@|@ADVICE_JSON@|@HELPER@", lambda m: values[m.group(0)], text)


def write_stub(root, helper, force=False, repo=None):
    data = render_stub(helper, repo).encode("utf-8", "surrogateescape")
    return hookstub.write_executable(stub_path(root), data, force)
