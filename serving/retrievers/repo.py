"""The retrievers over one snapshot, built lazily by name from the registry, once per snapshot
(a new snapshot gets new ones)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property
from typing import Any

from semantica.encoder import Encoder
from semantica.snapshot import Snapshot
from serving.retrievers.granular import GranularRetriever
from serving.retrievers.registry import retriever_spec


class _ByName:
    """`repo.lexical` reads (and, to swap in another object, sets) the retriever registered under the name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, repo: RepoRetrievers | None, owner: type) -> Any:
        return self if repo is None else repo.get(self.name)

    def __set__(self, repo: RepoRetrievers, retriever: Any) -> None:
        with repo._lock:
            repo._built[self.name] = retriever


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

    vector = _ByName("vector")
    lexical = _ByName("lexical")
    symbol = _ByName("symbol")
    graph = _ByName("graph")

    @cached_property
    def granular(self) -> GranularRetriever:
        return GranularRetriever(self.snapshot)
