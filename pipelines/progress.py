"""Progress of a long build stage: tqdm's bar (count, rate, ETA) on a terminal; without one (CI, `kubectl logs`,
a pipe) one line per stage when it ends, so a log still says what was done and how fast."""

from __future__ import annotations

import sys
import threading
import time
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
