"""Store invariants, checked from the outside (plain file reads, no product code paths).

`check(mail_root)` asserts (I1-I5 as docs/STORE.md names them), for every box, what must hold once every process
touching the store is idle (or dead) and a clean drain has run:

- I1: every message id is in exactly one of inbox/ seen/ expired/ cancelled/ dropped/, and every file
  there is a complete, valid message whose id matches its name;
- I2: a receipt exists iff the message is in seen/, at most one per id (one name per
  id is all a directory can hold), and it is complete JSON naming that id; a pruned pair
  (retention) is both gone, and only a prune still under way (its `pruning/<id>.json`
  marker) may hold one without the other;
- I3: no claim is left in claiming/ (not even a breaker's `.broken-` file) when idle;
- I4: nothing half-written: no `*.tmp` anywhere in a box, every display marker and
  notice parses, the only staging files in tmp/ are a killed sender's, and those
  are complete messages (a torn one is tolerated only with `torn_tmp_ok`, for
  tests that kill senders at random instants inside a write);
- I5: the journal records `consumed` at most once per id, and only for an id with a
  receipt from that same session; every `sent/` record (in a box, or the mail root's for senders outside every
  worktree) names a message that exists in its target box, or in the box that the
  target's `forwarded/` records lead to; and a message with a `forwarded/` record is no longer queued in that source box.
- I6: one answer per question: every `answers/<question id>.json` is complete JSON naming that
  question and holding its answer message; that message is in exactly one state of the asker's
  box (never lost), and no other message anywhere answers the same question (never doubled).
- I7: life locks (store/life.py): `live/` holds only files named `<pid>-<start|x>-<8 hex>`, and
  when idle none of them is locked (a lock held while idle is a process that should have ended,
  and would keep its waits and claims looking alive).

It returns a summary (ids per state, debris found) for step-specific assertions.
"""

import json
import os
import re
import stat

from git_korus_mail.store.message import Invalid, parse

ROOT_NAMES = {"OFF", "tmp", "box", "hooks", "journal.jsonl", "journal.1.jsonl", "journal.lock", "sent", "waits", "relay",
              "live", "fast", "reservations", "RESERVED"}
LIVE_NAME = re.compile(r"^\d+-(\d+|x)-[0-9a-f]{8}$")  # store/life.py
STATES = ("inbox", "seen", "expired", "cancelled", "dropped")
ARRIVAL_NAME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z\+\d{8}T\d{6}\.\d{6}Z-p\d+-[0-9a-f]{16}$")  # store/arrivals.py
TURN_STAGED = re.compile(r"^\.(?P<session>.+)\.state\.(?P<pid>\d+)$")  # hooks/hook.sh, killed before its mv
TURN_RECORD = re.compile(r"^(working|idle) [A-Za-z]+ \d+\n$")  # store/presence.py, the stub's turn record
MSG_TMP = re.compile(r"^msg\.(?P<id>\d{8}T\d{6}\.\d{6}Z-p\d+-[0-9a-f]{16})$")  # store.staging_name
STAGING_TMP = re.compile(r"^(?P<kind>claim|receipt|marker|replace|fwd|fwdrec|prune|answer|wait|live|event)\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]+$")


class Summary(dict):
    """{box name: {"inbox": set, "seen": set, "expired": set, "receipts": {id: dict}, ...}},
    plus .tmp_messages, .debris, .journal."""


def _read(path):
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode), f"{path}: not a regular file"
    with open(path, "rb") as f:
        return f.read(), st


