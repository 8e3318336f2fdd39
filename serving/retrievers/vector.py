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
        lists: list[ScoredList] = []
        with omp_threads(self.query_threads):
            searched = [shard.search(vector, k) for shard in self.shards]
        for scores, rows in searched:
            lists.append([(self.chunk_ids[r], float(s)) for s, r in zip(scores[0], rows[0]) if r >= 0])
        return merge_scored(lists, k)
