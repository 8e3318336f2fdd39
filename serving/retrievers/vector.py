"""Dense retrieval: FAISS over the query embedding, all shards searched and merged."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from semantica.schema import Chunk
from semantica.stores.vectors import VectorShardSearcher, omp_threads
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList, merge_scored


class VectorRetriever(BaseRetriever):
    """Cosine similarity of the query vector to chunk vectors."""

    name = "vector"  # its registry name

    def __init__(self, shards: list[VectorShardSearcher], chunks: list[Chunk],
                 encode_query: Callable[[str], np.ndarray], query_threads: int = 0) -> None:
        super().__init__({c.chunk_id: c for c in chunks})
        self.shards = shards
        self.chunk_ids = [c.chunk_id for c in chunks]
        self.encode_query = encode_query
        self.query_threads = query_threads  # faiss.query_threads

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        if not query.text.strip() or not self.shards:  # no chunk vectors: the query is not encoded for nothing
            return []
        vector = self.encode_query(query.text).reshape(1, -1)
        with omp_threads(self.query_threads):
            searched = [shard.search(vector, k) for shard in self.shards]
        scores = np.concatenate([found[0] for found, _ in searched])
        rows = np.concatenate([found[0] for _, found in searched])
        scores, rows = scores[rows >= 0], rows[rows >= 0]
        return self._best(scores, rows, k)

    def _best(self, scores: np.ndarray, rows: np.ndarray, k: int) -> ScoredList:
        """`merge_scored` over every shard's hits (each chunk's best score; by score, then chunk id), reading only
        the hits down to the k-th distinct chunk's score: a large repository has tens of shards of k hits each."""
        best: dict[str, float] = {}
        cut = None
        for position in np.argsort(-scores, kind="stable").tolist():
            score = float(scores[position])
            if cut is not None and score < cut:
                break
            best.setdefault(self.chunk_ids[rows[position]], score)  # the first is a chunk's best: scores descend
            if cut is None and len(best) == k:
                cut = score  # ties at the cut still come in: the chunk id orders them
        return merge_scored([list(best.items())], k)
