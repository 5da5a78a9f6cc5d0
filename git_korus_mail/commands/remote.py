"""`remote`: the multi-machine relay of this clone (docs/RELAY.md): `remote add <url>`, the
link's state, `remote remove`. Only `add` and `remove` import nats (relay/server.py)."""

import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Iterator, Optional

from git_korus_mail.errors import MailError, UsageError
from git_korus_mail.relay import local, names

if TYPE_CHECKING:
    from git_korus_mail.core.clone import Clone


@dataclass(frozen=True)
class RemoteArgs:
    action: Optional[str] = None    # "add", "remove", or None: show
    url: Optional[str] = None       # add: the NATS server, nats:// or tls://
    label: Optional[str] = None     # add: this clone's name for the others (default: the host's)
    creds: Optional[str] = None     # add: a NATS credentials file
    force: bool = False             # remove: even with mail in the outbox (it is lost)
    json: bool = False


def run(clone: "Clone", args: "RemoteArgs", out: "IO[str]") -> int:
    if args.action == "add":
        return _add(clone, args, out)
    if args.action == "remove":
        return _remove(clone, args, out)
    return _show(clone, args, out)


def _link() -> Any:
    try:
        from git_korus_mail.relay import server
    except ImportError:
        raise MailError("the relay needs nats-py: pip install 'git-korus-mail[remote]'") from None
    return server


def _add(clone: "Clone", args: "RemoteArgs", out: "IO[str]") -> int:
    common = clone.common_dir
    if args.url is None or not args.url.startswith(("nats://", "tls://")):
        raise UsageError(f"{args.url!r}: a NATS URL, nats://host:port or tls://host:port")
    label = args.label if args.label is not None else names.default_label()
    if not names.valid_label(label):
        raise UsageError(f"--label {label!r}: lowercase letters, digits, - and _, up to {names.LABEL_MAX}")
    creds = None
    if args.creds is not None:
        creds = os.path.abspath(args.creds)
        if not os.path.isfile(creds):
            raise MailError(f"--creds {args.creds}: no such file")
        from git_korus_mail.relay import creds as creds_kind  # no nats: the file's kind, checked before connecting
        try:
            creds_kind.options(creds)
        except creds_kind.BadCreds as exc:
            raise MailError(f"--creds {exc}; nothing changed") from None
    old = local.load_config(common)
    if old is not None and (old["url"], old["label"]) != (args.url, label):
        raise MailError(f"this clone has a remote already ({old['label']} at {old['url']}): "
                        f"git korus-mail remote remove first")
    top = clone.location.worktree or clone.cwd
    origin = names.origin_url(top)
    if origin is None:
        raise MailError("this clone has no `origin` remote: the namespace is named by the origin's URL")
    roots = names.root_commits(top)
    if not roots:
        raise MailError("this clone has no commit yet: the namespace is checked against the root commits")
    norm = names.normalise_origin(origin)
    conf = {"url": args.url, "label": label, "creds": creds, "origin": norm, "namespace": names.namespace_of(norm),
            "roots": roots, "clone": old["clone"] if old else names.new_clone_id()}
    why = _link().setup(conf)
    if why is not None:
        raise MailError(f"{why}; nothing changed")
    local.save_config(common, conf)
    clone.mail_root(create=True)
    local.start(common)
    running = local.wait_running(common, 5)
    out.write(f"remote added: this clone is {label} ({conf['clone']}) in namespace {conf['namespace']} "
              f"({norm}) at {args.url}\n")
    out.write(f"relay {'running' if running else 'NOT running (see ' + local.relay_dir(common) + '/relay.log)'}; "
              f"mail another clone with --to <label>:<worktree>\n")
    if creds is not None:
        from git_korus_mail.relay import creds as creds_kind
        if creds_kind.loose(creds):
            out.write(f"warning: {creds} can be read by others than you: it holds this clone's secret "
                      f"(chmod 600 it)\n")
    return 0 if running else 1


def _remove(clone: "Clone", args: "RemoteArgs", out: "IO[str]") -> int:
    common = clone.common_dir
    conf = local.load_config(common)
    if conf is None:
        if local.present(common):
            with _relay_held(common):
                _wipe(clone)
            out.write("remote removed (its configuration was unreadable; the server was not told)\n")
            return 0
        raise MailError("no remote is configured for this clone")
    waiting = local.outbox_ids(common)
    if waiting and not args.force:
        raise MailError(f"{len(waiting)} message{'s' if len(waiting) != 1 else ''} wait in the outbox for the link: "
                        f"they would be lost; wait for `git korus-mail remote` to show an empty outbox, "
                        f"or remove with --force")
    with _relay_held(common):
        why = _link().teardown(conf)
        _wipe(clone)
    out.write(f"remote removed: {conf['label']} left namespace {conf['namespace']}"
              + (f"; {len(waiting)} unsent message(s) dropped" if waiting else "") + "\n")
    if why is not None:
        out.write(f"warning: {why}: the server still lists this clone (its consumer and directory entry)\n")
    return 0


