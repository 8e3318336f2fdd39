"""Verdicts of the snapshot files' structural checks, kept while the files' stat is unchanged: `/healthz` and
`/v1/repos` list the damaged tables on every call, and a published snapshot's files do not change, so each file
(or index directory) is read once per change rather than once per request."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

Verdict = TypeVar("Verdict")
Signature = tuple[tuple[str, int, int, int], ...]  # (name, inode, size, mtime) of the path, or of a directory's files
CACHED_VERDICTS = 65_536  # paths kept (the oldest go first): every shard file of a few hundred large snapshots


def stat_signature(path: Path) -> Signature:
    """What changes when the file, or any file directly inside the directory, is replaced, cut or rewritten."""
    status = os.stat(path)
    rows = [("", status.st_ino, status.st_size, status.st_mtime_ns)]
    if os.path.isdir(path):
        with os.scandir(path) as entries:
            for entry in entries:
                inner = entry.stat()
                rows.append((entry.name, inner.st_ino, inner.st_size, inner.st_mtime_ns))
    return tuple(sorted(rows))


class StatCachedChecks(Generic[Verdict]):
    """`check(path)` run again only when `path`'s stat signature changed since its last verdict."""

    def __init__(self, check: Callable[[Path], Verdict], limit: int = CACHED_VERDICTS) -> None:
        self.check, self.limit = check, limit
        self._verdicts: OrderedDict[Path, tuple[Signature, Verdict]] = OrderedDict()
        self._lock = threading.Lock()

    def verdict(self, path: Path) -> Verdict:
        """The check's verdict on `path`; an OSError of the stat itself (missing, unreadable) is raised."""
        signature = stat_signature(path)
        with self._lock:
            kept = self._verdicts.get(path)
            if kept is not None and kept[0] == signature:
                self._verdicts.move_to_end(path)
                return kept[1]
        verdict = self.check(path)
        with self._lock:
            self._verdicts[path] = (signature, verdict)
            self._verdicts.move_to_end(path)
            while len(self._verdicts) > self.limit:
                self._verdicts.popitem(last=False)
        return verdict
