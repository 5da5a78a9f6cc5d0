"""The on-disk queue inside the clone's git common dir: publish, claim, move, expire.

Everything lives under `<git-common-dir>/mail/`: nothing under .git can enter a
commit, and it is no ref namespace, so `push --mirror` cannot carry it either.

State transitions of one message (each arrow is one link or unlink; a crash
between two of them is repaired by the next reader, see `Box.repair`):

    tmp/x --link--> inbox/<id>.json --unlink tmp/x                     (publish)
    inbox --claim--> receipt (excl. link) --link--> seen --unlink inbox (consume)
    inbox --claim--> link expired --> notice --> unlink inbox          (expire)

Exactly-once consumption rests on the receipt: `receipts/<id>.json` is created
exclusively (staged in tmp/ and hard-linked into place, which fails when it exists,
and never leaves a torn receipt), so at most one session ever consumes a message,
whatever the claims did. A receipt exists iff the message reached seen/.
"""

import os
import stat
import time

from git_korus_mail import fastjson as json  # not the json package: it imports re (hot path)
from git_korus_mail import crash
from git_korus_mail.store import claims, journal
from git_korus_mail.errors import MailError
from git_korus_mail.store.fsafe import SMALL_FILE, Dir, NotOwned, NotRegular, TooLarge  # noqa: F401 - NotOwned: for callers
from git_korus_mail.message import MAX_FILE_BYTES, Invalid, expires_at, id_time, parse, utc_stamp, valid_id

MAIL_DIR = "mail"
OFF_FILE = "OFF"
TMP_MAX_AGE = 36 * 3600
MSG_SUFFIX = ".json"
WHY_SUFFIX = ".why.json"  # quarantine/<q-name>.why.json: why a file was moved aside
WORKTREE_FILE = "worktree"  # see forwarding: which worktree the box belongs to
PUBLISH_GRACE = 60  # seconds a half-published message (tmp link still present) is left alone
CONSUME_PATIENCE = 0.5  # seconds a Stop waits for another live consumer of the same message

CANCELLED = "cancelled"  # withdrawn by their sender before anyone consumed them (Box.cancel)
BOX_SUBDIRS = ("inbox", "claiming", "seen", "expired", CANCELLED, "receipts", "shown", "sessions", "notices",
               "quarantine", "sent", "forwarded")


def staging_name(msg_id):
    """The name in tmp/ a message is written under before it is linked into an inbox."""
    return f"msg.{msg_id}"


def quarantine_name(t):
    """quarantine/q-YYYYMMDDTHHMMSSZ-<12 hex>: ours, short, and sorting by time."""
    return f"q-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(t))}-{os.urandom(6).hex()}"


def mail_root_path(common_dir):
    return os.path.join(common_dir, MAIL_DIR)


