"""Reservations before an edit (issue 29) with the real Codex CLI 0.171.0 and Gemini CLI 0.61.0,
offline against their loopback mocks, wired by `git korus-mail install`: the model's first edit of
a path another worktree reserved is refused with the tell (told once; the retry lands), and every
edit is refused for a `--block` reservation (docs/CLIENTS.md, "Reservations before an edit").

Codex runs in its DEFAULT sandbox (no -s, no bypass flag) with the clone and CODEX_HOME under
/var/tmp, outside every writable root Codex grants: read-only in a project nobody trusted (the
sandbox rejects any patch there, so that run proves the telling), workspace-write in a project
the person trusted with `codex exec --trust` (the patch lands unless we refuse it). The model
is `gpt-5.5`, a model Codex knows, so that it is offered the `apply_patch` tool.
"""

from __future__ import annotations

import os

import pytest

from codexdriver import CONFIG, Codex
from codexmock import patch, text as codex_text
from geminidriver import Gemini
from geminimock import call, text as gemini_text
from helpers import Clone
from test_codex_e2e import HELPER_BIN, cli, codex_env, developer_texts

from git_korus_mail.core import reservations
from git_korus_mail.store.files import MailRoot

pytestmark = pytest.mark.e2e


def reserve(clone, worktree, specs, note, block=False):
    """The person reserves `specs` from `worktree` (the store's own API)."""
    root = MailRoot.open(str(clone.common_dir), create=True)
    r, _others = reservations.reserve(root, specs, reservations.Holder(None, None, None), "box",
                                      os.path.realpath(worktree), os.path.basename(worktree),
                                      ttl_minutes=60, note=note, block=block)
    return r


def add_file(path, line="hello"):
    return f"*** Begin Patch\n*** Add File: {path}\n+{line}\n*** End Patch\n"


def tool_outputs(mock, kind="custom_tool_call_output"):
    return [item.get("output") for r in mock.agent_requests() for item in r.items
            if isinstance(item, dict) and item.get("type") == kind]


@pytest.fixture
def codex_world(outside, codex_bin, codexmock):
    clone = Clone(outside)
    clone.web = clone.add_worktree("web")
    home = outside / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG.format(base_url=codexmock.base_url)
                                      .replace('model = "mock-model"', 'model = "gpt-5.5"'))
    codex = Codex(codex_bin, codexmock, home, path_prefix=HELPER_BIN)
    cli("install", "--client", "codex", cwd=clone.main, env=codex_env(home, codex_bin))
    return clone, codex


def test_codex_is_told_before_apply_patch_of_a_reserved_path_in_its_default_read_only_sandbox(codex_world, codexmock):
    """The first patch of a reserved path is refused by our hook with the tell (before the
    sandbox judges it); the same patch again passes our hook and meets the read-only sandbox."""
    clone, codex = codex_world
    r = reserve(clone, clone.main, ["src/db/"], note="migrating the schema")
    codexmock.set_script([patch(add_file("src/db/new.sql")), patch(add_file("src/db/new.sql")), codex_text("ok")])
    run = codex.run("edit", cwd=clone.web, sandbox=None).check()
    assert "sandbox: read-only" in run.stderr, run.stderr
    first, second = list(dict.fromkeys(tool_outputs(codexmock)))[:2]  # each request repeats the history
    assert first.startswith("Command blocked by PreToolUse hook:"), first
    assert "src/db/new.sql is reserved by the person" in first and r.id in first
    assert "migrating the schema" in first and "git korus-mail send --to=" in first
    assert "repeat the same edit and it will go through" in first
    # told once: the retry is the sandbox's to refuse, and ours says nothing more
    assert "read-only sandbox" in second and "blocked by PreToolUse" not in second, second
    assert not developer_texts(codexmock, "is reserved by the person")
    assert codexmock.peers == {"127.0.0.1"}


