"""store/fifo.py, the one implementation of the store's wake-up FIFOs (the watcher's
`watch/.<session>@<launch>.signal` and the waiting ask's `mail/waits/<qid>.signal`, docs/STORE.md):
what a waiter's three answers mean, that a poke comes from another process, and that a poke never
writes into what is not a FIFO and never waits for a reader. The pokes run as separate processes."""

import os
import stat
import subprocess
import sys

from git_korus_mail.store import fifo
from git_korus_mail.store.fsafe import Dir

POKE = "import sys; from git_korus_mail.store import fifo; from git_korus_mail.store.fsafe import Dir; " \
       "fifo.poke_fifo(Dir.open_path(sys.argv[1]), sys.argv[2])"


def poke(d, name):
    """A poke from a process of its own; a poke that waited for a reader would hang it, and the
    timeout turns that into a failure."""
    subprocess.run([sys.executable, "-c", POKE, d.path, name], check=True, timeout=30)


def test_a_poke_from_another_process_wakes_the_waiter_once(tmp_path):
    d = Dir.open_path(str(tmp_path))
    old = os.umask(0o477)  # the mode is 0600 whatever the umask cuts (here: even the read bit)
    try:
        fd = fifo.open_fifo(d, ".s@1.signal")
    finally:
        os.umask(old)
    assert fd is not None
    try:
        st = os.lstat(tmp_path / ".s@1.signal")
        assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        assert fifo.await_fifo(fd, 0) is False  # nothing yet: the time passed
        poke(d, ".s@1.signal")
        poke(d, ".s@1.signal")
        assert fifo.await_fifo(fd, 30) is True  # poked (twice: one wake-up)
        assert fifo.await_fifo(fd, 0) is False  # emptied: the next wait blocks again
        again = fifo.open_fifo(d, ".s@1.signal")  # a killed waiter's FIFO serves the next one
        assert again is not None
        os.close(again)
    finally:
        os.close(fd)
    assert fifo.await_fifo(fd, 0) is None  # a descriptor that cannot be waited on: the caller sleeps


def test_a_poke_with_no_reader_or_no_fifo_writes_nothing_and_returns(tmp_path):
    d = Dir.open_path(str(tmp_path))
    os.mkfifo(tmp_path / ".gone.signal", 0o600)  # a killed waiter's FIFO: nobody reads it
    poke(d, ".gone.signal")
    (tmp_path / ".plain.signal").write_bytes(b"")
    poke(d, ".plain.signal")
    assert (tmp_path / ".plain.signal").read_bytes() == b""  # a regular file of that name is not written to
    poke(d, ".missing.signal")
    assert sorted(os.listdir(tmp_path)) == [".gone.signal", ".plain.signal"]  # a poke creates nothing


def test_a_waiter_never_takes_what_is_not_its_fifo(tmp_path):
    d = Dir.open_path(str(tmp_path))
    (tmp_path / ".plain.signal").write_bytes(b"")
    assert fifo.open_fifo(d, ".plain.signal") is None
    (tmp_path / "elsewhere").mkdir()
    os.mkfifo(tmp_path / "elsewhere" / "f", 0o600)
    os.symlink(tmp_path / "elsewhere" / "f", tmp_path / ".link.signal")
    assert fifo.open_fifo(d, ".link.signal") is None  # never through a symlink
