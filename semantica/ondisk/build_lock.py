"""Advisory file locks (flock) that tell a live build or publish from one a killed process left behind.

The kernel drops an flock when its process dies, even on SIGKILL, so "the lock file exists but can be
locked" means its build is dead and its `.tmp` directory may go. flock conflicts between two open file
descriptions even inside one process, so a second indexer thread sees the first one's lock as well.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

ACQUIRE_ATTEMPTS = 50  # a probe (`is_held`, stale-build cleanup) holds a fresh lock for microseconds
ACQUIRE_PAUSE_S = 0.01


class BuildLock:
    """An exclusive lock on one file, held from `acquire` until `release` (or the process's death)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        """Lock the file at `path`. A concurrent cleanup may probe (lock for a moment) or unlink a lock
        file created a moment ago, before its flock: retry briefly, and only keep a lock on the file
        that `path` still names, so a live build is never left with a lock nobody can see."""
        for _ in range(ACQUIRE_ATTEMPTS):
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                time.sleep(ACQUIRE_PAUSE_S)
                continue
            except OSError:
                os.close(fd)
                raise
            if _names(self.path, fd):
                self._fd = fd
                return
            os.close(fd)  # unlinked between open and flock: lock a fresh file
        raise BlockingIOError(f"build lock {self.path.name} is held by another build")

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


def _names(path: Path, fd: int) -> bool:
    """True when `path` still names the file open as `fd`."""
    try:
        held = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (opened.st_dev, opened.st_ino)


class SnapshotPin:
    """A shared flock on a published snapshot's directory, held by a build while it hard-links shards
    from it. Retention takes an exclusive flock before removing a snapshot and skips a pinned one, so
    the files a build is linking never disappear under it (a later publish prunes it instead)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Pin the directory; False when it is gone or being removed (then there is nothing to link)."""
        try:
            fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # retention holds it exclusively: it is being removed
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def removal_lock(directory: Path) -> Iterator[bool]:
    """An exclusive flock on `directory` for the block; yields False (and holds nothing) when a build
    pins it or it is gone, so the caller leaves it in place."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
