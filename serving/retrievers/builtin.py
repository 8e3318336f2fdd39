"""The built-in retrievers, registered by name (vector, lexical, symbol, graph, and `history`: past commits'
votes, serving/retrievers/history.py, and `exact`: the chunks holding a query's quoted strings or code fragment,
serving/retrievers/exact.py; add either to `retrieval.retrievers` to fuse it into the chunk hits)."""

from __future__ import annotations

from typing import Any

from semantica.runtime.encoder import snapshot_encoder
from serving.retrievers.exact import ExactRetriever
from serving.retrievers.graph import GraphRetriever
from serving.retrievers.history import HistoryRetriever
from serving.retrievers.lexical import LexicalRetriever
from serving.retrievers.registry import register_retriever
from serving.retrievers.symbol import SymbolRetriever
from serving.retrievers.vector import VectorRetriever


def _vector(repo: Any) -> VectorRetriever:
    if not repo.snapshot.vector_shards:  # no chunk vectors (still building, or none to store): nothing to encode for
        return VectorRetriever([], repo.snapshot.chunks, _no_query_vector, repo.snapshot.config.faiss.query_threads)
    m = repo.snapshot.manifest  # the snapshot decides its encoder (a mismatch it cannot load is refused)
    configured = repo.encoder_factory()
    encoder = snapshot_encoder(m.model_id, m.dim, m.model_path, configured)
    encode = repo.encode_query if repo.encode_query and encoder is configured else encoder.encode_query
    return VectorRetriever(repo.snapshot.vector_shards, repo.snapshot.chunks, encode,
                           repo.snapshot.config.faiss.query_threads)


def _no_query_vector(text: str) -> Any:
    raise AssertionError(f"a vector retriever without shards encoded the query {text!r}")


def _lexical(repo: Any) -> LexicalRetriever:
    return LexicalRetriever(repo.snapshot.lucene_shards, repo.snapshot.chunk_by_id)


def _symbol(repo: Any) -> SymbolRetriever:
    s = repo.snapshot
    return SymbolRetriever(s.symbols, s.chunk_by_id, s.config.retrieval.symbol_fuzzy_max_names)


def _graph(repo: Any) -> GraphRetriever:
    s = repo.snapshot
    return GraphRetriever(s.graph_store, s.symbols, s.chunks, s.pagerank, s.config.graph)


register_retriever("vector", _vector)
register_retriever("lexical", _lexical)
register_retriever("symbol", _symbol)
register_retriever("graph", _graph, seeded_by=("symbol", "lexical"))
register_retriever("history", lambda repo: HistoryRetriever(repo.snapshot))
register_retriever("exact", lambda repo: ExactRetriever(repo.snapshot))
