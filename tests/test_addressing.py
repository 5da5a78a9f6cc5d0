"""Mail accepted then lost, and mail addressed where nobody reads it (issue 9).

Real clones with real linked worktrees; the command and the drain run as separate
processes, as a user and Claude Code would run them.
"""

import json
import os
import shutil

import pytest

from helpers import context_of, git, hook, run_cli

# The TTL range send accepts, computed by hand: ten years of minutes (10 * 365 * 24 * 60).
MAX_TTL = 5256000


def box_of(clone, path):
    from git_korus_mail.core import keys
    return clone.mail_root / "box" / keys.key_for(str(path)).name


def files(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def send_id(clone, *args, cwd=None):
    proc = run_cli("send", "--json", *args, cwd=cwd or clone.main)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["results"][0]["id"]


def sent_fates(clone, cwd=None):
    proc = run_cli("status", "--json", cwd=cwd or clone.main)
    assert proc.returncode == 0, proc.stderr
    return {r["id"]: r["fate"] for r in json.loads(proc.stdout)["sent"]}


# -- send --ttl: only what the drain honours -------------------------------------------
def test_longest_ttl_send_accepts_is_shown_and_consumed_by_a_real_drain(clone):
    msg_id = send_id(clone, "--to", "web", "--ttl", str(MAX_TTL), "--", "kept ten years")
    msg = json.loads((box_of(clone, clone.web) / "inbox" / (msg_id + ".json")).read_text())
    assert msg["expires_at"][:4].isdigit() and msg["expires_at"][4] == "-"
    ans, _ = hook("SessionStart", clone.web, "sess-ttl-1")
    assert "kept ten years" in context_of(ans)
    hook("Stop", clone.web, "sess-ttl-1")
    assert files(box_of(clone, clone.web) / "quarantine") == []
    assert sent_fates(clone)[msg_id]["state"] == "consumed"


@pytest.mark.parametrize("ttl", [str(MAX_TTL + 1), "5000000000", "1" + "0" * 30, "0", "-5", "abc"])
def test_ttl_the_drain_would_not_honour_is_a_usage_error_naming_the_range(clone, ttl):
    proc = run_cli("send", "--to", "web", "--ttl", ttl, "--", "hello", cwd=clone.main)
    assert proc.returncode == 129, (proc.returncode, proc.stderr)
    first = proc.stderr.splitlines()[0]
    assert first.startswith("git korus-mail: --ttl ") and f"1 to {MAX_TTL} minutes" in first, first
    assert "usage:" in proc.stderr and "Traceback" not in proc.stderr
    assert files(box_of(clone, clone.web) / "inbox") == []


# -- status: quarantined and missing, never unknown ----------------------------------------
def test_status_names_the_quarantine_reason(clone):
    msg_id = send_id(clone, "--to", "web", "--", "to be mangled")
    path = box_of(clone, clone.web) / "inbox" / (msg_id + ".json")
    msg = json.loads(path.read_text())
    msg["expires_at"] = "95077-04-21T10:13:20.000000Z"  # what `--ttl 5000000000` used to write
    path.write_text(json.dumps(msg))
    hook("SessionStart", clone.web, "sess-q-1")
    assert files(box_of(clone, clone.web) / "inbox") == []
    fate = sent_fates(clone)[msg_id]
    assert fate["state"] == "quarantined" and "bad expires_at" in fate["reason"], fate
    text = run_cli("status", cwd=clone.main).stdout
    assert "quarantined: invalid message: bad expires_at" in text and "unknown" not in text


def test_status_says_missing_for_mail_that_vanished(clone):
    third = clone.add_worktree("third")
    gone_file = send_id(clone, "--to", "web", "--", "file deleted")
    gone_box = send_id(clone, "--to", "third", "--", "box deleted")
    (box_of(clone, clone.web) / "inbox" / (gone_file + ".json")).unlink()
    shutil.rmtree(box_of(clone, third))
    fates = sent_fates(clone)
    assert fates[gone_file]["state"] == "missing" and fates[gone_box]["state"] == "missing", fates
    lines = run_cli("status", cwd=clone.main).stdout.splitlines()
    for msg_id in (gone_file, gone_box):
        at = [i for i, x in enumerate(lines) if x.strip().startswith(msg_id)]
        assert len(at) == 1, lines
        said = " ".join(lines[at[0]:at[0] + 2])  # a long state goes on a line of its own
        assert "missing (" in said and "unknown" not in said, said


# -- send --to a worktree that is gone ------------------------------------------------------
def test_send_to_a_removed_worktree_is_refused_and_names_those_that_exist(clone):
    feature = clone.add_worktree("feature")
    send_id(clone, "--to", "feature", "--", "before the removal")
    git("worktree", "remove", str(feature), cwd=clone.main)
    queued = files(box_of(clone, feature) / "inbox")
    for dest in ("feature", str(feature), box_of(clone, feature).name[:12]):
        proc = run_cli("send", "--to", dest, "--", "after the removal", cwd=clone.main)
        assert proc.returncode == 1, (dest, proc.stdout, proc.stderr)
        line = proc.stderr.strip()
        assert len(line.splitlines()) == 1 and line.startswith("git korus-mail: not queued: "), line
        assert os.path.realpath(clone.main) in line and os.path.realpath(clone.web) in line, line
    assert files(box_of(clone, feature) / "inbox") == queued


def test_send_to_a_prunable_worktree_is_refused_and_names_those_that_exist(clone):
    stale = clone.add_worktree("stale")
    send_id(clone, "--to", "stale", "--", "before it went")
    shutil.rmtree(stale)  # deleted by hand: git lists it as prunable
    assert "prunable" in git("worktree", "list", "--porcelain", cwd=clone.main).stdout
    queued = files(box_of(clone, stale) / "inbox")
    for dest in ("stale", box_of(clone, stale).name[:12]):
        proc = run_cli("send", "--to", dest, "--", "after", cwd=clone.main)
        assert proc.returncode == 1, (dest, proc.stdout, proc.stderr)
        line = proc.stderr.strip()
        assert os.path.realpath(clone.web) in line and f"{os.path.realpath(stale)}," not in line, line
        assert not line.endswith(os.path.realpath(stale)), line
    assert files(box_of(clone, stale) / "inbox") == queued


# -- git worktree move: the moved worktree keeps its mail ------------------------------------
def journal(clone, event=None):
    path = clone.mail_root / "journal.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [r for r in recs if event is None or r.get("event") == event]


def token_of(clone, wt_id):
    return (clone.common_dir / "worktrees" / wt_id / "korus-mail-id").read_text().strip()


def test_a_moved_worktree_keeps_its_queue_and_its_sent_history(clone):
    back = send_id(clone, "--to", str(clone.main), "--", "web wrote this before the move", cwd=clone.web)
    msg_id = send_id(clone, "--to", "web", "--", "waiting in web")
    old = box_of(clone, clone.web)
    # the on-disk record of whose box it is: git's admin dir id and our token kept in it
    assert (old / "worktree").read_text() == f"worktrees/web {token_of(clone, 'web')}\n"
    assert len(token_of(clone, "web")) == 24
    assert (box_of(clone, clone.main) / "worktree").read_text() == "main\n"
    moved = clone.base / "web-moved"
    git("worktree", "move", str(clone.web), str(moved), cwd=clone.main)

    ans, _ = hook("SessionStart", moved, "sess-moved-1")
    assert "waiting in web" in context_of(ans)
    hook("Stop", moved, "sess-moved-1")
    new = box_of(clone, moved)
    assert files(new / "seen") == [msg_id + ".json"] and files(old / "inbox") == []
    assert (new / "worktree").read_text() == f"worktrees/web {token_of(clone, 'web')}\n"
    assert not (old / "worktree").exists()
    [adopted] = journal(clone, "adopted")
    assert (adopted["id"], adopted["box"], adopted["source"]) == (msg_id, new.name, old.name)
    fate = sent_fates(clone)[msg_id]
    assert fate["state"] == "consumed" and fate["moved_to"] == [new.name], fate
    assert back in sent_fates(clone, cwd=moved), "the moved worktree's sent history stayed behind"


def test_the_first_command_in_a_moved_worktree_adopts(clone):
    msg_id = send_id(clone, "--to", "web", "--", "for web")
    moved = clone.base / "elsewhere"
    git("worktree", "move", str(clone.web), str(moved), cwd=clone.main)
    assert run_cli("status", cwd=moved).returncode == 0
    assert files(box_of(clone, moved) / "inbox") == [msg_id + ".json"]
    assert [r["id"] for r in journal(clone, "adopted")] == [msg_id]
    run_cli("status", cwd=moved)
    hook("SessionStart", moved, "sess-x")
    assert len(journal(clone, "adopted")) == 1, "adopted twice"


def test_moving_the_whole_clone_keeps_the_main_checkouts_mail(clone):
    msg_id = send_id(clone, "--to", str(clone.main), "--", "for main", cwd=clone.web)
    new_main = clone.base / "api-moved"
    os.rename(clone.main, new_main)
    git("worktree", "repair", cwd=new_main)
    ans, _ = hook("SessionStart", new_main, "sess-main-1")
    assert "for main" in context_of(ans)
    hook("Stop", new_main, "sess-main-1")
    mail_root = new_main / ".git" / "mail"
    from git_korus_mail.core import keys
    assert (mail_root / "box" / keys.key_for(str(new_main)).name / "seen" / (msg_id + ".json")).exists()


def _live_claim(clone, box, msg_id):
    """A claim held by a process that is alive (a sleeping child), as a slow Stop's would be."""
    import subprocess
    from git_korus_mail.store import claims
    holder = subprocess.Popen(["sleep", "600"])
    owner = claims.me("consume", "sess-holder")
    owner["pid"], owner["start"] = holder.pid, claims.proc_start_time(holder.pid)
    d = box / "claiming"
    d.mkdir(mode=0o700, exist_ok=True)
    (d / (msg_id + claims.CLAIM_SUFFIX)).write_text(json.dumps(owner, sort_keys=True))
    (d / (msg_id + claims.CLAIM_SUFFIX)).chmod(0o600)
    return holder


def test_moving_a_worktree_while_one_of_its_messages_is_claimed(clone):
    import invariants
    held = send_id(clone, "--to", "web", "--", "held by a live claim")
    free = send_id(clone, "--to", "web", "--", "free to move")
    old = box_of(clone, clone.web)
    holder = _live_claim(clone, old, held)
    try:
        moved = clone.base / "web-moved"
        git("worktree", "move", str(clone.web), str(moved), cwd=clone.main)
        new = box_of(clone, moved)
        ans, _ = hook("SessionStart", moved, "sess-a")
        text = context_of(ans)
        assert "free to move" in text and "held by a live claim" not in text
        assert files(old / "inbox") == [held + ".json"] and not (new / "worktree").exists()
        assert sent_fates(clone)[held]["state"] == "queued"
        hook("Stop", moved, "sess-a")
    finally:
        holder.kill()
        holder.wait()
    # the holder died without consuming: the next event retries the adoption and breaks its claim
    ans, _ = hook("SessionStart", moved, "sess-b")
    assert "held by a live claim" in context_of(ans) and "free to move" not in context_of(ans)
    hook("Stop", moved, "sess-b")
    s = invariants.check(clone.mail_root)
    assert s[new.name]["receipts"][free]["session"] == "sess-a"
    assert s[new.name]["receipts"][held]["session"] == "sess-b"
    assert sorted(r["id"] for r in journal(clone, "adopted")) == sorted([held, free])
    assert (new / "worktree").exists() and not (old / "worktree").exists()


def test_moving_a_worktree_whose_consumer_died_after_its_receipt_does_not_deliver_twice(clone):
    import invariants
    msg_id = send_id(clone, "--to", "web", "--", "consumed before the move")
    hook("SessionStart", clone.web, "sess-a")
    proc = run_cli("drain", cwd=clone.web, env={"KORUS_MAIL_CRASH_AT": "consume:receipt"},
                   input=json.dumps({"session_id": "sess-a", "cwd": str(clone.web), "hook_event_name": "Stop"}))
    assert proc.returncode == -9
    moved = clone.base / "web-moved"
    git("worktree", "move", str(clone.web), str(moved), cwd=clone.main)
    ans, _ = hook("SessionStart", moved, "sess-b")
    assert "consumed before the move" not in (context_of(ans) or "")
    hook("Stop", moved, "sess-b")
    s = invariants.check(clone.mail_root)
    assert s[box_of(clone, clone.web).name]["receipts"][msg_id]["session"] == "sess-a"
    assert not journal(clone, "adopted")
    assert sent_fates(clone)[msg_id]["state"] == "consumed"


def test_an_event_in_an_existing_box_never_reaches_the_adoption_code(clone):
    """The adoption check is the stat of the box's `worktree` file: an event with nothing moved
    imports neither the identity nor the forwarding module, so it runs no git and scans no boxes."""
    import subprocess
    import sys
    payload = json.dumps({"session_id": "s-hot", "cwd": str(clone.web), "hook_event_name": "UserPromptSubmit"})

    def imported(cwd):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "git_korus_mail", "drain"], cwd=cwd,
                              input=payload.replace(str(clone.web), str(cwd)), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}

    first = imported(clone.web)  # the box is new: its first use looks for an older box
    assert "git_korus_mail.store.forwarding" in first and "git_korus_mail.store.wtident" in first
    later = imported(clone.web)
    assert "git_korus_mail.store.forwarding" not in later and "git_korus_mail.store.wtident" not in later, later


