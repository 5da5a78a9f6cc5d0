"""doctor's read-back of a wired hooks file (clients/hookfile.read_back): a file that is gone or
is not a hooks document is said the same way for Claude Code (clients/claude/verify.py) and for
the clients whose HookFile checks it (Codex, Gemini)."""

from git_korus_mail.clients.claude import verify as claude_verify
from git_korus_mail.clients.codex import hooksfile
from git_korus_mail.clients.gemini import settingsfile


def _wired(tmp_path):
    gone = tmp_path / "gone.json"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"hooks": []}')
    return [(str(p), None, str(tmp_path)) for p in (gone, broken, wrong)]


def _said(results):
    return {path.rsplit("/", 1)[-1]: problems for path, problems in results if path.endswith(".json")}


def test_every_client_says_a_gone_or_unreadable_file_alike(tmp_path):
    stub = str(tmp_path / "stub")
    wired = _wired(tmp_path)
    said = [_said(claude_verify.verify(None, stub, wired, run_stub=False)),
            _said(hooksfile.FILE.check_wired("codex", stub, wired, run_stub=None)),
            _said(settingsfile.FILE.check_wired("gemini", stub, wired, run_stub=None))]
    assert said[0] == said[1] == said[2]
    first = said[0]
    assert first["gone.json"] == ["missing"]
    [broken] = first["broken.json"]
    assert broken.startswith(f"{tmp_path}/broken.json is not valid JSON (") and broken.endswith(
        "; left it untouched: fix it and run install again")
    [wrong] = first["wrong.json"]
    assert wrong.startswith(f"{tmp_path}/wrong.json: ") and "left it untouched" in wrong
