"""`send`, `list`, `status`, `off`, `on` and the CLI's error contract, on real clones."""

import json
import os
import stat

import pytest

from helpers import git, launch_dir, run_cli


def inbox(clone, path):
    from git_korus_mail.core import keys
    d = clone.mail_root / "box" / keys.key_for(str(path)).name / "inbox"
    return sorted(d.iterdir()) if d.exists() else []


def test_send_queues_one_message_with_all_fields(clone):
    proc = run_cli("send", "--to", "../web", "--kind", "handoff", "schema changed", cwd=clone.main,
                   env={"CLAUDE_CODE_SESSION_ID": "sess-a"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("queued ") and "-> ../web (web)" in proc.stdout
    [f] = inbox(clone, clone.web)
    msg = json.loads(f.read_text())
    assert msg["body"] == "schema changed" and msg["kind"] == "handoff" and msg["v"] == 1
    # the launch: this pytest process stands in for Claude Code (CLAUDE_PID, the send's parent)
    claude_launch = "claude:" + launch_dir("sess-a").split("@", 1)[1]
    assert msg["from"] == {"path": os.path.realpath(clone.main), "branch": "main", "session": "sess-a",
                           "launch": claude_launch}
    assert f.name == msg["id"] + ".json" and ":" not in msg["id"] and "/" not in msg["id"]
    assert msg["expires_at"] > msg["sent_at"]
    # permissions set explicitly, whatever the umask
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert stat.S_IMODE(clone.mail_root.stat().st_mode) == 0o700
    assert stat.S_IMODE(f.parent.stat().st_mode) == 0o700


def test_permissions_under_a_permissive_umask(clone):
    proc = run_cli("send", "--to", "../web", "x", cwd=clone.main, env={}, check=False)
    assert proc.returncode == 0
    import subprocess
    subprocess.run(["sh", "-c", f"umask 000 && '{os.sys.executable}' -m git_korus_mail send --to web y"],
                   cwd=clone.main, check=True, capture_output=True)
    for f in inbox(clone, clone.web):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600


def test_body_from_stdin_and_dash(clone):
    assert run_cli("send", "--to", "../web", "-", cwd=clone.main, input="from stdin\n").returncode == 0
    assert run_cli("send", "--to", "../web", cwd=clone.main, input="implicit stdin").returncode == 0
    bodies = sorted(json.loads(f.read_text())["body"] for f in inbox(clone, clone.web))
    assert bodies == ["from stdin\n", "implicit stdin"]


@pytest.mark.parametrize("args,stdin,needle", [
    (["--to", "../web", ""], None, "empty body"),
    (["--to", "../web", "-"], "   \n", "empty body"),
    (["--to", "../web", "-"], "x" * (32 * 1024 + 1), "body is 32769 bytes, over the 32768-byte limit"),
    (["--to", "../web", "-"], "x" * (33 * 1024), "body is 33792 bytes, over the 32768-byte limit"),
    (["--to", "../web", "x" * (33 * 1024)], None, "body is 33792 bytes, over the 32768-byte limit"),
    (["--to", "../nowhere", "hi"], None, "no such directory"),
])
def test_bad_input_is_one_line_and_nonzero_and_queues_nothing(clone, args, stdin, needle):
    proc = run_cli("send", *args, cwd=clone.main, input=stdin)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("git korus-mail: ") and needle in lines[0], proc.stderr
    assert not any(inbox(clone, p) for p in (clone.main, clone.web))


def test_invalid_utf8_on_stdin(clone):
    proc = run_cli("send", "--to", "../web", "-", cwd=clone.main, input=b"\xff\xfe bad")
    assert proc.returncode == 1 and b"not valid UTF-8" in proc.stderr


def test_usage_errors_exit_129(clone):
    for args in (["send", "hi"], ["send", "--to", "x", "--bogus", "y"], ["list", "extra"]):
        proc = run_cli(*args, cwd=clone.main)
        assert proc.returncode == 129, args
        assert proc.stderr.startswith("git korus-mail: ")
    # no such command is not a usage error of one: git's exit 1 for `git frobnicate` (issue 25)
    assert run_cli("frobnicate", cwd=clone.main).returncode == 1
    assert "needs --to" in run_cli("send", "hi", cwd=clone.main).stderr
    assert "unknown option '--bogus'" in run_cli("send", "--to", "x", "--bogus", "y", cwd=clone.main).stderr


def test_outside_a_clone(tmp_path):
    proc = run_cli("list", cwd=tmp_path)
    assert proc.returncode == 1 and "not in a git repository" in proc.stderr


def test_unknown_recipient_refused_and_create_allows(clone, tmp_path):
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    proc = run_cli("send", "--to", str(stranger), "hi", cwd=clone.main)
    assert proc.returncode == 1
    assert "not a worktree of this clone" in proc.stderr and os.path.realpath(clone.web) in proc.stderr
    assert run_cli("send", "--to", str(stranger), "--create", "hi", cwd=clone.main).returncode == 0
    assert len(inbox(clone, stranger)) == 1
    # now that a box exists, it is a known recipient
    assert run_cli("send", "--to", str(stranger), "again", cwd=clone.main).returncode == 0


def test_self_needs_dot(clone):
    proc = run_cli("send", "--to", "../api", "hi", cwd=clone.main)
    assert proc.returncode == 1 and "--to ." in proc.stderr
    assert run_cli("send", "--to", ".", "hi", cwd=clone.main).returncode == 0
    assert len(inbox(clone, clone.main)) == 1


def test_worktree_name_key_prefix_and_ambiguity(clone):
    from git_korus_mail.core import keys
    assert run_cli("send", "--to", "web", "by name", cwd=clone.main).returncode == 0
    k = keys.key_for(str(clone.web))
    assert run_cli("send", "--to", k.digest[:6], "by key prefix", cwd=clone.main).returncode == 0
    assert run_cli("send", "--to", k.name[:8], "by box name prefix", cwd=clone.main).returncode == 0
    assert len(inbox(clone, clone.web)) == 3
    proc = run_cli("send", "--to", "zzzz", "nothing", cwd=clone.main)
    assert proc.returncode == 1 and "no worktree, session name or box key matches" in proc.stderr


def mail_files(clone):
    """Every file under the mail root but the journal: what a send that queued nothing leaves."""
    root = clone.mail_root
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and "journal" not in p.parts) if root.exists() else []


@pytest.mark.parametrize("order", [("docs", "../typo"), ("../typo", "docs")])
def test_one_unresolvable_destination_queues_nothing_and_is_named(clone, order):
    """Issue 21, item 8: `--to docs --to ../typo` queued docs, then exited 1 on the typo; the
    retry doubled docs' copy. Every destination resolves before anything is queued."""
    docs = clone.add_worktree("docs")
    before = mail_files(clone)
    args = [a for d in order for a in ("--to", d)]
    proc = run_cli("send", *args, "schema changed", cwd=clone.main)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[order.index("../typo")].startswith("git korus-mail: not queued: ../typo: no such directory")
    assert lines[order.index("docs")] == ("git korus-mail: not queued: docs: nothing is queued while ../typo "
                                          "cannot be mailed; fix or drop it, then send again")
    assert inbox(clone, docs) == [] and mail_files(clone) == before  # no message, no sent record
    # --json: every destination not ok, the bad one named
    proc = run_cli("send", *args, "schema changed", "--json", cwd=clone.main)
    res = {r["to"]: r for r in json.loads(proc.stdout)["results"]}
    assert proc.returncode == 1 and not any(r["ok"] for r in res.values())
    assert res["docs"]["verdict"] == "refused" and "while ../typo cannot be mailed" in res["docs"]["error"]
    assert inbox(clone, docs) == []
    # the retry without the typo queues docs' copy once
    assert run_cli("send", "--to", "docs", "schema changed", cwd=clone.main).returncode == 0
    assert len(inbox(clone, docs)) == 1


def test_a_full_box_among_destinations_queues_nothing(clone):
    docs = clone.add_worktree("docs")
    git("config", "korus-mail.backlog", "1", cwd=clone.main)
    assert run_cli("send", "--to", "../web", "first", cwd=clone.main).returncode == 0
    proc = run_cli("send", "--to", "docs", "--to", "../web", "second", cwd=clone.main)
    assert proc.returncode == 1
    assert "../web: its box holds 1 unread messages" in proc.stderr and "docs: nothing is queued while ../web" \
        in proc.stderr, proc.stderr
    assert inbox(clone, docs) == [] and len(inbox(clone, clone.web)) == 1


def test_more_than_eight_destinations_refused(clone):
    args = []
    for _ in range(9):
        args += ["--to", "../web"]
    proc = run_cli("send", *args, "hi", cwd=clone.main)
    assert proc.returncode == 129 and "at most 8" in proc.stderr


def test_all_means_worktrees_with_live_sessions(clone):
    from helpers import hook
    docs = clone.add_worktree("docs")
    proc = run_cli("send", "--to", "all", "hi", cwd=clone.main)
    assert proc.returncode == 1 and "no other worktree has a live session" in proc.stderr
    hook("SessionStart", docs, "sess-docs")  # a live session in docs only (no pid: live by recency)
    proc = run_cli("send", "--to", "all", "hi", cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    assert len(inbox(clone, docs)) == 1 and len(inbox(clone, clone.web)) == 0
    hook("SessionEnd", docs, "sess-docs")
    assert run_cli("send", "--to", "all", "hi", cwd=clone.main).returncode == 1
    proc = run_cli("send", "--all-worktrees", "everyone", cwd=clone.main)
    assert proc.returncode == 0 and proc.stdout.count("queued ") == 2


def test_prunable_worktree_refused(clone):
    import shutil
    shutil.rmtree(clone.web)
    proc = run_cli("send", "--to", "web", "hi", cwd=clone.main)
    assert proc.returncode == 1 and "prunable" in proc.stderr


def test_list_shows_every_worktree_with_counts_and_flags(clone):
    docs = clone.add_worktree("docs")
    run_cli("send", "--to", "../web", "one", cwd=clone.main, check=True)
    run_cli("send", "--to", "../web", "two", cwd=clone.main, check=True)
    data = json.loads(run_cli("list", "--json", cwd=clone.main, check=True).stdout)
    rows = {r["slug"]: r for r in data["boxes"]}
    assert set(rows) >= {"api", "web", "docs"}
    assert rows["web"]["counts"]["inbox"] == 2 and rows["docs"]["counts"]["inbox"] == 0
    assert rows["web"]["branch"] == "web" and rows["api"]["this"]
    assert rows["web"]["oldest_unread_age_s"] is not None
    assert data["as_of"].endswith("Z")
    text = run_cli("list", cwd=clone.main, check=True).stdout
    assert "queued 2" in text and str(os.path.realpath(docs)) in text
    git("worktree", "remove", "--force", str(docs), cwd=clone.main)


def test_status_follows_sent_mail_to_its_fate(clone):
    from helpers import hook
    run_cli("send", "--to", "../web", "hello", cwd=clone.main, check=True)
    st = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    assert [m["fate"]["state"] for m in st["sent"]] == ["queued"]
    hook("SessionStart", clone.web, "sess-web")
    st = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    assert st["sent"][0]["fate"]["state"] == "shown" and st["sent"][0]["fate"]["shown"][0]["session"] == "sess-web"
    hook("Stop", clone.web, "sess-web")
    st = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    fate = st["sent"][0]["fate"]
    assert fate["state"] == "consumed" and fate["session"] == "sess-web"
    assert fate["at"].endswith("Z") and fate["as_of"].endswith("Z") and fate["shown_at"].endswith("Z")
    assert any(e["event"] == "consumed" for e in st["journal"])
    text = run_cli("status", cwd=clone.main, check=True).stdout
    assert " ago by session sess-web\n" in text and "as of" in text
    assert "consumed  " in text.split("events of this worktree")[1]  # what became of the mail it sent


def test_off_and_on_keep_mail(clone):
    run_cli("send", "--to", "../web", "kept", cwd=clone.main, check=True)
    proc = run_cli("off", cwd=clone.main, check=True)
    assert "delivery off" in proc.stdout and "1 queued message kept" in proc.stdout
    assert (clone.mail_root / "OFF").exists()
    proc = run_cli("send", "--to", "../web", "while off", cwd=clone.main, check=True)
    assert "delivery is off" in proc.stdout
    assert "already" in run_cli("off", cwd=clone.main, check=True).stdout
    proc = run_cli("on", cwd=clone.main, check=True)
    assert "delivery on" in proc.stdout and "2 queued messages kept" in proc.stdout
    assert len(inbox(clone, clone.web)) == 2


def test_expiry_moves_mail_and_tells_sender_and_recipient(clone):
    from helpers import hook
    from git_korus_mail.core import keys
    run_cli("send", "--to", "../web", "--ttl", "1", "stale", cwd=clone.main, check=True)
    [f] = inbox(clone, clone.web)
    msg = json.loads(f.read_text())
    msg["expires_at"] = "2000-01-01T00:00:00.000000Z"  # age it, rather than wait a minute
    f.write_text(json.dumps(msg))
    st = json.loads(run_cli("status", "--json", cwd=clone.main, check=True).stdout)
    assert st["sent"][0]["fate"]["state"] == "expired"
    box = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    assert not list((box / "inbox").iterdir()) and len(list((box / "expired").iterdir())) == 1
    answer, _ = hook("SessionStart", clone.web, "sess-w")
    ctx = answer["hookSpecificOutput"]["additionalContext"]
    assert "1 message to this worktree expired unread" in ctx and os.path.realpath(clone.main) in ctx
    answer, _ = hook("SessionStart", clone.web, "sess-w2")
    assert "expired unread" not in answer["hookSpecificOutput"]["additionalContext"]  # told once


def test_symlinked_mail_root_refused(clone, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    clone.mail_root.symlink_to(elsewhere)
    proc = run_cli("send", "--to", "../web", "hi", cwd=clone.main)
    assert proc.returncode == 1 and "symlink" in proc.stderr
    assert not any(elsewhere.iterdir())


def test_group_writable_mail_root_refused(clone):
    run_cli("send", "--to", "../web", "hi", cwd=clone.main, check=True)
    os.chmod(clone.mail_root, 0o770)
    proc = run_cli("list", cwd=clone.main)
    assert proc.returncode == 1 and "writable by group or others" in proc.stderr


def test_no_color_and_not_a_tty(clone):
    proc = run_cli("list", cwd=clone.main, check=True)
    assert "\x1b[" not in proc.stdout


def test_closed_pipe_is_quiet(clone):
    import subprocess
    for _ in range(3):
        run_cli("send", "--all-worktrees", "x" * 100, cwd=clone.main, check=True)
    p = subprocess.run(f"'{os.sys.executable}' -m git_korus_mail status | head -c 10", shell=True,
                       cwd=clone.main, capture_output=True, text=True)
    assert p.stderr == ""


def test_version_and_help(clone):
    from git_korus_mail import __version__
    assert run_cli("--version", cwd=clone.main).stdout.strip() == f"git-korus-mail {__version__}"
    assert "usage: git korus-mail <command>" in run_cli("--help", cwd=clone.main).stdout
    assert "git korus-mail send" in run_cli("send", "-h", cwd=clone.main).stdout


def test_repo_anchor_selects_queue_but_key_comes_from_cwd(clone, tmp_path):
    holder = tmp_path / "folder-of-clones"
    holder.mkdir()
    proc = run_cli("send", "--to", str(clone.web), "no anchor", cwd=holder)
    assert proc.returncode == 1 and "not in a git repository" in proc.stderr
    proc = run_cli("send", "--repo", str(clone.main), "--to", str(clone.web), "from a folder", cwd=holder)
    assert proc.returncode == 0, proc.stderr
    msg = json.loads(inbox(clone, clone.web)[0].read_text())
    assert msg["from"]["path"] == os.path.realpath(holder)  # the sender's own key, not the anchor's


def test_git_dir_env(clone):
    run_cli("send", "--to", "../web", "hi", cwd=clone.main, check=True)
    proc = run_cli("list", "--json", cwd=clone.base, env={"GIT_DIR": str(clone.main / ".git")})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["mail_root"] == str(clone.mail_root)
    assert {r["slug"]: r["counts"]["inbox"] for r in data["boxes"]}["web"] == 1


def test_the_session_whose_start_expires_mail_is_told_at_once_naming_each_message(clone):
    from helpers import hook
    from git_korus_mail.core import keys
    ids = []
    for body in ("stale one", "stale two"):
        run_cli("send", "--to", "../web", body, cwd=clone.main, check=True)
    for f in inbox(clone, clone.web):
        msg = json.loads(f.read_text())
        msg["expires_at"] = "2000-01-01T00:00:00.000000Z"  # due: this SessionStart's drain expires it
        f.write_text(json.dumps(msg))
        ids.append((msg["id"], msg["sent_at"]))
    answer, _ = hook("SessionStart", clone.web, "sess-first")
    ctx = answer["hookSpecificOutput"]["additionalContext"]
    box = clone.mail_root / "box" / keys.key_for(str(clone.web)).name
    assert "2 messages to this worktree expired unread" in ctx, ctx
    for msg_id, sent_at in ids:
        kept = box / "expired" / f"{msg_id}.json"
        assert kept.exists()
        assert (f"korus-mail: expired {msg_id} from {os.path.realpath(clone.main)} sent {sent_at}, expired " in ctx
                and f"; body in {os.path.realpath(kept)}" in ctx), ctx
    assert "stale one" not in ctx  # named, not shown: expired mail is never displayed as mail
    answer, _ = hook("SessionStart", clone.web, "sess-second")
    assert "expired unread" not in answer["hookSpecificOutput"]["additionalContext"]  # told once
