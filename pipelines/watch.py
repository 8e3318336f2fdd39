"""`semantica watch`: filesystem events (watchdog) -> debounced incremental re-index -> a new snapshot.

Events under `watch.ignore_dirs` (.git, caches, the index itself) are dropped. After `watch.debounce_ms`
without a new event, one sync runs (`RepoSyncer`: the freshness check first, so a burst that leaves every
indexed file unchanged re-indexes nothing; otherwise the indexer reuses every unchanged file's parse,
chunks and vectors from its caches). Events during a sync schedule one more sync after it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from pipelines.sync import RepoSyncer, SyncResult
from semantica.config import Config


class DebouncedTrigger:
    """Calls `action` once `quiet_s` seconds pass without a `poke`; never runs two actions at once."""

    def __init__(self, quiet_s: float, action: Callable[[], None]) -> None:
        self.quiet_s = quiet_s
        self.action = action
        self._last = 0.0
        self._pending = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="watch-debounce", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def poke(self) -> None:
        self._last = time.monotonic()
        self._pending = True
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            while self._pending and not self._stop.is_set():
                wait = self._last + self.quiet_s - time.monotonic()
                if wait > 0:
                    self._stop.wait(wait)
                    continue
                self._pending = False
                self.action()


class _Events(FileSystemEventHandler):
    def __init__(self, root: Path, ignore_dirs: set[str], poke: Callable[[], None]) -> None:
        self.root = root
        self.ignore_dirs = ignore_dirs
        self.poke = poke

    def relevant(self, path: str | bytes) -> bool:
        text = path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else path
        try:
            parts = Path(text).relative_to(self.root).parts
        except ValueError:
            return False
        return bool(parts) and not any(part in self.ignore_dirs for part in parts)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [event.src_path, getattr(event, "dest_path", "")]
        if any(p and self.relevant(p) for p in paths):
            self.poke()


class RepoWatcher:
    """Keeps one repository's snapshot current with its working tree while running."""

    def __init__(self, config: Config, path: str, name: str | None = None, syncer: RepoSyncer | None = None,
                 on_sync: Callable[[SyncResult], None] | None = None,
                 on_error: Callable[[Exception], None] | None = None) -> None:
        self.config = config
        self.root = Path(path).expanduser().resolve()
        self.syncer = syncer or RepoSyncer(config)
        self.name = name
        self.on_sync = on_sync or (lambda result: None)
        self.on_error = on_error or (lambda exc: None)
        self.trigger = DebouncedTrigger(config.watch.debounce_ms / 1000.0, self._sync)
        index_root = Path(config.paths.index_root).expanduser().resolve()
        ignore = set(config.watch.ignore_dirs)
        if index_root.is_relative_to(self.root):  # the index's own writes must not trigger syncs
            ignore.add(index_root.relative_to(self.root).parts[0])
        self.observer = Observer()
        self.observer.schedule(_Events(self.root, ignore, self.trigger.poke), str(self.root), recursive=True)

    def sync_now(self, force: bool = False) -> SyncResult:
        """Index (or refresh) once: the first call of `semantica watch`."""
        result = self.syncer.sync(repo=self.name, path=str(self.root), force=force)
        self.name = result.repo
        return result

    def _sync(self) -> None:
        try:
            self.on_sync(self.syncer.sync(repo=self.name, path=str(self.root)))
        except Exception as exc:  # a failed build keeps the previous snapshot current; keep watching
            self.on_error(exc)

    def start(self) -> None:
        self.trigger.start()
        self.observer.start()

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join()
        self.trigger.stop()
