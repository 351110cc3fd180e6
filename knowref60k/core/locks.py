"""An exclusive lock per set of outputs, so that two runs never write the same files at once.

Two `extract` runs into one folder wrote the same hidden `.partial` files: the second removed the first's
(a FileNotFoundError), and the folder ended with one run's candidates beside the other's report, which
the next run then trusted as "already done". A lock held from the "already finished?" check until the
completion marker is written makes the second run fail at once instead.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from knowref60k.core.errors import UserError, storage_error

# A lock file replaced between opening and locking it (its holder removes it on release) is opened
# again; more misses than this in a row mean other runs keep taking it, which is busy enough to refuse.
_TRIES = 5


class OutputsBusy(UserError):
    """Another run is writing the same outputs now: running both would mix their files."""


@contextmanager
def exclusive_lock(path: Path, what: str) -> Iterator[None]:
    """Hold the lock file `path` for the block, or raise OutputsBusy at once (never wait), naming `what`
    the lock guards and the process that holds it. The file holds its holder's pid while locked and is
    removed on release, so a finished run leaves nothing behind (a killed one leaves it unlocked)."""
    descriptor = _acquire(path, what)
    try:
        yield
    finally:
        # Removed before the lock is let go: a run that opened the old file meanwhile then finds it
        # gone (see `_acquire`) instead of holding a lock nobody else can see.
        with suppress(OSError):
            path.unlink()
        os.close(descriptor)


def _acquire(path: Path, what: str) -> int:
    for _ in range(_TRIES):
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise storage_error(error, path, "create the lock file") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(descriptor)
            os.close(descriptor)
            raise OutputsBusy(
                f"{what} is being written by {holder} now: wait for it to finish, or write into another "
                "folder"
            ) from None
        except OSError as error:  # a file system without locks (some network mounts)
            os.close(descriptor)
            raise storage_error(error, path, "lock") from None
        if _is_the_file_at(descriptor, path):
            with suppress(OSError):  # the pid only informs a second run; the lock holds without it
                os.ftruncate(descriptor, 0)
                os.write(descriptor, f"{os.getpid()}\n".encode())
            return descriptor
        os.close(descriptor)  # its holder released and removed it as we opened it: open the new one
    raise OutputsBusy(f"{what} is being written by other runs, which keep taking its lock {path}")


def _is_the_file_at(descriptor: int, path: Path) -> bool:
    try:
        here, there = os.fstat(descriptor), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _holder(descriptor: int) -> str:
    """The pid the lock file names. Its holder writes it just after locking: an empty file is read again
    once, a moment later."""
    for attempt in range(2):
        content = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
        if content.isdigit():
            return f"another run (pid {content})"
        if attempt == 0:
            time.sleep(0.05)
    return "another run"
