"""`install`: wire this clone's worktrees to the drain (the work is install.run_install)."""

from dataclasses import dataclass

from git_korus_mail import install
from git_korus_mail.errors import MailError, UsageError


@dataclass(frozen=True)
class InstallArgs:
    scope: str = "local"   # one of install.SCOPES
    urgent: bool = False   # the wake-up tier: refused until it is built
    force: bool = False    # rewrite our entries even when they look current


def check_scope(scope):
    if scope not in install.SCOPES:
        raise UsageError(f"--scope {scope!r}: expected local or user")
    return scope


def run(clone, args, out):
    if args.urgent:
        raise MailError("--urgent: the wake-up tier is not built yet; run install without it")
    return install.run_install(clone, out, scope=check_scope(args.scope), force=args.force)