class MailRoot:
    """`<common>/mail/`, opened safely. `create=False` returns None from `open` when absent."""

    def __init__(self, common_dir, root_dir):
        self.common_dir = common_dir
        self.dir = root_dir
        self.path = root_dir.path
        self._tmp = None
        self.journal_faults = []  # journal appends that failed, for the caller to report

    def take_journal_faults(self):
        """The journal faults so far, once each (deduplicated, in order)."""
        out = list(dict.fromkeys(self.journal_faults))
        self.journal_faults = []
        return out

    @classmethod
    def open(cls, common_dir, create=False):
        path = mail_root_path(common_dir)
        try:
            d = Dir.open_path(path, create=create)
        except FileNotFoundError:
            if create:
                raise MailError(f"cannot create {path}") from None
            return None
        return cls(common_dir, d)

    # -- global switches and staging ---------------------------------------
    def close(self):
        self.dir.close()

    def lstat(self, name):
        """lstat of a file directly under the mail root (doctor checks the journal's files)."""
        return self.dir.lstat(name)

    def read_journal(self, limit=None):
        """The journal's records, oldest first (see journal.read)."""
        return journal.read(self.dir, limit=limit)

    def is_off(self):
        return self.dir.exists(OFF_FILE)

    def set_off(self, off):
        if off:
            try:
                self.dir.create_exclusive(OFF_FILE, f"delivery turned off at {utc_stamp(time.time())}\n".encode())
                return True
            except FileExistsError:
                return False
        return self.dir.unlink_quiet(OFF_FILE)

    @property
    def tmp(self):
        if self._tmp is None:
            self._tmp = self.dir.ensure_sub("tmp")
        return self._tmp

    def journal(self, event, **fields):
        """Append a journal line; True when written. Never raises for a journal that cannot be
        written: the journal is history, the links and receipts are the truth, so a failed line
        must not turn a done move into a reported failure. The fault is kept in
        `journal_faults` for the caller to report (docs/HOOKS.md)."""
        try:
            journal.append(self.dir, event, **fields)
            return True
        except (OSError, MailError) as exc:
            text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            self.journal_faults.append(f"journal line not written ({event}): {text}")
            return False
        except Exception as exc:  # noqa: BLE001 - e.g. portalocker's timeout while rotating: reported, not fatal
            self.journal_faults.append(f"journal trouble after {event}: {type(exc).__name__}: {exc}")
            return False

    # -- boxes ---------------------------------------------------------------
    def boxes_dir(self, create=False):
        if create:
            return self.dir.ensure_sub("box")
        return self.dir.open_sub("box")

    def box(self, key_name, create=False, path=None, owner=None):
        """The box named `key_name`; None when it does not exist and create is False.

        `owner`, when given, is a callable returning the worktree identity (wtident) the box
        belongs to: a box first made for it adopts the queue of that worktree's older box."""
        boxes = self.boxes_dir(create=create)
        if boxes is None:
            return None
        d = boxes.ensure_sub(key_name) if create else boxes.open_sub(key_name)
        if d is None:
            return None
        box = Box(self, key_name, d)
        # `worktree` is the last file a box's first use writes, so its presence says all of it
        # was done: one stat per hook event, not a read, and no scan unless the box is new
        if create and path is not None and not d.exists(WORKTREE_FILE):
            self._first_use(box, path, owner)
        return box

    def _first_use(self, box, path, owner):
        """Record the path, adopt a moved worktree's queue, then record the worktree identity.

        A process killed anywhere in here leaves `worktree` absent, so the next one redoes it all
        (each step is idempotent: see forwarding)."""
        if not box.dir.exists("path"):
            # the box name is a hash of this very path; write_replace: complete or absent, never torn
            box.dir.write_replace("path", (path + "\n").encode("utf-8", "surrogateescape"), self.tmp)
        if owner is None:
            return  # who it belongs to is for a caller that knows (the drain always does)
        from git_korus_mail.store import forwarding  # only for a new box: off the hot path
        ident = owner()
        if forwarding.adopt(self, box, ident):
            forwarding.write_worktree(box, ident)

    def box_names(self):
        boxes = self.boxes_dir()
        if boxes is None:
            return []
        return sorted(n for n in boxes.names() if not n.startswith("."))

    def tmp_entries(self):
        """[(name, lstat)] of the staging area, without creating it (doctor, uninstall)."""
        tmp = self.dir.open_sub("tmp")
        out = []
        for name in tmp.names() if tmp is not None else []:
            try:
                out.append((name, tmp.lstat(name)))
            except FileNotFoundError:
                continue
        return out

    def tmp_path(self):
        return os.path.join(self.path, "tmp")

    def ensure_dir_path(self, name):
        """The path of `name` directly under the mail root, made (0700) when absent (install's hooks/)."""
        return self.dir.ensure_sub(name).path

    def sweep_tmp(self, now=None):
        """Remove staging files older than 36 h: the only thing a crashed sender leaves."""
        now = time.time() if now is None else now
        removed = 0
        for name in self.tmp.names():
            try:
                st = self.tmp.lstat(name)
            except FileNotFoundError:
                continue
            if now - st.st_mtime > TMP_MAX_AGE and not stat.S_ISDIR(st.st_mode):
                removed += self.tmp.unlink_quiet(name)
        return removed