@contextlib.contextmanager
def _relay_held(common: str) -> "Iterator[None]":
    """This clone's relay stopped, and its lock held until the clone has left the server and its
    directory is gone: a relay starting meanwhile (a `send`, a `remote` that found none running)
    finds the lock taken and ends, or once it is free no configuration (relay/link.main). Seen
    in CI: one started just before a remove took its lock after the remove's check and made its
    consumer again after the teardown had deleted it."""
    fd = None
    for _ in range(5):
        _stop(common)
        fd = local.take_lock(common)
        if fd is not None or not local.present(common):
            break
    else:
        raise MailError("this clone's relay keeps starting again (git korus-mail remote shows its pid): "
                        "nothing changed; stop what starts it, then remove again")
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _stop(common: str) -> None:
    pid = local.running_pid(common)
    if pid is None or pid <= 0:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + 5
    while time.monotonic() < end and local.running_pid(common) is not None:
        time.sleep(0.05)
    if local.running_pid(common) is not None:
        os.kill(pid, signal.SIGKILL)


def _wipe(clone: "Clone") -> None:
    """The relay's directory goes. What its records knew of mail sent to other clones goes with
    it: the ids are journaled first (`relay-forgotten`), so the sender's own sent records of that
    mail are told forgotten, not lost (status; tests/invariants.py)."""
    common = clone.common_dir
    ids = sorted(set(local.ids_of(common, local.SENT)) | set(local.outbox_ids(common)))
    root = clone.mail_root()
    if ids and root is not None:
        root.journal("relay-forgotten", ids=ids, why="remote removed")
    local.wipe(common)


def _show(clone: "Clone", args: "RemoteArgs", out: "IO[str]") -> int:
    common = clone.common_dir
    conf = local.load_config(common)
    if conf is None:
        if args.json:
            out.write(json.dumps({"remote": None}) + "\n")
        else:
            out.write("no remote: mail stays in this clone (git korus-mail remote add <nats-url>)\n")
        return 0
    pid = local.running_pid(common)
    started = None
    if pid is None:
        started = local.start(common)
        local.wait_running(common, 3)
    state = local.load_state(common) or {}
    outbox = local.outbox_ids(common)
    now = time.time()
    oldest = None
    for msg_id in outbox[:1]:
        env = local.read_entry(common, local.OUTBOX, msg_id)
        if env is not None:
            oldest = now - float(env.get("queued_at") or now)
    sent = [local.read_entry(common, local.SENT, i) for i in local.sent_ids(common)]
    fresh = bool(state) and now - float(state.get("updated") or 0) < 5
    link = "up" if fresh and state.get("connected") else "down"
    data = {"label": conf["label"], "clone": conf["clone"], "url": conf["url"], "namespace": conf["namespace"],
            "origin": conf["origin"], "relay_pid": pid or started, "relay_started_now": started is not None,
            "link": link, "error": state.get("error"), "lag": state.get("pending"), "outbox": len(outbox),
            "outbox_oldest_seconds": oldest, "sent": [s for s in sent if s is not None]}
    if args.json:
        out.write(json.dumps(data, indent=2) + "\n")
        return 0
    out.write(f"remote {conf['url']}: this clone is {conf['label']} ({conf['clone']}), namespace {conf['namespace']} "
              f"({conf['origin']})\n")
    out.write(f"relay: {'started now, pid ' + str(started) if started else 'pid ' + str(pid)}; link {link}"
              + (f" ({state['error']})" if link == "down" and state.get("error") else "") + "\n")
    lag = state.get("pending")
    out.write(f"lag: {'unknown' if lag is None else str(lag) + ' message(s) for this clone wait on the server'}\n")
    out.write(f"outbox: {len(outbox)} message(s) waiting to leave"
              + (f", the oldest for {oldest:.0f} s" if oldest is not None else "") + "\n")
    for s in data["sent"][-10:]:
        fate = s.get("fate") or {}
        what = fate.get("state") or "published"
        if what == "consumed":
            what = f"consumed by {fate.get('session')} on {s.get('to_label')}"
        out.write(f"  {s['id']} -> {s.get('to_label')}:{s.get('path')}: {what}\n")
    return 0