def _ls(path):
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def _check_fast(fast):
    """fast/ (store/fastpath.py): stamps `<key>` -> `<key>.<12 hex>`, each such directory holding
    inbox ->, cwd ->, seen and names/ (empty files named like messages), or, for a box with no
    inbox, inbox -> and cwd -> alone; either may also hold box -> (a stamp that lets the stub answer
    a prompt or a Stop: docs/HOOKS.md, "A turn with nothing new"); a killed writer may leave a generation without its symlink,
    or a `.link`, never anything else. A generation a symlink names is whole, of one form or the other."""
    for name in _ls(fast):
        path = os.path.join(fast, name)
        if os.path.islink(path):
            target = os.readlink(path)
            assert "/" not in target and target.startswith(name.removesuffix(".link") + "."), (name, target)
            if os.path.isdir(os.path.join(fast, target)):
                assert set(_ls(os.path.join(fast, target))) - {"box"} in (
                    {"inbox", "cwd"}, {"inbox", "cwd", "seen", "names"}), (name, _ls(os.path.join(fast, target)))
            continue
        assert os.path.isdir(path), f"fast/{name}: neither a stamp nor a stamp's directory"
        assert set(_ls(path)) <= {"inbox", "cwd", "seen", "names", "box"}, (name, _ls(path))
        for entry in _ls(os.path.join(path, "names")):
            assert entry.endswith(".json"), (name, entry)
            assert os.path.getsize(os.path.join(path, "names", entry)) == 0, (name, entry)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _locked(path):
    """Whether some process holds the POSIX lock on `path` (a shared probe lock fails)."""
    import fcntl
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def journal(mail_root):
    out = []
    for name in ("journal.1.jsonl", "journal.jsonl"):
        p = os.path.join(mail_root, name)
        if not os.path.exists(p):
            continue
        with open(p, "rb") as f:
            for n, raw in enumerate(f, 1):
                try:
                    rec = json.loads(raw)
                except ValueError:
                    raise AssertionError(f"{name}:{n}: torn journal line {raw[:80]!r}") from None
                out.append(rec)
    return out


