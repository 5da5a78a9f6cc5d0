"""`uninstall`: remove what install added; queued mail is kept unless --purge."""

import shutil
import sys
from dataclasses import dataclass

from git_korus_mail import clients
from git_korus_mail.commands.install import check_scope
from git_korus_mail.errors import MailError
from git_korus_mail.wiring import exclude, postcheckout, precommit
from git_korus_mail.wiring import record as install_record


@dataclass(frozen=True)
class UninstallArgs:
    scope: str = "local"   # one of commands.install.SCOPES
    purge: bool = False    # also delete the mail root (asks first)
    yes: bool = False      # confirm --purge without asking


TYPE_CHECKING = False  # mypy reads the block below
if TYPE_CHECKING:
    from typing import IO, Dict, Set

    from git_korus_mail.core.clone import Clone
    from git_korus_mail.store.files import MailRoot


def run(clone: "Clone", args: UninstallArgs, out: "IO[str]") -> int:
    return run_uninstall(clone, out, scope=check_scope(args.scope), purge=args.purge, yes=args.yes)


def queue_counts(root: "MailRoot") -> "Dict[str, int]":
    """{what: count} of what the mail root holds, for uninstall's report and --purge's listing."""
    counts = {"boxes": 0, "queued": 0, "consumed": 0, "expired": 0, "quarantined": 0, "sessions": 0}
    for box in root.boxes():
        counts["boxes"] += 1
        counts["queued"] += box.count("inbox")
        counts["consumed"] += box.count("seen")
        counts["expired"] += box.count("expired")
        from git_korus_mail.store import records  # loaded where used
        counts["quarantined"] += len(records.quarantined_names(box))
        counts["sessions"] += box.count("sessions")
    counts["tmp files"] = len(root.tmp_entries())
    return counts


def _confirm_purge(root: "MailRoot", yes: bool, out: "IO[str]") -> bool:
    counts = queue_counts(root)
    out.write(f"mail root {root.path}\n  holds " + ", ".join(f"{v} {k}" for k, v in counts.items()) + "\n")
    if yes:
        return True
    out.write(f"delete {root.path} and everything in it? [y/N] ")
    out.flush()
    try:
        answer = input()
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def run_uninstall(clone: "Clone", out: "IO[str]", scope: str = "local", purge: bool = False, yes: bool = False) -> int:
    """Unwire `scope` (one of SCOPES); with `purge`, delete the mail root too (`yes`: asked already)."""
    root = clone.mail_root(create=False)
    if purge and not yes and not (sys.stdin is not None and sys.stdin.isatty()):
        raise MailError("--purge deletes the queued mail; stdin is not a terminal, so pass --yes to confirm")
    if root is None:
        out.write("nothing installed here (no mail root)\n")
        return 0
    hooks_dir = install_record.ensure_hooks_dir(root)
    record = install_record.Record.load(hooks_dir)
    other = "user" if scope == "local" else "local"
    if purge and record.scope(other) is not None:
        raise MailError(f"--purge would delete the stub the {other} scope still calls; "
                        f"run `git korus-mail uninstall --scope {other}` first")
    if purge and not _confirm_purge(root, yes, out):
        out.write("not purged; nothing changed\n")
        return 1
    wirings = [(client, client.stub_path(root)) for client in clients.installers()]
    with install_record.locked(hooks_dir):
        record = install_record.Record.load(hooks_dir)
        scope_rec = record.scope(scope) or {"files": {}}
        files = dict(scope_rec.get("files") or {})
        done: "Set[str]" = set()  # a file one client unwired: the record lists it for every client, said once
        for client, stub in wirings:
            for path in client.unwire_candidates(clone, scope, files):
                if path in done:
                    continue
                try:
                    state = client.unwire_file(path, stub, files.get(path))
                except MailError as exc:
                    out.write(f"settings  {path}  not changed: {exc}\n")
                    continue
                if state and state != "absent":
                    done.add(path)
                    out.write(f"settings  {path}  {state}\n")
        for client, _stub in wirings:
            client.after_unwiring(scope_rec, out)
        if scope == "local":
            for client, _stub in reversed(wirings):  # the last line added goes first: bytes come back exact
                if exclude.remove_exclude(clone, scope_rec.get(client.EXCLUDE_KEY), client.EXCLUDE_LINE):
                    out.write(f"exclude  {client.EXCLUDE_LINE}  removed\n")
            # the reverse of install's order: the hook that made the hooks dir removes it last
            line = precommit.remove_pre_commit(clone, scope_rec.get(precommit.RECORD_KEY))
            if line:
                out.write(line + "\n")
            line = postcheckout.remove_post_checkout(clone, scope_rec.get("post_checkout"))
            if line:
                out.write(line + "\n")
        record.drop_scope(scope)
        record.save()
        for _client, stub in wirings:
            if not record.data["scopes"] and install_record.remove_stub(stub):
                out.write(f"stub  {stub}  removed\n")
    if not record.data["scopes"]:
        install_record.remove_hooks_dir(hooks_dir)
    elif record.scope(other) is not None:
        # like git config's scopes, uninstall undoes one scope: the other one still wires this
        # clone, and a person who ran plain `uninstall` must not take it for unwired (issue 25)
        flag = "" if other == "local" else " --scope user"
        out.write(f"note: the {other} scope still wires this clone's worktrees, so mail is still shown;\n"
                  f"  `git korus-mail uninstall{flag}` removes it\n")  # two lines: each under 100 columns
    if purge:
        path = root.path
        root.close()
        shutil.rmtree(path)
        out.write(f"purged {path}\n")
        return 0
    counts = queue_counts(root)
    out.write(f"kept the queue: {counts['queued']} unread message(s) in {counts['boxes']} box(es) at {root.path}"
              f" (`git korus-mail uninstall --purge` deletes it)\n")
    return 0
