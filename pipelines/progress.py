"""Progress of a long build stage: tqdm's bar (count, rate, ETA) on a terminal; without one (CI, `kubectl logs`,
a pipe) one line per stage when it ends, so a log still says what was done and how fast. Work done in another
process (the Ray driver of `index-batch`) reaches the bars through a `ProgressFile` a `ProgressWatcher` polls."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from tqdm import tqdm


class StageProgress:
    """`update(n)` as work is done, `total` may grow (chunks are known only once files are parsed), `close()` once."""

    def __init__(self, stage: str, unit: str, total: int = 0, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.stage, self.unit = stage, unit
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and self.stream.isatty()
        self._bar = tqdm(total=total, desc=f"{stage:<8}", unit=f" {unit}", disable=not self.tty, file=self.stream,
                         leave=False, dynamic_ncols=True)
        self._done = 0
        self._total = total
        self._started = time.perf_counter()
        self._lock = threading.Lock()  # parse runs on a prefetch thread while the driver embeds

    @property
    def total(self) -> int:
        return self._total

    @total.setter
    def total(self, value: int) -> None:
        with self._lock:
            self._total = value
            self._bar.total = value
            if self.tty:
                self._bar.refresh()

    def update(self, n: int = 1) -> None:
        with self._lock:
            self._done += n
            self._bar.update(n)

    def close(self) -> None:
        self._bar.close()
        if self.enabled and not self.tty and (self._done or self._total):
            seconds = time.perf_counter() - self._started
            rate = self._done / seconds if seconds > 0 else 0.0
            print(f"  {self.stage}: {self._done}/{self._total} {self.unit} in {seconds:.1f}s ({rate:.1f} {self.unit}/s)",
                  file=self.stream, flush=True)


POLL_S = 0.5  # how often a watcher reads a child process's counts (and how often the child writes them at most)


class ProgressFile:
    """Counts a child process (the Ray driver) writes as work comes back, so the parent's bars move while the
    job runs: one line `files chunks`, replaced atomically, at most every `POLL_S` and once at the end."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.files = self.chunks = 0
        self._written = 0.0

    def add(self, files: int, chunks: int) -> None:
        self.files += files
        self.chunks += chunks
        now = time.monotonic()
        if now - self._written >= POLL_S:
            self.flush()
            self._written = now

    def flush(self) -> None:
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(f"{self.files} {self.chunks}\n")
        os.replace(partial, self.path)


def read_counts(path: Path) -> tuple[int, int]:
    """(files, chunks) a `ProgressFile` wrote; (0, 0) before its first write."""
    try:
        files, chunks = path.read_text().split()
        return int(files), int(chunks)
    except (OSError, ValueError):
        return 0, 0


class ProgressWatcher:
    """Polls a `ProgressFile` on a thread and moves the stages' bars by what changed, until `stop()`."""

    def __init__(self, path: Path, files: StageProgress, chunks: StageProgress) -> None:
        self.path, self.files, self.chunks = path, files, chunks
        self._seen = (0, 0)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="progress-watch", daemon=True)

    def __enter__(self) -> ProgressWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join()
        self.poll()

    def _watch(self) -> None:
        while not self._stopped.wait(POLL_S):
            self.poll()

    def poll(self) -> None:
        files, chunks = read_counts(self.path)
        seen_files, seen_chunks = self._seen
        if files > seen_files:
            self.files.update(files - seen_files)
        if chunks > seen_chunks:
            self.chunks.total = max(self.chunks.total, chunks)
            self.chunks.update(chunks - seen_chunks)
        self._seen = (max(files, seen_files), max(chunks, seen_chunks))
