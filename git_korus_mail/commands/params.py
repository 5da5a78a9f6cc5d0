"""docopt's dict for each command (cli.py parses), turned into that command's own typed arguments:
no command sees the dict. A new command adds its branch here and its usage block in cli.py."""

TYPE_CHECKING = False  # mypy reads the block below; at run time typing is never imported
if TYPE_CHECKING:
    from typing import Any, Dict, Protocol, TextIO, Tuple, TypeVar

    from git_korus_mail.core.clone import Clone

    T = TypeVar("T")
    Docopt = Dict[str, Any]  # docopt's dict: each value a str, bool, list of str or None, as the usage says

    class Command(Protocol):
        """A module under commands/: `run` takes the clone, the arguments `typed` built for that
        very module (each module's own Args class: so Any here) and where to write."""
        def run(self, clone: "Clone", args: Any, out: TextIO) -> int: ...


def _given(value: "Any", default: "T") -> "T":
    """An option's value as typed: `--kind ""` is an empty kind (refused), not the default."""
    return default if value is None else value


def typed(command: str, a: "Docopt") -> "Tuple[Command, object]":
    """(its module under commands/, its typed arguments) from docopt's dict for `command`."""
    if command == "send":
        from git_korus_mail.commands import send as send_cmd
        return send_cmd, send_cmd.SendArgs(to=tuple(a["--to"] or ()), all_worktrees=bool(a["--all-worktrees"]),
                                           body=a["<body>"], kind=_given(a["--kind"], "note"),
                                           ttl_minutes=send_cmd.parse_ttl(a["--ttl"]), session=a.get("--session"),
                                           create=bool(a.get("--create")), json=bool(a["--json"]),
                                           wake=not a.get("--no-wake"), wait=send_cmd.parse_wait(a.get("--wait")))
    if command == "ask":
        from git_korus_mail.commands import ask as ask_cmd
        return ask_cmd, ask_cmd.AskArgs(to=a["--to"], question=a["<question>"], timeout=ask_cmd.parse_timeout(a["--timeout"]),
                                        json=bool(a["--json"]), again=a.get("--again"))
    if command == "reply":
        from git_korus_mail.commands import reply as reply_cmd
        return reply_cmd, reply_cmd.ReplyArgs(id=a["<id>"], body=a["<body>"], json=bool(a["--json"]))
    if command == "list":
        from git_korus_mail.commands import list as list_cmd
        return list_cmd, list_cmd.ListArgs(all=bool(a["--all"]), json=bool(a["--json"]))
    if command == "who":
        from git_korus_mail.commands import who as who_cmd
        return who_cmd, who_cmd.WhoArgs(json=bool(a["--json"]))
    if command == "status":
        from git_korus_mail.commands import status as status_cmd
        return status_cmd, status_cmd.StatusArgs(all=bool(a["--all"]), clone=bool(a["--clone"]), json=bool(a["--json"]))
    if command == "inbox":
        from git_korus_mail.commands import inbox as inbox_cmd
        return inbox_cmd, inbox_cmd.InboxArgs(all=bool(a["--all"]), json=bool(a["--json"]))
    if command == "read":
        from git_korus_mail.commands import read as read_cmd
        return read_cmd, read_cmd.ReadArgs(id=a["<id>"], json=bool(a["--json"]), raw=bool(a["--raw"]))
    if command == "log":
        from git_korus_mail.commands import log as log_cmd
        return log_cmd, log_cmd.LogArgs(follow=bool(a["--follow"]), since=log_cmd.parse_since(a["--since"]),
                                        json=bool(a["--json"]))
    if command == "reserve":
        from git_korus_mail.commands import reserve as reserve_cmd
        return reserve_cmd, reserve_cmd.ReserveArgs(
            pathspecs=tuple(a["<pathspec>"] or ()), ttl_minutes=reserve_cmd.parse_ttl(a["--ttl"]),
            note=a["--note"] or "", block=bool(a["--block"]), list=bool(a["--list"]), drop=bool(a["--drop"]),
            force=bool(a["--force"]), json=bool(a["--json"]))
    if command == "cancel":
        from git_korus_mail.commands import cancel as cancel_cmd
        return cancel_cmd, cancel_cmd.CancelArgs(id=a["<id>"])
    if command == "forward":
        from git_korus_mail.commands import forward as forward_cmd
        return forward_cmd, forward_cmd.ForwardArgs(box=a["<box>"], to=a["--to"], json=bool(a["--json"]))
    if command in ("off", "on"):
        from git_korus_mail.commands import switch as switch_cmd
        return switch_cmd, switch_cmd.SwitchArgs(off=command == "off")
    if command == "install":
        from git_korus_mail.commands import install as install_cmd
        return install_cmd, install_cmd.InstallArgs(scope=a["--scope"] or "local", urgent=bool(a["--urgent"]),
                                                    force=bool(a["--force"]), client=a["--client"] or "claude",
                                                    trust_codex_config=bool(a["--trust-codex-config"]))
    if command == "uninstall":
        from git_korus_mail.commands import uninstall as uninstall_cmd
        return uninstall_cmd, uninstall_cmd.UninstallArgs(scope=a["--scope"] or "local", purge=bool(a["--purge"]),
                                                          yes=bool(a["--yes"]))
    if command == "doctor":
        from git_korus_mail.commands import doctor as doctor_cmd
        return doctor_cmd, doctor_cmd.DoctorArgs(json=bool(a["--json"]))
    if command == "release":
        from git_korus_mail.commands import release as release_cmd
        return release_cmd, release_cmd.ReleaseArgs(id=a["<id>"])
    if command == "remote":
        from git_korus_mail.commands import remote as remote_cmd
        action = "add" if a.get("add") else "remove" if a.get("remove") else None
        return remote_cmd, remote_cmd.RemoteArgs(action=action, url=a.get("<url>"), label=a.get("--label"),
                                                 creds=a.get("--creds"), force=bool(a.get("--force")),
                                                 json=bool(a.get("--json")))
    if command == "completion":
        from git_korus_mail.commands import completion as completion_cmd
        if a.get("--ids"):
            return completion_cmd, completion_cmd.IdsArgs(command=a["--ids"])
        return completion_cmd, completion_cmd.CompletionArgs(shell=next(s for s in ("bash", "zsh", "fish") if a[s]))
    raise AssertionError(command)
