"""Dense retrieval: FAISS over the query embedding, all shards searched and merged."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from semantica.schema import Chunk
from semantica.stores.vectors import VectorShardSearcher, VectorShardSet, omp_threads
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList, merge_scored

TIE_SLACK = 16  # vectors asked beyond k, so the chunks tied at the k-th score come back in the first call


class VectorRetriever(BaseRetriever):
    """Cosine similarity of the query vector to chunk vectors."""

    name = "vector"  # its registry name

    def __init__(self, shards: list[VectorShardSearcher], chunks: list[Chunk],
                 encode_query: Callable[[str], np.ndarray], query_threads: int = 0) -> None:
        super().__init__({c.chunk_id: c for c in chunks})
        self.shard_set = VectorShardSet(shards)
        self.chunk_ids = [c.chunk_id for c in chunks]
        self.encode_query = encode_query
        self.query_threads = query_threads  # faiss.query_threads

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        """The best `k` chunks by score, equal scores by chunk id. The shards' best `k + TIE_SLACK` vectors come
        back in one call; when the last of them still scores as high as the k-th chunk (ties, or a chunk in two
        shards), twice as many are asked for, until every vector at that score is in."""
        if not query.text.strip() or not self.shard_set.total or k <= 0:  # no chunk vectors: nothing to encode for
            return []
        vector = self.encode_query(query.text)
        asked = k + TIE_SLACK
        with omp_threads(self.query_threads):
            while True:
                scores, rows = self.shard_set.search(vector, asked)
                best = self._best(scores, rows, k)
                if asked >= self.shard_set.total or (len(best) == k and scores[-1] < best[-1][1]):
                    return best
                asked *= 2

    def _best(self, scores: np.ndarray, rows: np.ndarray, k: int) -> ScoredList:
        """`merge_scored` over the shards' hits (each chunk's best score; by score, then chunk id), reading only
        the hits down to the k-th distinct chunk's score."""
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