# -- removed, then re-added under the same name: a new worktree, flagged mail ---------------
def test_a_readded_worktree_does_not_inherit_and_the_stranded_box_is_flagged_then_forwarded(clone):
    feature = clone.add_worktree("feature")
    msg_id = send_id(clone, "--to", "feature", "--", "for the old feature")
    old = box_of(clone, feature)
    git("worktree", "remove", str(feature), cwd=clone.main)
    again = clone.base / "other" / "feature"
    git("worktree", "add", "-q", str(again), "-b", "feature2", cwd=clone.main)
    assert (clone.common_dir / "worktrees" / "feature").is_dir()  # git reused the admin dir name
    ans, _ = hook("SessionStart", again, "sess-new")
    assert "for the old feature" not in context_of(ans)
    assert files(old / "inbox") == [msg_id + ".json"]

    listing = run_cli("list", cwd=clone.main)
    [row] = [r for r in json.loads(run_cli("list", "--json", cwd=clone.main).stdout)["boxes"]
             if r["key"] == old.name]
    assert row["stranded"] and "STRANDED: 1 queued" in listing.stdout
    assert f"git korus-mail forward {old.name} --to" in " ".join(listing.stdout.split())
    doc = run_cli("doctor", "--json", cwd=clone.main)
    assert doc.returncode == 1
    [finding] = [f for f in json.loads(doc.stdout)["findings"] if f["check"] == "stranded"]
    assert not finding["ok"] and old.name in finding["where"] and "forward" in finding["fix"]
    assert files(old / "inbox") == [msg_id + ".json"], "doctor or list deleted queued mail"

    proc = run_cli("forward", str(feature), "--to", str(again), cwd=clone.main)  # named by its old path
    assert proc.returncode == 0 and "forwarded 1 message from" in proc.stdout, proc.stderr
    ans, _ = hook("SessionStart", again, "sess-new")
    assert "for the old feature" in context_of(ans)
    hook("Stop", again, "sess-new")
    fate = sent_fates(clone)[msg_id]
    assert fate["state"] == "consumed" and fate["moved_to"] == [box_of(clone, again).name]
    assert [r["id"] for r in journal(clone, "forwarded")] == [msg_id]
    assert not any(f["check"] == "stranded" and not f["ok"]
                   for f in json.loads(run_cli("doctor", "--json", cwd=clone.main).stdout)["findings"])


