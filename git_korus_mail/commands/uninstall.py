"""`uninstall`: remove what install added; queued mail is kept unless --purge."""

from dataclasses import dataclass

from git_korus_mail import install
from git_korus_mail.commands.install import check_scope


@dataclass(frozen=True)
class UninstallArgs:
    scope: str = "local"   # one of install.SCOPES
    purge: bool = False    # also delete the mail root (asks first)
    yes: bool = False      # confirm --purge without asking


def run(clone, args, out):
    return install.run_uninstall(clone, out, scope=check_scope(args.scope), purge=args.purge, yes=args.yes)
