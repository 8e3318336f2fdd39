"""The retrievers over one snapshot, built lazily and once per snapshot (a new snapshot gets new ones)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from semantica.encoder import Encoder, snapshot_encoder
from semantica.snapshot import Snapshot
from serving.retrievers.granular import GranularRetriever
from serving.retrievers.graph import GraphRetriever
from serving.retrievers.lexical import LexicalRetriever
from serving.retrievers.symbol import SymbolRetriever
from serving.retrievers.vector import VectorRetriever


class RepoRetrievers:
    """The four retrievers over one snapshot, built once per snapshot."""

    def __init__(self, snapshot: Snapshot, encoder_factory: Callable[[], Encoder],
                 encode_query: Callable[[str], Any] | None = None) -> None:
        self.snapshot = snapshot
        self._encoder_factory = encoder_factory
        self._encode_query = encode_query

    @cached_property
    def vector(self) -> VectorRetriever:
        m = self.snapshot.manifest  # the snapshot decides its encoder (a mismatch it cannot load is refused)
        configured = self._encoder_factory()
        encoder = snapshot_encoder(m.model_id, m.dim, m.model_path, configured)
        encode = self._encode_query if self._encode_query and encoder is configured else encoder.encode_query
        return VectorRetriever(self.snapshot.vector_shards, self.snapshot.chunks, encode)

    @cached_property
    def lexical(self) -> LexicalRetriever:
        return LexicalRetriever(self.snapshot.lucene_shards, self.snapshot.chunk_by_id)

    @cached_property
    def symbol(self) -> SymbolRetriever:
        return SymbolRetriever(self.snapshot.symbols, self.snapshot.chunk_by_id,
                               self.snapshot.config.retrieval.symbol_fuzzy_max_names)

    @cached_property
    def granular(self) -> GranularRetriever:
        return GranularRetriever(self.snapshot)

    @cached_property
    def graph(self) -> GraphRetriever:
        s = self.snapshot
        return GraphRetriever(s.graph_store, s.symbols, s.chunks, s.pagerank, s.config.graph)