def check(mail_root, idle=True, torn_tmp_ok=False, killed_debris_ok=False, quarantine_ok=False,
          half_published_ok=False):
    """Assert the invariants over `<common>/mail`; returns a Summary.

    idle: no process is working on the store, so no claim may remain.
    torn_tmp_ok: a sender killed inside its tmp write may leave a torn, never-linked staging file.
    killed_debris_ok: a process killed at a random instant may leave its own staging debris (claim,
        receipt or marker staging files in tmp/, presence temp files in sessions/), which must name
        a dead pid. Never visible to a reader.
    half_published_ok: a sender killed between linking its message into the inbox and unlinking
        the staging file leaves the message with a second link in tmp/; a reader finishes that
        publication only after PUBLISH_GRACE (60 s).
    """
    mail_root = str(mail_root)
    summary = Summary()
    summary.tmp_messages = {}
    summary.debris = []
    summary.half_published = []
    assert os.path.isdir(mail_root), f"no mail root at {mail_root}"
    stray = set(_ls(mail_root)) - ROOT_NAMES
    assert not stray, f"unexpected entries in the mail root: {sorted(stray)}"
    _check_fast(os.path.join(mail_root, "fast"))

    # -- tmp/: only staging files of killed processes --------------------------
    tmp = os.path.join(mail_root, "tmp")
    for name in _ls(tmp):
        path = os.path.join(tmp, name)
        m = MSG_TMP.match(name)
        if m:
            data, st = _read(path)
            try:
                msg = parse(data, expected_id=m.group("id"))
            except Invalid as exc:
                if torn_tmp_ok and st.st_nlink == 1:
                    summary.debris.append(("torn-tmp", name, len(data)))
                    continue
                raise AssertionError(f"tmp/{name}: staging file is not a complete message ({exc}; "
                                     f"{len(data)} bytes, nlink {st.st_nlink})") from None
            summary.tmp_messages[name] = (msg, st)
            continue
        m = STAGING_TMP.match(name)
        if m and killed_debris_ok:
            assert not _pid_alive(int(m.group("pid"))), f"tmp/{name}: staging file of a live pid while idle"
            summary.debris.append((m.group("kind") + "-tmp", name))
            continue
        raise AssertionError(f"tmp/{name}: leftover staging file that is no killed sender's message")

    # -- live/: life locks (I7) ---------------------------------------------------------
    live = os.path.join(mail_root, "live")
    for name in _ls(live):
        assert LIVE_NAME.match(name), f"live/{name}: not a life lock's name"
        _read(os.path.join(live, name))  # a regular file
        if idle and not name.startswith(f"{os.getpid()}-") and not name.startswith(f"{_relay_pid(mail_root)}-"):
            # (probing our own lock would drop it; the clone's relay, docs/RELAY.md, is a daemon
            # that takes claims through the store: its lock is held as long as it runs)
            assert not _locked(os.path.join(live, name)), f"live/{name}: its life lock is held while idle"

    # -- pruned: ids the journal says retention removed ------------------------------
    recs = journal(mail_root)
    pruned = {i for r in recs if r.get("event") == "pruned" and isinstance(r.get("ids"), list) for i in r["ids"]}
    summary.pruned = pruned
    # the relay's records of mail for other clones: pruned by retention, or forgotten with the
    # relay's directory when the remote was removed (docs/RELAY.md)
    summary.relay_pruned = {i for r in recs if r.get("event") in ("relay-pruned", "relay-forgotten")
                            and isinstance(r.get("ids"), list) for i in r["ids"]}

    # -- boxes ------------------------------------------------------------------
    all_ids = {}
    boxes = os.path.join(mail_root, "box")
    for bname in _ls(boxes):
        bdir = os.path.join(boxes, bname)
        assert os.path.isdir(bdir) and not os.path.islink(bdir), f"box/{bname}: not a directory"
        info = {s: set() for s in STATES}
        where = {}
        relayed_queued = set()  # queued mail the relay put here (from.clone is "<label>:<clone id>")
        for sub in STATES:
            for name in _ls(os.path.join(bdir, sub)):
                path = os.path.join(bdir, sub, name)
                assert name.endswith(".json") and not name.startswith("."), f"{bname}/{sub}/{name}: stray file"
                msg_id = name[:-5]
                data, st = _read(path)
                try:
                    parsed = parse(data, expected_id=msg_id)
                except Invalid as exc:
                    raise AssertionError(f"{bname}/{sub}/{name}: partial or invalid message: {exc}") from None
                if sub == "inbox" and ":" in str(parsed["from"].get("clone") or ""):
                    relayed_queued.add(msg_id)
                if st.st_nlink != 1:
                    staged = [n for n, (m, tst) in summary.tmp_messages.items()
                              if m["id"] == msg_id and (tst.st_dev, tst.st_ino) == (st.st_dev, st.st_ino)]
                    assert half_published_ok and sub == "inbox" and staged and st.st_nlink == 2, (
                        f"{bname}/{sub}/{name}: {st.st_nlink} links while idle (a move or publication "
                        f"left half done)")
                    summary.half_published.append(msg_id)
                where.setdefault(msg_id, []).append(sub)
                info[sub].add(msg_id)
        for msg_id, subs in where.items():
            assert len(subs) == 1, f"{bname}: message {msg_id} is in {subs} (must be in exactly one)"
            assert msg_id not in all_ids, f"message {msg_id} in two boxes: {all_ids[msg_id]} and {bname}"
            all_ids[msg_id] = bname

        pruning = set()  # prunes under way: a killed pruner's, finished by the next prune
        for name in _ls(os.path.join(bdir, "pruning")):
            assert name.endswith(".json") and not name.startswith("."), f"{bname}/pruning/{name}: stray file"
            rec = json.loads(_read(os.path.join(bdir, "pruning", name))[0])  # raises on a torn marker
            assert rec.get("id") == name[:-5], f"{bname}/pruning/{name}: marker of another id"
            assert rec["id"] not in info["inbox"], f"{bname}: {rec['id']} is being pruned and is queued"
            pruning.add(rec["id"])
        info["pruning"] = pruning
        pruned |= pruning

        receipts = {}
        for name in _ls(os.path.join(bdir, "receipts")):
            assert name.endswith(".json") and not name.startswith("."), f"{bname}/receipts/{name}: stray file"
            data, _ = _read(os.path.join(bdir, "receipts", name))
            try:
                rec = json.loads(data)
            except ValueError:
                raise AssertionError(f"{bname}/receipts/{name}: partial receipt ({len(data)} bytes: "
                                     f"{data[:60]!r})") from None
            assert isinstance(rec, dict) and rec.get("id") == name[:-5], f"{bname}/receipts/{name}: wrong id"
            assert isinstance(rec.get("session"), str) and rec["session"], f"{bname}/receipts/{name}: no session"
            receipts[name[:-5]] = rec
        no_receipt = info["seen"] - set(receipts) - pruning
        orphan = set(receipts) - info["seen"] - pruning
        assert not no_receipt, f"{bname}: in seen/ without a receipt: {sorted(no_receipt)}"
        assert not orphan, f"{bname}: receipt without the message in seen/: " + ", ".join(
            f"{i} (in {where.get(i, ['nowhere'])})" for i in sorted(orphan))
        info["receipts"] = receipts

        claiming = _ls(os.path.join(bdir, "claiming"))
        if idle:
            assert not claiming, f"{bname}: claims left while idle: {claiming}"
        info["claiming"] = claiming

        for name in _ls(os.path.join(bdir, "notices")):
            data, _ = _read(os.path.join(bdir, "notices", name))
            note = json.loads(data)  # raises on a partial notice
            assert note.get("id") in info["expired"] | info["dropped"] | pruning, (
                f"{bname}: notice for {note.get('id')} not in expired/ or dropped/")

        # drops/<id>.json: why a message was dropped; written just before its link into dropped/
        for name in _ls(os.path.join(bdir, "drops")):
            assert name.endswith(".json") and not name.startswith("."), f"{bname}/drops/{name}: stray file"
            why = json.loads(_read(os.path.join(bdir, "drops", name))[0])  # raises on a torn record
            assert why.get("id") == name[:-5] and why.get("rule") in ("loop", "rate"), f"{bname}/drops/{name}: {why}"
            assert why["id"] in info["dropped"] | info["inbox"] | pruning, f"{bname}/drops/{name}: its message is not dropped"
        no_why = info["dropped"] - {n[:-5] for n in _ls(os.path.join(bdir, "drops"))}
        assert not no_why, f"{bname}: dropped without a drops/ record: {sorted(no_why)}"

        # arrived/<YYYYMMDDTHHMMSS.ffffffZ>+<id>: empty, made by the relay before it queues relayed
        # mail (store/arrivals.py), so every relayed message still queued has one
        arrived = set()
        for name in _ls(os.path.join(bdir, "arrived")):
            assert ARRIVAL_NAME.match(name), f"{bname}/arrived/{name}: stray file"
            assert os.lstat(os.path.join(bdir, "arrived", name)).st_size == 0, f"{bname}/arrived/{name}: not empty"
            arrived.add(name[24:])
        no_arrival = relayed_queued - arrived
        assert not no_arrival, f"{bname}: relayed mail queued with no arrival record: {sorted(no_arrival)}"

        # sessions/: presence (<session>.json, whole: written by replace), what `who` learned
        # (.roster), the faults flag (.faults, empty) and the stub's turn record (.state, one line
        # of three words, store/presence.py). A stub killed between its write and its `mv` leaves
        # its staged record `.<session>.state.<pid>` (hooks/hook.sh), which nothing reads and an
        # opening show sweeps (presence.sweep_staged): debris of a dead pid, never anything else.
        for name in _ls(os.path.join(bdir, "sessions")):
            path = os.path.join(bdir, "sessions", name)
            m = TURN_STAGED.match(name)
            if m:
                assert killed_debris_ok, f"{bname}/sessions/{name}: a staged turn record left while no stub was killed"
                assert not _pid_alive(int(m.group("pid"))), f"{bname}/sessions/{name}: staged by a live pid while idle"
                summary.debris.append(("turn-staged", name))
                continue
            assert not name.startswith("."), f"{bname}/sessions/{name}: stray file"
            base, _dot, suffix = name.rpartition(".")
            assert base and suffix in ("json", "roster", "faults", "state"), f"{bname}/sessions/{name}: stray file"
            data, _ = _read(path)
            if suffix in ("json", "roster"):
                json.loads(data)  # raises on a torn record
            elif suffix == "faults":
                assert data == b"", f"{bname}/sessions/{name}: the faults flag holds {data[:40]!r}"
            else:
                assert TURN_RECORD.match(data.decode("ascii", "replace")), f"{bname}/sessions/{name}: {data[:80]!r}"

        shown = os.path.join(bdir, "shown")
        markers = {}
        for launch_dir in _ls(shown):
            # shown/<session>@<launch>/: one directory per launch of a session (docs/CONTRACT.md)
            sess, _, launch = launch_dir.rpartition("@")
            assert sess and launch, f"{bname}/shown/{launch_dir}: not a <session>@<launch> directory"
            for name in _ls(os.path.join(shown, launch_dir)):
                if name.endswith(".skip"):
                    continue
                data, _ = _read(os.path.join(shown, launch_dir, name))
                try:
                    obs = json.loads(data)
                except ValueError:
                    raise AssertionError(f"{bname}/shown/{launch_dir}/{name}: partial "
                                         f"{'launch record' if name == '.launch' else 'display marker'} "
                                         f"({len(data)} bytes)") from None
                if name == ".launch":
                    assert obs.get("tag") == launch and obs.get("session") == sess, \
                        f"{bname}/shown/{launch_dir}/.launch: record of another launch: {obs}"
                    continue
                assert obs.get("session") == sess and obs.get("launch") == launch, \
                    f"{bname}/shown/{launch_dir}/{name}: marker of another session or launch"
                markers.setdefault(name, set()).add(sess)
        info["markers"] = markers

        q = _ls(os.path.join(bdir, "quarantine"))
        if not quarantine_ok:
            assert not q, f"{bname}: quarantined: {q}"

        for dirpath, dirnames, filenames in os.walk(bdir):
            for name in filenames + dirnames:
                if name.endswith(".tmp") or ".tmp." in name:
                    # every staging file lives in tmp/ (swept after 36 h); none may sit in a box
                    rel = os.path.relpath(os.path.join(dirpath, name), mail_root)
                    raise AssertionError(f"{rel}: leftover temp file")
        summary[bname] = info

    # -- tmp messages: a killed sender's, linked into an inbox at most ---------------
    for name, (msg, st) in summary.tmp_messages.items():
        box = all_ids.get(msg["id"])
        if box is not None:
            assert msg["id"] in summary[box]["inbox"] or st.st_nlink == 1, name

    # -- journal -------------------------------------------------------------------
    consumed = {}
    for rec in recs:
        assert "at" in rec and "event" in rec, f"journal record without time or event: {rec}"
        if rec["event"] == "consumed":
            consumed.setdefault(rec["id"], []).append(rec)
    for msg_id, lst in consumed.items():
        assert len(lst) == 1, f"journal: {msg_id} consumed {len(lst)} times: {lst}"
        box = lst[0].get("box")
        if msg_id in pruned and box in summary and not any(msg_id in summary[box][s] for s in STATES):
            continue  # consumed, then pruned with its receipt: the pair is gone together
        assert box in summary and msg_id in summary[box]["receipts"], f"journal: {msg_id} consumed, no receipt"
        assert summary[box]["receipts"][msg_id]["session"] == lst[0].get("session"), (
            f"journal: {msg_id} consumed by {lst[0].get('session')}, receipt says "
            f"{summary[box]['receipts'][msg_id]['session']}")
    summary.journal = recs
    summary.consumed_journal = consumed

    # -- forwarded records: the move finished ------------------------------------------
    forwards = {}
    for bname in _ls(boxes):
        for name in _ls(os.path.join(boxes, bname, "forwarded")):
            rec = json.loads(_read(os.path.join(boxes, bname, "forwarded", name))[0])
            assert rec.get("id") == name[:-5] and isinstance(rec.get("box"), str), f"{bname}/forwarded/{name}"
            assert rec["id"] not in summary[bname]["inbox"], (
                f"{bname}: {rec['id']} is forwarded to {rec['box']} and still queued here (move left half done)")
            forwards[(bname, rec["id"])] = rec["box"]
    summary.forwards = forwards

    # -- sent records point at real messages -------------------------------------------
    sent_dirs = [os.path.join(boxes, b, "sent") for b in _ls(boxes)] + [os.path.join(mail_root, "sent")]
    for d in sent_dirs:
        for name in _ls(d):
            rec = json.loads(_read(os.path.join(d, name))[0])
            if isinstance(rec.get("remote"), dict):
                # mail for another clone (docs/RELAY.md): its box is there; here it is in the
                # relay's outbox, or the relay's sent records (published, or decided cancelled)
                relay = os.path.join(mail_root, "relay")
                assert rec["id"] in summary.relay_pruned or any(os.path.exists(os.path.join(relay, sub, name))
                                                        for sub in ("outbox", "sent")), (
                    f"{os.path.relpath(d, mail_root)}/{name}: mail for {rec['remote'].get('label')} is neither "
                    f"in the relay's outbox nor among its sent records")
                continue
            box, hops = rec.get("box"), 0
            while box in summary and not any(rec["id"] in summary[box][s] for s in STATES) and hops < 16:
                box, hops = forwards.get((box, rec["id"])), hops + 1
            target = summary.get(box)
            if rec["id"] in pruned and (target is None or not any(rec["id"] in target[s] for s in STATES)):
                continue  # its message was pruned after its retention
            assert target is not None and any(rec["id"] in target[s] for s in STATES), (
                f"{os.path.relpath(d, mail_root)}/{name}: the message it records is in no state of box "
                f"{rec.get('box')} (nor where it was forwarded)")
    _check_answers(boxes, summary)
    _check_reservations(mail_root)
    return summary