def test_codex_trusted_project_first_patch_refused_with_the_tell_its_retry_lands_a_block_refuses(codex_world, codexmock):
    """The person trusted the project (`codex exec --trust`): Codex's default sandbox there is
    workspace-write, so a patch lands unless the hook refuses it."""
    clone, codex = codex_world
    reserve(clone, clone.main, ["src/db/"], note="migrating the schema")
    landed = []

    def retry(_request):
        landed.append((clone.web / "src" / "db" / "new.sql").exists())
        return patch(add_file("src/db/new.sql"))

    codexmock.set_script([patch(add_file("src/db/new.sql")), retry, codex_text("ok")])
    run = codex.run("edit", cwd=clone.web, sandbox=None, extra=("--trust",)).check()
    assert "sandbox: workspace-write" in run.stderr, run.stderr
    first = tool_outputs(codexmock)[0]
    assert first.startswith("Command blocked by PreToolUse hook:") and "src/db/new.sql is reserved by the person" in first
    assert landed == [False]  # not written when the model read the refusal
    assert (clone.web / "src" / "db" / "new.sql").read_text() == "hello\n"  # the retry lands

    b = reserve(clone, clone.main, ["docs/"], note="rewriting the docs", block=True)
    codexmock.set_script([patch(add_file("docs/guide.md")), codex_text("ok")])
    codex.run("edit", cwd=clone.web, sandbox=None, extra=("--trust",)).check()
    out = tool_outputs(codexmock)[-1]
    assert out.startswith("Command blocked by PreToolUse hook:"), out
    assert "This edit was refused" in out and f"git korus-mail reserve --drop {b.id} --force" in out
    assert not (clone.web / "docs" / "guide.md").exists()
    # once the person drops it, the same patch lands
    reservations.drop(MailRoot.open(str(clone.common_dir)), [b.id], None)
    codexmock.set_script([patch(add_file("docs/guide.md")), codex_text("ok")])
    codex.run("edit", cwd=clone.web, sandbox=None, extra=("--trust",)).check()
    assert (clone.web / "docs" / "guide.md").read_text() == "hello\n"


@pytest.fixture
def gemini_world(tmp_path, gemini_bin, geminimock):
    clone = Clone(tmp_path)
    clone.web = clone.add_worktree("web")
    home = tmp_path / "home"
    home.mkdir()
    gemini = Gemini(gemini_bin, geminimock, home, path_prefix=HELPER_BIN)
    cli("install", "--client", "gemini", cwd=clone.main, env={"HOME": str(home)})
    gemini.trust(clone.main, clone.web)
    yield clone, gemini
    gemini.cleanup()


def write_file(path, content="hello\n"):
    return call("write_file", {"file_path": path, "content": content})


AUTO_EDIT = ("--approval-mode", "auto_edit")  # the person's choice to let edits through


def test_gemini_default_headless_mode_offers_no_editing_tool(gemini_world, geminimock):
    """Headless, Gemini's default approval mode offers no editing tool at all: nothing to guard
    there. `--approval-mode auto_edit` (below) is where a hook must stand in."""
    clone, gemini = gemini_world
    reserve(clone, clone.main, ["docs/"], note="rewriting the docs", block=True)
    geminimock.set_script([write_file("docs/guide.md"), gemini_text("ok")])
    gemini.run("edit", cwd=clone.web).check()
    assert any("not found" in t for r in geminimock.agent_requests() for t in r.function_responses())
    assert not (clone.web / "docs" / "guide.md").exists()


def test_gemini_block_reservation_refuses_write_file(gemini_world, geminimock):
    clone, gemini = gemini_world
    b = reserve(clone, clone.main, ["docs/"], note="rewriting the docs", block=True)
    geminimock.set_script([write_file("docs/guide.md"), gemini_text("ok")])
    run = gemini.run("edit", cwd=clone.web, extra=AUTO_EDIT).check()
    [refusal] = [t for t in geminimock.agent_requests()[-1].function_responses() if "Tool execution blocked" in t]
    assert "docs/guide.md is reserved by the person" in refusal and "This edit was refused" in refusal
    assert f"git korus-mail reserve --drop {b.id} --force" in refusal
    assert not (clone.web / "docs" / "guide.md").exists()
    assert any(line.startswith("refused an edit: ") for line in run.person_lines()), run.stderr
    assert geminimock.peers == {"127.0.0.1"}


def test_gemini_first_write_of_an_advisory_reservation_is_refused_with_the_tell_its_retry_lands(gemini_world, geminimock):
    """Gemini 0.61.0 drops BeforeTool's additionalContext, so the tell reaches its model only as
    a refusal's reason: the first write_file is refused, the same one again lands."""
    clone, gemini = gemini_world
    r = reserve(clone, clone.main, ["src/"], note="moving the handlers")
    target = clone.web / "src" / "app.py"
    landed = []

    def retry(_request):
        landed.append(target.exists())
        return write_file("src/app.py")

    geminimock.set_script([write_file("src/app.py"), retry, gemini_text("ok")])
    run = gemini.run("edit", cwd=clone.web, extra=AUTO_EDIT).check()
    refusals = [t for q in geminimock.agent_requests() for t in q.function_responses() if "Tool execution blocked" in t]
    assert refusals, [q.function_responses() for q in geminimock.agent_requests()]
    assert "src/app.py is reserved by the person" in refusals[0] and "moving the handlers" in refusals[0]
    assert r.id in refusals[0] and "repeat the same edit and it will go through" in refusals[0]
    assert len(set(refusals)) == 1  # one refusal (each later request repeats the history)
    assert landed == [False]
    assert target.read_text() == "hello\n"  # the retry lands
    assert any(line.startswith("refused an edit: ") for line in run.person_lines()), run.stderr
