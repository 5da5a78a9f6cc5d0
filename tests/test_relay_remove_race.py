"""`remote remove` while a relay is starting (docs/RELAY.md, "On disk"). CI met it under
narrowed permissions: a relay started by `remote` had read its configuration but not yet taken
its lock when `remove` looked for one to stop; it took the lock after, and made its consumer on
the server again after the teardown had deleted it. The relay here is stopped in that gap (the
pause point relay:config-read) while `remove` runs whole, then let go. No server is needed:
what a resurrected relay does first is bring back the directory `remove` took away."""

import os
import subprocess
import time

import invariants
from helpers import PYTHON, run_cli
from test_relay_retention import configured_clone

from git_korus_mail.relay import local

PROCESS = "git_korus_mail.core.relayhost"


def paused_relay(common, gate):
    proc = subprocess.Popen([PYTHON, "-m", PROCESS, common], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=dict(os.environ, KORUS_MAIL_PAUSE_AT=f"relay:config-read:{gate}"))
    end = time.monotonic() + 30
    while not os.path.exists(f"{gate}.reached"):
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < end, "the relay never reached its pause"
        time.sleep(0.01)
    return proc


def test_a_relay_that_read_its_configuration_before_a_remove_never_comes_back(tmp_path):
    repo, common = configured_clone(tmp_path)
    gate = str(tmp_path / "gate")
    relay = paused_relay(common, gate)
    try:
        removed = run_cli("remote", "remove", cwd=repo, check=True)
        assert removed.stdout.startswith("remote removed: laptop left namespace 0123456789abcdef"), removed.stdout
        assert not local.present(common)
        open(gate, "w").close()       # the relay goes on from where it read its configuration
        assert relay.wait(20) == 0, relay.stdout.read()
        assert not local.present(common), sorted(os.listdir(local.relay_dir(common)))
        assert "no remote" in run_cli("remote", cwd=repo, check=True).stdout
    finally:
        if relay.poll() is None:
            relay.kill()
            relay.wait()
    invariants.check(str(repo / ".git" / "mail"))


def lock_open_in(pid, common):
    lock = os.path.join(local.relay_dir(common), "lock")
    fds = f"/proc/{pid}/fd"
    for fd in os.listdir(fds):
        try:
            if os.readlink(os.path.join(fds, fd)).startswith(lock):
                return True
        except OSError:
            pass
    return False


def test_a_relay_waiting_for_the_lock_that_remove_holds_ends_without_running(tmp_path):
    """The other order: the relay asks for the lock while `remove` holds it, and gets it once
    `remove` has wiped the directory and let go (the file it opened before is unlinked, the lock
    on it free). Its configuration, read again under the lock, is gone: it ends without running."""
    repo, common = configured_clone(tmp_path)
    gate = str(tmp_path / "gate")
    relay = paused_relay(common, gate)
    held = local.take_lock(common)        # as remove holds it during its teardown
    assert held is not None
    try:
        open(gate, "w").close()
        end = time.monotonic() + 20
        while not lock_open_in(relay.pid, common):   # it opened the lock and waits for it
            assert relay.poll() is None and time.monotonic() < end, relay.stdout.read()
            time.sleep(0.002)
        local.wipe(common)
        os.close(held)
        held = None
        assert relay.wait(20) == 0, relay.stdout.read()
        assert not local.present(common)
    finally:
        if held is not None:
            os.close(held)
        if relay.poll() is None:
            relay.kill()
            relay.wait()


def test_a_connection_the_server_closed_first_is_closed_without_a_traceback():
    """relay/server.close, which `remote add`, `remote remove`, doctor and the relay end their
    connections with: CPython 3.12.1's transport raises TypeError from `close` once the server
    has closed the socket (CI run 20, after a reload of the server's permissions)."""
    import asyncio

    from git_korus_mail.relay import server

    class ClosedByTheServer:
        closed = 0

        async def close(self):
            self.closed += 1
            raise TypeError("'NoneType' object is not callable")

    nc = ClosedByTheServer()
    assert asyncio.run(server.close(nc)) is None
    assert nc.closed == 1
