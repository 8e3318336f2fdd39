"""Advisory file locks (flock) that tell a live build or publish from one a killed process left behind.

The kernel drops an flock when its process dies, even on SIGKILL, so "the lock file exists but can be
locked" means its build is dead and its `.tmp` directory may go. flock conflicts between two open file
descriptions even inside one process, so a second indexer thread sees the first one's lock as well.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class BuildLock:
    """An exclusive lock on one file, held from `acquire` until `release` (or the process's death)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        """Unlock and remove the lock file (removing first: nobody can lock a file that is gone)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    @staticmethod
    def is_held(path: Path) -> bool:
        """True while a live process holds the lock on `path` (False when absent or abandoned)."""
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops a lock we may have taken
        return False


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` for the block (waits for other holders)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