class Box:
    """One recipient's box. Subdirectories are opened lazily and created on first need."""

    def __init__(self, root, name, d):
        self.root = root
        self.name = name
        self.dir = d
        self._subs = {}

    def ensure_sub(self, name):
        """A subdirectory, created when absent: for writers only."""
        d = self._subs.get(name)
        if d is None:
            d = self._subs[name] = self.dir.ensure_sub(name)
        return d

    def open_sub(self, name):
        """A subdirectory, or None when absent. Never creates: what every read uses."""
        d = self._subs.get(name)
        if d is None:
            d = self.dir.open_sub(name)
            if d is not None:
                self._subs[name] = d
        return d

    def has(self, sub, name):
        """Whether `sub/name` exists; an absent subdirectory is not created to find out."""
        d = self.open_sub(sub)
        return d is not None and d.exists(name)

    def path_of(self, sub):
        """Where `sub` is or would be, for messages to people and to the model (never opened)."""
        return os.path.join(self.dir.path, sub)

    def ensure_inbox(self):
        """Open (making) the inbox: a refused one (symlink, owner, mode) raises MailError here."""
        self.ensure_sub("inbox")

    # -- receipts, claims, notices: the records and their formats ----------------
    def receipt(self, msg_id):
        """The consume receipt of `msg_id`: None when there is none, {} when it exists but cannot
        be read (consumed all the same: its presence is the proof), else the record."""
        d = self.open_sub("receipts")
        name = msg_id + MSG_SUFFIX
        if d is None or not d.exists(name):
            return None
        rec = d.read_json(name)
        return rec if isinstance(rec, dict) else {}

    def claim_names(self):
        """Every name in claiming/ (claims and a dead breaker's leftovers), sorted."""
        return sorted(self.names("claiming"))

    def claim_count(self):
        return sum(1 for n in self.names("claiming") if n.endswith(claims.CLAIM_SUFFIX))

    def quarantined_names(self):
        """The files moved aside (their `.why.json` records not counted), unsorted."""
        return [n for n in self.names("quarantine") if not n.endswith(WHY_SUFFIX) and not n.startswith(".")]

    def has_claim(self, msg_id):
        return self.has("claiming", msg_id + claims.CLAIM_SUFFIX)

    def claim_owner(self, msg_id):
        """The owner record of the claim on `msg_id`: None when unclaimed, {} when unreadable."""
        d = self.open_sub("claiming")
        return claims.read_owner(d, msg_id) if d is not None else None

    def read_claim(self, msg_id):
        """The claim's raw bytes (what `release_claim_as_seen` compares against); None when the
        file cannot be read; FileNotFoundError when there is no claim."""
        d = self.open_sub("claiming")
        if d is None:
            raise FileNotFoundError(msg_id)
        try:
            data, _st = d.read_regular(msg_id + claims.CLAIM_SUFFIX, SMALL_FILE)
        except FileNotFoundError:
            raise
        except (OSError, NotRegular, TooLarge):
            return None
        return data

    def release_claim_as_seen(self, msg_id, data):
        """Drop the claim if it still holds `data` (see claims.release_as_seen)."""
        return claims.release_as_seen(self.ensure_sub("claiming"), msg_id, data)

    def notices(self, limit=1000):
        """Expiry notices waiting for this box's next opening show: ([record], [name]). Only
        names we write (`<id>.json`) count; each record's id is its file's name."""
        d = self.open_sub("notices")
        if d is None:
            return [], []
        out, names = [], []
        for name in sorted(d.names())[:limit]:
            if not (name.endswith(MSG_SUFFIX) and valid_id(name[:-len(MSG_SUFFIX)])):
                continue  # not a notice we wrote: its name is nobody's to put in the model's context
            rec = d.read_json(name)
            if isinstance(rec, dict):
                rec["id"] = name[:-len(MSG_SUFFIX)]  # the file's own name, a valid id
                out.append(rec)
                names.append(name)
        return out, names

    def clear_notices(self, names):
        d = self.open_sub("notices")
        if d is not None:
            for name in names:
                d.unlink_quiet(name)

    def recorded_path(self):
        try:
            data, _ = self.dir.read_regular("path", 64 * 1024)
        except (FileNotFoundError, NotRegular, TooLarge):
            return None
        return data.decode("utf-8", "surrogateescape").rstrip("\n")

    def names(self, sub):
        d = self.open_sub(sub)
        return d.names() if d is not None else []

    def inbox_ids(self):
        """Queued ids, oldest first. Names not shaped like a message are returned separately."""
        ids, odd = [], []
        for n in self.names("inbox"):
            if n.endswith(MSG_SUFFIX) and valid_id(n[:-len(MSG_SUFFIX)]):
                ids.append(n[:-len(MSG_SUFFIX)])
            elif not n.startswith("."):
                odd.append(n)  # junk by its name alone: it never sorts ahead of real mail
        ids.sort()
        return ids, odd

    def count(self, sub):
        return sum(1 for n in self.names(sub) if not n.startswith("."))

    # -- publish ---------------------------------------------------------
    def publish(self, msg, data):
        """Maildir publication: complete file in tmp/, fsync, link (never rename-over) into the
        inbox, unlink tmp, fsync the inbox. A crash leaves at most a tmp file behind."""
        tmp = self.root.tmp
        inbox = self.ensure_sub("inbox")
        # named by the id alone (which holds 64 random bits), so a reader that meets the
        # message with two links can look its staging file up: see linked_elsewhere
        tmp_name = staging_name(msg["id"])
        try:
            tmp.create_exclusive(tmp_name, data, sync=True)
        except FileExistsError:
            raise MailError(f"message id {msg['id']} already staged (clock or random source broken?)") from None
        crash.point("send:tmp-written")
        try:
            tmp.link_to(tmp_name, inbox, msg["id"] + MSG_SUFFIX)
        except FileExistsError:
            tmp.unlink_quiet(tmp_name)
            raise MailError(f"message id {msg['id']} already queued (clock or random source broken?)") from None
        crash.point("send:linked")
        tmp.unlink_quiet(tmp_name)
        inbox.fsync()

    # -- reading one message -------------------------------------------------
    def load(self, msg_id, sub="inbox"):
        """Read and validate a message. Raises Invalid / NotRegular / TooLarge / FileNotFoundError."""
        d = self.open_sub(sub)
        if d is None:
            raise FileNotFoundError(msg_id)
        data, st = d.read_regular(msg_id + MSG_SUFFIX, MAX_FILE_BYTES)
        return parse(data, expected_id=msg_id), st

    def linked_elsewhere(self, msg_id, st):
        """Explain a message file with more than one link: our own half-finished move, or not.

        Returns "in-progress" (leave it), "publish-finished" (the other link was ours and is
        gone now, or we completed a dead sender's publication) or None (a foreign hard link:
        quarantine). No window: every link of ours is at a name derived from the id, and
        each is made before the inbox link it pairs with, so when none is found any more
        the inbox entry itself must have dropped to one link, unless a foreign link holds it."""
        same = (st.st_dev, st.st_ino)
        claiming = self.open_sub("claiming")
        if claiming is not None and claiming.exists(msg_id + claims.CLAIM_SUFFIX):
            return "in-progress"
        for sub in ("seen", "expired", CANCELLED):
            d = self.open_sub(sub)
            if d is None:
                continue
            try:
                other = d.lstat(msg_id + MSG_SUFFIX)
            except FileNotFoundError:
                continue
            if (other.st_dev, other.st_ino) == same:
                return "in-progress"
        tmp = self.root.tmp
        try:
            other = tmp.lstat(staging_name(msg_id))
        except FileNotFoundError:
            other = None
        if other is not None and (other.st_dev, other.st_ino) == same:
            if time.time() - other.st_ctime < PUBLISH_GRACE:
                return "in-progress"
            tmp.unlink_quiet(staging_name(msg_id))  # the sender died after linking: finish its publish
            return "publish-finished"
        # none of our links is there now: look again at the inbox entry, which the sender's
        # unlink of its staging file (or a finished move) may have left with one link
        inbox = self.open_sub("inbox")
        try:
            if inbox is None:
                raise FileNotFoundError(msg_id)
            now = inbox.lstat(msg_id + MSG_SUFFIX)
        except FileNotFoundError:
            return "in-progress"  # consumed or expired meanwhile
        if (now.st_dev, now.st_ino) != same:
            return "in-progress"  # replaced since it was read: the next event reads it afresh
        if now.st_nlink == 1:
            return "publish-finished"
        return self._old_staging(msg_id, same)

    def _old_staging(self, msg_id, same):
        """A sender of an older version stages as tmp/msg.<id>.<8 hex>: during an upgrade its
        publication must not pass for an attack either. A scan of tmp/, on this rare path only."""
        tmp = self.root.tmp
        for name in tmp.names():
            if not name.startswith(staging_name(msg_id) + "."):
                continue
            try:
                other = tmp.lstat(name)
            except FileNotFoundError:
                continue
            if (other.st_dev, other.st_ino) == same:
                if time.time() - other.st_ctime < PUBLISH_GRACE:
                    return "in-progress"
                tmp.unlink_quiet(name)
                return "publish-finished"
        return None

    def quarantine(self, name, reason, sub="inbox"):
        """Move a non-message aside (without following or opening it) and record why.

        The file goes under a name we choose (its own may be as long as a name can be, or
        hold any bytes): `q-<time>-<random>`, with the original name kept, JSON-escaped,
        in `<target>.why.json`. Returns the target name, None when the file went meanwhile."""
        src = self.open_sub(sub)
        q = self.ensure_sub("quarantine")
        target = quarantine_name(time.time())
        try:
            src.rename_to(name, q, target)
        except FileNotFoundError:
            return None
        why = {"name": name, "from": sub, "reason": reason, "at": utc_stamp(time.time())}
        q.create_exclusive(target + WHY_SUFFIX, json.dumps(why, sort_keys=True, ensure_ascii=True).encode("ascii"),
                           sync=False)
        self.root.journal("quarantined", box=self.name, name=name, reason=reason)
        return target

    def quarantine_reasons(self):
        """{original file name: reason} from the quarantine's `.why.json` records (for reports)."""
        q = self.open_sub("quarantine")
        out = {}
        if q is None:
            return out
        for n in q.names():
            if not n.endswith(WHY_SUFFIX):
                continue
            why = q.read_json(n)
            if isinstance(why, dict) and isinstance(why.get("name"), str):
                out[why["name"]] = str(why.get("reason") or "no reason recorded")
        return out

    def fate(self, msg_id):
        """(state, session) of one message as the disk says now: "consumed" (a receipt;
        session from it), "consumed-unmoved" (a receipt, still in the inbox: a move to
        finish), "queued", "expired" or "gone". Receipts are the truth, never the journal."""
        name = msg_id + MSG_SUFFIX
        queued = self.has("inbox", name)
        receipt = self.receipt(msg_id)  # {} when unreadable: consumed all the same
        if receipt is not None:
            return ("consumed-unmoved" if queued else "consumed"), receipt.get("session")
        if queued:
            return "queued", None
        if self.has("expired", name):
            return "expired", None
        if self.has(CANCELLED, name):
            return "cancelled", None
        return "gone", None

    # -- consume -----------------------------------------------------------
    def consume(self, msg_id, session, observation, launch=None):
        """Consume a message this session's launch was shown (`launch`: its record, for the
        receipt; see launch.py). Returns one of:
        "consumed" (we did), "gone" (already consumed or expired by someone), "held" (a live
        process holds its claim: try again at a later Stop)."""
        if not self.has("inbox", msg_id + MSG_SUFFIX):
            return "gone"
        owner = claims.me("consume", session)
        got = self._claim(msg_id, owner, patience=CONSUME_PATIENCE)
        if got != "won":
            return got
        crash.point("consume:claimed")
        try:
            if not self.has("inbox", msg_id + MSG_SUFFIX):
                return "gone"
            receipt = {
                "id": msg_id,
                "session": session,
                "launch": launch,
                "consumed_at": utc_stamp(time.time()),
                "observed": observation,
                "pid": owner["pid"],
            }
            try:
                self.ensure_sub("receipts").create_staged(msg_id + MSG_SUFFIX, json.dumps(receipt, sort_keys=True).encode(),
                                                   self.root.tmp, "receipt", sync=True)
            except FileExistsError:
                # an interrupted consume (or, with claims bypassed, one still finishing):
                # complete it; whoever's unlink takes the message out of the inbox journals it
                if self._finish_move(msg_id, "seen"):
                    self._journal_repaired_consume(msg_id)
                return "gone"
            crash.point("consume:receipt")
            if self._finish_move(msg_id, "seen"):
                self.root.journal("consumed", id=msg_id, box=self.name, session=session,
                                  launch=(launch or {}).get("tag"),
                                  shown_at=observation.get("at") if isinstance(observation, dict) else None)
        finally:
            self._release(msg_id, owner)
        crash.point("consume:released")
        return "consumed"

    def _finish_move(self, msg_id, to):
        """inbox -> seen|expired by link then unlink; idempotent, so a repair may call it again.

        True only for the call whose unlink took the message out of the inbox: only one can,
        so journaling on it records each move once, however many processes complete it."""
        inbox = self.ensure_sub("inbox")
        target = self.ensure_sub(to)
        name = msg_id + MSG_SUFFIX
        try:
            inbox.link_to(name, target, name)
        except FileExistsError:
            pass
        except FileNotFoundError:
            return False
        if to != CANCELLED:  # a cancel's steps are not crash-tested: it has no command yet
            crash.point(f"{'consume' if to == 'seen' else 'expire'}:linked{'-seen' if to == 'seen' else ''}")
        if to == "expired":
            self._write_notice(msg_id)
        removed = inbox.unlink_quiet(name)
        if to != CANCELLED:
            crash.point(f"{'consume' if to == 'seen' else 'expire'}:unlinked-inbox")
        target.fsync()
        inbox.fsync()
        return removed

    def _claim(self, msg_id, owner, patience=0.0):
        """"won" or "held". A live holder is waited for up to `patience` seconds (it is
        usually another session's Stop finishing the same message), then we cede: a
        false refusal leaves the message queued, a false win would deliver it twice."""
        claiming = self.ensure_sub("claiming")
        deadline = time.monotonic() + patience
        pause = 0.005
        while True:
            result, holder = claims.acquire(self.root.tmp, claiming, msg_id, owner)
            if result == "won":
                return "won"
            if holder is not None and claims.owner_is_dead(holder):
                if claims.break_dead(claiming, msg_id, holder):
                    self.root.journal("claim-broken", id=msg_id, box=self.name, owner_pid=holder.get("pid"),
                                      owner_session=holder.get("session"))
                    self._repair_one(msg_id)
            elif time.monotonic() >= deadline:
                return "held"
            else:
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            if not self.has("inbox", msg_id + MSG_SUFFIX):
                return "gone"

    def _release(self, msg_id, owner):
        """Drop our claim — only if it is still ours (a broken-and-reclaimed one is not)."""
        claiming = self.ensure_sub("claiming")
        holder = claims.read_owner(claiming, msg_id)
        if holder is None:
            return
        if holder.get("pid") == owner["pid"] and holder.get("start") == owner["start"]:
            claims.release(claiming, msg_id)

    # -- expire --------------------------------------------------------------
    def expire(self, msg_id, msg=None):
        """Move a message past its expiry to expired/ (claimed like a consume). True when moved."""
        owner = claims.me("expire")
        if self._claim(msg_id, owner) != "won":
            return False
        crash.point("expire:claimed")
        try:
            if not self.has("inbox", msg_id + MSG_SUFFIX):
                return False
            if self.has("receipts", msg_id + MSG_SUFFIX):
                self._finish_move(msg_id, "seen")  # consumed, its move interrupted: not expired
                return False
            if not self._finish_move(msg_id, "expired"):
                return False
            sender = (msg or {}).get("from") or {}
            self.root.journal("expired", id=msg_id, box=self.name, sender=sender.get("path"))
            return True
        finally:
            self._release(msg_id, owner)

    # -- cancel --------------------------------------------------------------
    def cancel(self, msg_id, by=None):
        """Withdraw a queued message (the sender's cancel; the command is for later). Claimed like
        a consume and decided under the claim, so of a cancel and a consume of one message exactly
        one happens. Returns "cancelled", "consumed" (a receipt exists: too late), "held" (a live
        process holds the claim: try again) or "gone" (expired, forwarded or never here)."""
        name = msg_id + MSG_SUFFIX
        if not self.has("inbox", name):
            return "consumed" if self.has("receipts", name) else "gone"
        owner = claims.me("cancel")
        got = self._claim(msg_id, owner, patience=CONSUME_PATIENCE)
        if got != "won":
            return "consumed" if got == "gone" and self.has("receipts", name) else got
        try:
            if self.has("receipts", name):
                self._finish_move(msg_id, "seen")  # a consume decided, its move interrupted: too late
                return "consumed"
            if not self.has("inbox", name) or not self._finish_move(msg_id, CANCELLED):
                return "consumed" if self.has("receipts", name) else "gone"
            self.root.journal("cancelled", id=msg_id, box=self.name, by=by)
            return "cancelled"
        finally:
            self._release(msg_id, owner)

    def _write_notice(self, msg_id):
        """Remember an unread expiry so the recipient's next opening show tells them (the seed: nobody was)."""
        sender = sent_at = None
        try:
            msg, _ = self.load(msg_id, "expired")
            sender = (msg.get("from") or {}).get("path")
            sent_at = msg.get("sent_at")
        except (OSError, Invalid, NotRegular, TooLarge):
            pass  # the notice is best-effort detail; the expiry itself stands
        note = {"id": msg_id, "from": sender, "sent_at": sent_at, "expired_at": utc_stamp(time.time())}
        try:
            self.ensure_sub("notices").create_exclusive(msg_id + MSG_SUFFIX, json.dumps(note).encode(), sync=False)
        except FileExistsError:
            pass

    def expire_due(self, now=None, ids=None):
        """Expire every due message (or those among `ids`). Returns the ids moved."""
        now = time.time() if now is None else now
        moved = []
        for msg_id in (ids if ids is not None else self.inbox_ids()[0]):
            try:
                msg, _st = self.load(msg_id)
            except (OSError, Invalid, NotRegular, TooLarge):
                continue  # gone meanwhile, or invalid: the drain quarantines those
            if expires_at(msg) <= now and self.expire(msg_id, msg):
                moved.append(msg_id)
        return moved

    # -- repair --------------------------------------------------------------
    def repair(self):
        """Finish what crashed processes left half-done. Proportional to claims, not to the inbox."""
        claiming = self.open_sub("claiming")
        if claiming is None:
            return 0
        fixed = 0
        for name in claiming.names():
            if name.endswith(claims.CLAIM_SUFFIX):
                msg_id = name[:-len(claims.CLAIM_SUFFIX)]
                holder = claims.read_owner(claiming, msg_id)
                if holder is None or not claims.owner_is_dead(holder):
                    continue
                if claims.break_dead(claiming, msg_id, holder):
                    self.root.journal("claim-broken", id=msg_id, box=self.name, owner_pid=holder.get("pid"),
                                      owner_session=holder.get("session"))
                    self._repair_one(msg_id)
                    fixed += 1
            elif ".claim.broken-" in name:
                # a breaker died after renaming: the file holds the dead owner it judged
                try:
                    data, _ = claiming.read_regular(name, 64 * 1024)
                except (OSError, NotRegular, TooLarge):
                    continue
                if claims.owner_is_dead(claims.parse_owner(data)):
                    claiming.unlink_quiet(name)
                    self._repair_one(name.split(".claim.broken-", 1)[0])  # what the breaker left undone
                    fixed += 1
        return fixed

    def finish_released(self, msg_id):
        """After a person released a claim (`release`): complete the move its owner had decided, if
        any. Returns the message's state now: "queued", "consumed", "expired" or "gone"."""
        self._repair_one(msg_id)
        name = msg_id + MSG_SUFFIX
        if self.has("inbox", name):
            return "queued"
        if self.has("receipts", name):
            return "consumed"
        if self.has(CANCELLED, name):
            return "cancelled"
        return "expired" if self.has("expired", name) else "gone"

    def _repair_one(self, msg_id):
        """After a dead owner's claim is gone: complete its move if it had decided one."""
        name = msg_id + MSG_SUFFIX
        if not self.has("inbox", name):
            self._journal_lost_line(msg_id)
            return
        if self.complete_decided(msg_id):
            return
        forwarded = self.open_sub("forwarded")
        if forwarded is not None and forwarded.exists(name):
            from git_korus_mail.store import forwarding  # a dead forwarder decided a move: finish it
            forwarding.finish(self, msg_id)

    def complete_decided(self, msg_id):
        """Finish a consume (its receipt exists) or an expiry (its expired link exists) that a
        process decided and did not complete. True when one was decided."""
        name = msg_id + MSG_SUFFIX
        if self.has("receipts", name):
            # the consumer died before its journal line (it writes it after the move)
            if self._finish_move(msg_id, "seen"):
                self._journal_repaired_consume(msg_id)
            return True
        for to, event in (("expired", "expired"), (CANCELLED, "cancelled")):
            if self.has(to, name):
                if self._finish_move(msg_id, to):
                    self.root.journal(event, id=msg_id, box=self.name, repaired=True)
                return True
        return False

    def _journal_lost_line(self, msg_id):
        """The dead owner finished its move and died before its journal line: add the line,
        marked repaired, unless it is there after all (it may have died after writing it).
        The journal is history; the receipt and the links were the truth all along."""
        name = msg_id + MSG_SUFFIX
        receipts = self.open_sub("receipts")
        if receipts is not None and receipts.exists(name):
            if not self._journaled("consumed", msg_id):
                self._journal_repaired_consume(msg_id)
            return
        for to, event in (("expired", "expired"), (CANCELLED, "cancelled")):
            if self.has(to, name) and not self._journaled(event, msg_id):
                self.root.journal(event, id=msg_id, box=self.name, repaired=True)

    def _journaled(self, event, msg_id):
        try:
            return journal.has(self.root.dir, event, msg_id)
        except OSError:
            return True  # an unreadable journal: cannot tell, so add nothing (never a double line)

    def _journal_repaired_consume(self, msg_id):
        """Journal a consume that a dead process decided (its receipt names the session)."""
        session = (self.receipt(msg_id) or {}).get("session")  # unreadable: the line just lacks it
        self.root.journal("consumed", id=msg_id, box=self.name, session=session, repaired=True)

    # -- reporting -------------------------------------------------------------
    def oldest_unread_age(self, now=None):
        ids, _ = self.inbox_ids()
        if not ids:
            return None
        try:
            return (time.time() if now is None else now) - id_time(ids[0])
        except ValueError:
            return None