@pytest.mark.parametrize("args,code,needle", [
    (["no-such-box", "--to", "web"], 1, "no such box"),  # an unknown name exits 1, as everywhere (issue 25)
    (["{web}", "--to", "web"], 1, "nothing to forward"),
    (["{gone}", "--to", "gone"], 1, "worktrees that exist"),
    (["{gone}", "--to", "all"], 129, "one worktree"),
])
def test_forward_refuses_what_it_cannot_do_and_keeps_the_mail(clone, args, code, needle):
    gone = clone.add_worktree("gone")
    msg_id = send_id(clone, "--to", "gone", "--", "kept")
    send_id(clone, "--to", "web", "--", "web has a box too")
    git("worktree", "remove", str(gone), cwd=clone.main)
    names = {"{web}": box_of(clone, clone.web).name, "{gone}": box_of(clone, gone).name}
    proc = run_cli("forward", *[names.get(a, a) for a in args], cwd=clone.main)
    assert proc.returncode == code and needle in proc.stderr.splitlines()[0], proc.stderr
    assert files(box_of(clone, gone) / "inbox") == [msg_id + ".json"]


# -- a sender outside every worktree leaves no box behind -------------------------------------
def _boxes(clone):
    return files(clone.mail_root / "box")


@pytest.mark.parametrize("where", ["tmp", "git-dir"])
def test_a_sender_outside_every_worktree_leaves_no_box(clone, tmp_path, where):
    send_id(clone, "--to", "web", "--", "make the mail root")
    before = _boxes(clone)
    if where == "tmp":
        cwd, repo = tmp_path / "outside", ["--repo", str(clone.main)]
        cwd.mkdir()
    else:
        cwd, repo = clone.mail_root, []
    msg_id = send_id(clone, *repo, "--to", str(clone.web), "--", "from outside", cwd=cwd)
    assert _boxes(clone) == before, "a box was left for a sender no drain will ever serve"
    assert (clone.mail_root / "sent" / (msg_id + ".json")).exists()
    proc = run_cli("status", "--json", *repo, cwd=cwd)
    fates = {r["id"]: r["fate"]["state"] for r in json.loads(proc.stdout)["sent"]}
    assert fates == {msg_id: "queued"}, fates
    assert msg_id not in sent_fates(clone), "another sender's status lists it"


