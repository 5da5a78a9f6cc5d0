"""docopt's dict for each command (cli.py parses), turned into that command's own typed arguments:
no command sees the dict. A new command adds its branch here and its usage block in cli.py."""


def _given(value, default):
    """An option's value as typed: `--kind ""` is an empty kind (refused), not the default."""
    return default if value is None else value


def typed(command, a):
    """(its module under commands/, its typed arguments) from docopt's dict for `command`."""
    if command == "send":
        from git_korus_mail.commands import send as cmd
        return cmd, cmd.SendArgs(to=tuple(a["--to"] or ()), all_worktrees=bool(a["--all-worktrees"]),
                                 body=a["<body>"], kind=_given(a["--kind"], "note"),
                                 ttl_minutes=cmd.parse_ttl(a["--ttl"]), session=a.get("--session"),
                                 create=bool(a.get("--create")), json=bool(a["--json"]),
                                 wake=not a.get("--no-wake"), wait=cmd.parse_wait(a.get("--wait")))
    if command == "ask":
        from git_korus_mail.commands import ask as cmd
        return cmd, cmd.AskArgs(to=a["--to"], question=a["<question>"], timeout=cmd.parse_timeout(a["--timeout"]),
                                json=bool(a["--json"]), again=a.get("--again"))
    if command == "reply":
        from git_korus_mail.commands import reply as cmd
        return cmd, cmd.ReplyArgs(id=a["<id>"], body=a["<body>"], json=bool(a["--json"]))
    if command == "list":
        from git_korus_mail.commands import list as cmd
        return cmd, cmd.ListArgs(all=bool(a["--all"]), json=bool(a["--json"]))
    if command == "who":
        from git_korus_mail.commands import who as cmd
        return cmd, cmd.WhoArgs(json=bool(a["--json"]))
    if command == "status":
        from git_korus_mail.commands import status as cmd
        return cmd, cmd.StatusArgs(all=bool(a["--all"]), clone=bool(a["--clone"]), json=bool(a["--json"]))
    if command == "inbox":
        from git_korus_mail.commands import inbox as cmd
        return cmd, cmd.InboxArgs(all=bool(a["--all"]), json=bool(a["--json"]))
    if command == "read":
        from git_korus_mail.commands import read as cmd
        return cmd, cmd.ReadArgs(id=a["<id>"], json=bool(a["--json"]), raw=bool(a["--raw"]))
    if command == "cancel":
        from git_korus_mail.commands import cancel as cmd
        return cmd, cmd.CancelArgs(id=a["<id>"])
    if command == "forward":
        from git_korus_mail.commands import forward as cmd
        return cmd, cmd.ForwardArgs(box=a["<box>"], to=a["--to"], json=bool(a["--json"]))
    if command in ("off", "on"):
        from git_korus_mail.commands import switch as cmd
        return cmd, cmd.SwitchArgs(off=command == "off")
    if command == "install":
        from git_korus_mail.commands import install as cmd
        return cmd, cmd.InstallArgs(scope=a["--scope"] or "local", urgent=bool(a["--urgent"]),
                                    force=bool(a["--force"]), client=a["--client"] or "claude",
                                    trust_codex_config=bool(a["--trust-codex-config"]))
    if command == "uninstall":
        from git_korus_mail.commands import uninstall as cmd
        return cmd, cmd.UninstallArgs(scope=a["--scope"] or "local", purge=bool(a["--purge"]),
                                      yes=bool(a["--yes"]))
    if command == "doctor":
        from git_korus_mail.commands import doctor as cmd
        return cmd, cmd.DoctorArgs(json=bool(a["--json"]))
    if command == "release":
        from git_korus_mail.commands import release as cmd
        return cmd, cmd.ReleaseArgs(id=a["<id>"])
    if command == "completion":
        from git_korus_mail.commands import completion as cmd
        if a.get("--ids"):
            return cmd, cmd.IdsArgs(command=a["--ids"])
        return cmd, cmd.CompletionArgs(shell=next(s for s in ("bash", "zsh", "fish") if a[s]))
    raise AssertionError(command)
