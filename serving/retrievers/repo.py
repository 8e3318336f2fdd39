"""The retrievers over one snapshot, built lazily by name from the registry, once per snapshot
(a new snapshot gets new ones)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from semantica.runtime.encoder import Encoder
from semantica.runtime.once_by_name import OnceByName
from semantica.snapshot import Snapshot
from serving.retrievers.registry import retriever_spec


class RepoRetrievers:
    """Every registered retriever over one snapshot (`get(name)`), built on first use."""

    def __init__(self, snapshot: Snapshot, encoder_factory: Callable[[], Encoder],
                 encode_query: Callable[[str], Any] | None = None) -> None:
        self.snapshot = snapshot
        self.encoder_factory = encoder_factory
        self.encode_query = encode_query
        self._built = OnceByName()  # the lexical one starts the JVM while the others build beside it

    def get(self, name: str) -> Any:
        """The retriever registered as `name` over this snapshot (ValueError for an unknown name)."""
        spec = retriever_spec(name)
        return self._built.get(spec.name, lambda: spec.build(self))

    def built(self) -> set[str]:
        """The names of the retrievers built so far (prefetch builds them before the first query)."""
        return self._built.names()

    def replace(self, name: str, retriever: Any) -> None:
        """Answer `name` with `retriever` over this snapshot from now on (a test swaps in a broken index)."""
        spec = retriever_spec(name)
        self._built.put(spec.name, retriever)
