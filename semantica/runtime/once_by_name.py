"""Build each named thing once, different names at the same time: a cold query's prefetch opens the Lucene
shards (which start the JVM) while the FAISS shards, the symbol table and the graph load beside it, instead of
each waiting for the one before under a single lock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class OnceByName:
    """name -> the value its build made; a name is built once (callers asking for it meanwhile wait for that
    build), while other names build in parallel. A build that raises is not kept: the next call builds again."""

    def __init__(self) -> None:
        self._guard = threading.Lock()  # held only to look up or make a name's own lock
        self._locks: dict[str, threading.Lock] = {}
        self._values: dict[str, Any] = {}

    def get(self, name: str, build: Callable[[], Any]) -> Any:
        with self._guard:
            if name in self._values:
                return self._values[name]
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            with self._guard:
                if name in self._values:
                    return self._values[name]
            value = build()
            with self._guard:
                self._values[name] = value
            return value

    def put(self, name: str, value: Any) -> None:
        with self._guard:
            self._values[name] = value

    def names(self) -> set[str]:
        """The names built (or put) so far."""
        with self._guard:
            return set(self._values)
