"""The retrievers over one snapshot, built lazily by name from the registry, once per snapshot
(a new snapshot gets new ones)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from semantica.runtime.encoder import Encoder
from semantica.snapshot import Snapshot
from serving.retrievers.registry import retriever_spec


class RepoRetrievers:
    """Every registered retriever over one snapshot (`get(name)`), built on first use."""

    def __init__(self, snapshot: Snapshot, encoder_factory: Callable[[], Encoder],
                 encode_query: Callable[[str], Any] | None = None) -> None:
        self.snapshot = snapshot
        self.encoder_factory = encoder_factory
        self.encode_query = encode_query
        self._built: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Any:
        """The retriever registered as `name` over this snapshot (ValueError for an unknown name)."""
        spec = retriever_spec(name)
        with self._lock:
            if spec.name not in self._built:
                self._built[spec.name] = spec.build(self)
            return self._built[spec.name]

    def built(self) -> set[str]:
        """The names of the retrievers built so far (prefetch builds them before the first query)."""
        with self._lock:
            return set(self._built)

    def replace(self, name: str, retriever: Any) -> None:
        """Answer `name` with `retriever` over this snapshot from now on (a test swaps in a broken index)."""
        spec = retriever_spec(name)
        with self._lock:
            self._built[spec.name] = retriever