def test_a_sender_in_a_bare_repository_leaves_no_box(tmp_path):
    from helpers import Clone
    src = Clone(tmp_path)
    bare = tmp_path / "bare.git"
    git("clone", "-q", "--bare", str(src.main), str(bare), cwd=tmp_path)
    wt = tmp_path / "bw"
    git("worktree", "add", "-q", str(wt), "-b", "bw", cwd=bare)
    proc = run_cli("send", "--to", "bw", "--json", "--", "from the bare dir", cwd=bare)
    assert proc.returncode == 0, proc.stderr
    msg_id = json.loads(proc.stdout)["results"][0]["id"]
    from git_korus_mail.core import keys
    assert files(bare / "mail" / "box") == [keys.key_for(str(wt)).name]
    fates = {r["id"]: r["fate"]["state"] for r in json.loads(run_cli("status", "--json", cwd=bare).stdout)["sent"]}
    assert fates == {msg_id: "queued"}
    ans, _ = hook("SessionStart", wt, "sess-bw")
    assert "from the bare dir" in context_of(ans)


def test_list_adopts_for_a_moved_worktree_and_flags_nothing(clone):
    msg_id = send_id(clone, "--to", "web", "--", "for web")
    moved = clone.base / "web-moved"
    git("worktree", "move", str(clone.web), str(moved), cwd=clone.main)
    boxes = {r["key"]: r for r in json.loads(run_cli("list", "--json", cwd=clone.main).stdout)["boxes"]}
    new = boxes[box_of(clone, moved).name]
    assert new["counts"]["inbox"] == 1 and not any(r["stranded"] for r in boxes.values()), boxes
    assert files(box_of(clone, moved) / "inbox") == [msg_id + ".json"]
    assert run_cli("doctor", "--json", cwd=clone.main).stdout.count('"check": "stranded"') == 0