def _check_reservations(mail_root):
    """I8, reservations (docs/STORE.md, "Reservations"): every record is complete and named by its
    id, and while any exists the hook stub's signal RESERVED exists too."""
    d = os.path.join(mail_root, "reservations")
    names = [n for n in _ls(d) if n.endswith(".json")]
    for name in names:
        rec = json.loads(_read(os.path.join(d, name))[0])
        assert rec.get("v") == 1 and rec.get("id") == name[:-5] and rec.get("paths"), f"reservations/{name}"
    if names:
        assert os.path.exists(os.path.join(mail_root, "RESERVED")), "a reservation without the stub's signal"
    # I9: a told record (<id>.told-<session key>) never outlives its reservation, and is whole
    for name in _ls(d):
        rid, sep, _key = name.partition(".told-")
        if sep:
            assert rid + ".json" in names, f"reservations/{name}: told of a reservation that is gone"
            told = json.loads(_read(os.path.join(d, name))[0])
            assert told.get("v") == 1 and told.get("id") == rid and told.get("session"), f"reservations/{name}"


def _check_answers(boxes, summary):
    """I6, from plain reads: answer records against the answer messages on disk."""
    answering = {}  # question id -> [answer message ids found in any state of any box]
    across = {}     # the same, for answers that came from another clone
    for bname in _ls(boxes):
        for sub in STATES:
            for name in _ls(os.path.join(boxes, bname, sub)):
                msg = json.loads(_read(os.path.join(boxes, bname, sub, name))[0])
                if msg.get("kind") == "answer" and ":" in str((msg.get("from") or {}).get("clone") or ""):
                    # the answer to a question asked of another clone (docs/RELAY.md): decided
                    # there, once; here it must be one message in one state
                    across.setdefault(msg.get("in_reply_to"), []).append(msg["id"])
                elif msg.get("kind") == "answer":
                    answering.setdefault(msg.get("in_reply_to"), []).append(msg["id"])
    decided = {}
    for bname in _ls(boxes):
        for name in _ls(os.path.join(boxes, bname, "answers")):
            rec = json.loads(_read(os.path.join(boxes, bname, "answers", name))[0])
            qid = name[:-5]
            assert rec.get("question") == qid and isinstance(rec.get("message"), dict), f"{bname}/answers/{name}"
            msg = rec["message"]
            if isinstance(rec.get("across"), dict):
                # the asker is on another clone: its answer went into this clone's relay outbox,
                # then the relay's sent records (or was pruned from them)
                relay = os.path.join(os.path.dirname(boxes), "relay")
                assert msg["id"] in summary.relay_pruned or any(
                    os.path.exists(os.path.join(relay, sub, msg["id"] + ".json")) for sub in ("outbox", "sent")), (
                    f"{bname}/answers/{name}: its answer {msg['id']} for another clone never left (lost)")
                continue
            asker = summary.get(msg["to"]["key"])
            if msg["id"] in summary.pruned and (asker is None or not any(msg["id"] in asker[s] for s in STATES)):
                decided[qid] = None  # delivered, then pruned after its retention
                continue
            assert asker is not None and sum(msg["id"] in asker[s] for s in STATES) == 1, (
                f"{bname}/answers/{name}: its answer {msg['id']} is in no state of the asker's box (lost)")
            decided[qid] = msg["id"]
    for qid, found in answering.items():
        assert found == [decided.get(qid)], f"question {qid}: answers {found}, decided {decided.get(qid)} (doubled?)"
    for qid, found in across.items():
        assert len(found) == 1, f"question {qid} asked of another clone: answers {found} here (doubled?)"


def ids(summary, state):
    """All ids in `state` across boxes."""
    out = set()
    for info in summary.values():
        out |= info[state]
    return out


def _relay_pid(mail_root):
    """The pid of the clone's running relay (mail/relay/lock, docs/RELAY.md), or None."""
    try:
        with open(os.path.join(mail_root, "relay", "lock")) as f:
            pid = int(f.read().strip() or 0)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return pid if b"git_korus_mail.core.relayhost" in f.read() else None
    except (OSError, ValueError):
        return None
