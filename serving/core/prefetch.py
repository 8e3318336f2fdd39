"""Cold start: load the encoder, the JVM with the Lucene shards, the FAISS shards and the tables of
each snapshot in parallel, as soon as the pipeline is built, instead of one after another inside the
first query. Every load is a `cached_property` (or the shared encoder), so a query that arrives
first simply waits for the load in flight and nothing is loaded twice."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

PREFETCH_THREADS = 8  # encoder and, per repository, vector, lexical (JVM), symbol, exact, graph, tables, localizer: none queues


class Prefetcher:
    """Starts the loads a first query needs; `wait()` blocks until they are done (errors are kept,
    not raised: the query that needs a failed load reports it as a degraded stage)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=PREFETCH_THREADS, thread_name_prefix="prefetch")
        self.futures: dict[str, Future[Any]] = {}

    def start(self, loads: dict[str, Callable[[], Any]]) -> Prefetcher:
        for name, load in loads.items():
            if name not in self.futures:
                self.futures[name] = self._pool.submit(load)
        return self

    def wait(self, timeout: float | None = None) -> dict[str, str]:
        """name -> error message for loads that failed (empty when all succeeded)."""
        errors: dict[str, str] = {}
        for name, future in self.futures.items():
            exc = future.exception(timeout=timeout)
            if exc is not None:
                errors[name] = f"{type(exc).__name__}: {exc}"
        return errors