# -- a forwarded/ record stands only for the move it records (issue 22, item 6) ----------------
def test_mail_forwarded_away_and_back_goes_where_the_next_forward_says(clone):
    import invariants
    b, c, d = (clone.add_worktree(n) for n in ("wb", "wc", "wd"))
    msg_id = send_id(clone, "--to", "wb", "--", "round trip")
    for src, dst in ((b, c), (c, b), (b, d)):
        proc = run_cli("forward", box_of(clone, src).name, "--to", str(dst), cwd=clone.main)
        assert proc.returncode == 0 and f"forwarded 1 message from {box_of(clone, src).name} to " in proc.stdout \
            and proc.stdout.rstrip().endswith(str(dst)[-20:]), \
            proc.stdout + proc.stderr
    assert files(box_of(clone, d) / "inbox") == [msg_id + ".json"], "the last forward said d"
    assert files(box_of(clone, b) / "inbox") == [] and files(box_of(clone, c) / "inbox") == []
    # b's record is the b->d move now; c's is its c->b move; the first b->c record went when it came back
    assert json.loads((box_of(clone, b) / "forwarded" / (msg_id + ".json")).read_text())["box"] == box_of(clone, d).name
    assert json.loads((box_of(clone, c) / "forwarded" / (msg_id + ".json")).read_text())["box"] == box_of(clone, b).name
    assert sent_fates(clone)[msg_id]["state"] == "queued"
    assert [(r["source"], r["box"]) for r in journal(clone, "forwarded")] == [
        (box_of(clone, b).name, box_of(clone, c).name), (box_of(clone, c).name, box_of(clone, b).name),
        (box_of(clone, b).name, box_of(clone, d).name)]
    invariants.check(clone.mail_root)
    ans, _ = hook("SessionStart", d, "sess-wd")
    assert "round trip" in context_of(ans)


