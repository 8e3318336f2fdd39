"""Lexical retrieval: Lucene BM25 (Pyserini) over code-aware tokens, all shards merged."""

from __future__ import annotations

from semantica.schema import Chunk
from semantica.stores.lucene import LuceneShardSearcher
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList, merge_scored


class LexicalRetriever(BaseRetriever):
    """BM25; the shard searcher sanitises queries so no Java exception reaches the caller."""

    name = "lexical"  # its registry name

    def __init__(self, shards: list[LuceneShardSearcher], chunk_by_id: dict[str, Chunk]) -> None:
        super().__init__(chunk_by_id)
        self.shards = shards

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        return merge_scored([shard.search(query.text, k) for shard in self.shards], k)
