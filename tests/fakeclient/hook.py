"""The fake client's hook entry: what its install wiring would run. `hook.py [--repo <path>]`."""

import sys

import fakeproto

from git_korus_mail.commands.drain import serve

if __name__ == "__main__":
    repo = sys.argv[2] if sys.argv[1:2] == ["--repo"] else None
    sys.exit(serve(fakeproto, repo))