def test_a_worktree_moved_away_back_and_elsewhere_keeps_its_mail(clone):
    import invariants
    msg_id = send_id(clone, "--to", "web", "--", "follows the worktree")
    p1, p2, p3 = clone.web, clone.base / "p2", clone.base / "p3"
    for src, dst in ((p1, p2), (p2, p1), (p1, p3)):
        git("worktree", "move", str(src), str(dst), cwd=clone.main)
        assert run_cli("status", cwd=dst).returncode == 0  # the first command there adopts
        assert files(box_of(clone, dst) / "inbox") == [msg_id + ".json"], f"not adopted into {dst}"
    assert files(box_of(clone, p1) / "inbox") == [] and files(box_of(clone, p2) / "inbox") == []
    assert [(r["source"], r["box"]) for r in journal(clone, "adopted")] == [
        (box_of(clone, p1).name, box_of(clone, p2).name), (box_of(clone, p2).name, box_of(clone, p1).name),
        (box_of(clone, p1).name, box_of(clone, p3).name)]
    invariants.check(clone.mail_root)
    ans, _ = hook("SessionStart", p3, "sess-p3")
    assert "follows the worktree" in context_of(ans)
    hook("Stop", p3, "sess-p3")
    fate = sent_fates(clone)[msg_id]
    assert fate["state"] == "consumed" and fate["moved_to"][-1] == box_of(clone, p3).name, fate


# -- the label list and send print is an address (issue 25) ---------------------------
@pytest.mark.parametrize("typed", ["ui", "(ui)"])
def test_the_label_list_and_send_print_addresses_the_worktree(clone, typed):
    """A worktree in `UI ü` is labelled `ui` (its key's slug): `--to ui` and the printed `(ui)`
    reach it; its directory name still does, and a name no label has is still refused."""
    ui = clone.add_worktree("UI ü", branch="front")
    listed = run_cli("list", cwd=clone.main, check=True).stdout
    assert any(line.startswith("ui  ") and str(ui)[-30:] in line for line in listed.splitlines()), listed
    proc = run_cli("send", "--to", typed, "hi", cwd=clone.main)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].endswith(f"-> ../{ui.name} (ui)")
    assert len(files(box_of(clone, ui) / "inbox")) == 1
    refused = run_cli("send", "--to", "(u)", "hi", cwd=clone.main)
    assert refused.returncode == 1 and "no worktree, session name or box key matches" in refused.stderr
