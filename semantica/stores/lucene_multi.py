"""BM25 over several Lucene shards with collection-wide statistics.

Searching each shard on its own and merging by score is not the same ranking as one index:
BM25's idf and average length come from each shard's own documents. One `IndexSearcher` over a
`MultiReader` of the shards scores every document with the statistics of all of them, so a
sharded snapshot ranks exactly like an unsharded one. Same query form as Anserini's
`SimpleSearcher` with the whitespace analyzer (a bag of SHOULD term queries on `contents`, BM25
k1=0.9 b=0.4), so one shard through either class gives the same scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from semantica.config import LuceneConfig
from semantica.stores.lucene import ID_FIELD, JNI_CALLS, LuceneError, id_only_fields, read_doc_ids, start_jvm
from semantica.stores.tokenizer import tokenize, unique_terms

CONTENTS_FIELD = "contents"
BM25_K1 = 0.9  # Anserini's defaults (SimpleSearcher)
BM25_B = 0.4
SCORE_DECIMALS = 4
# hits past k read by score alone: enough that a tie at the k-th score rarely reaches the last one read (then the
# id-sorted search runs instead); sorting by a string field in Lucene costs more than these extra hits
TIE_MARGIN = 16


class LuceneMultiShardSearcher:
    """`search(query, k)` -> [(chunk_id, bm25)] over all shards at once (thread-safe)."""

    def __init__(self, directories: Sequence[Path], config: LuceneConfig) -> None:
        if not directories:
            raise LuceneError("no Lucene shard to search")
        start_jvm(config)
        self.config = config
        with JNI_CALLS:  # opening readers calls into the JVM too (repositories open in parallel)
            self._open(directories, config)

    def _open(self, directories: Sequence[Path], config: LuceneConfig) -> None:
        from jnius import autoclass, cast

        file_class = autoclass("java.io.File")
        fs_directory = autoclass("org.apache.lucene.store.FSDirectory")
        directory_reader = autoclass("org.apache.lucene.index.DirectoryReader")
        index_searcher = autoclass("org.apache.lucene.search.IndexSearcher")
        index_searcher.setMaxClauseCount(max(config.max_clause_count, config.max_query_terms))
        try:
            readers = [cast("org.apache.lucene.index.IndexReader",
                            directory_reader.open(fs_directory.open(file_class(str(d)).toPath()))) for d in directories]
            self._reader = autoclass("org.apache.lucene.index.MultiReader")(readers, True)  # closes the shards with it
        except Exception as exc:  # a missing or corrupt shard: say which set failed
            raise LuceneError(f"cannot open Lucene shards {[str(d) for d in directories]}: {exc}") from exc
        self._ids = self._doc_ids(directories, [reader.maxDoc() for reader in readers])
        self._id_fields = id_only_fields()
        self._searcher = index_searcher(cast("org.apache.lucene.index.IndexReader", self._reader))
        self._searcher.setSimilarity(autoclass("org.apache.lucene.search.similarities.BM25Similarity")(BM25_K1, BM25_B))
        self._term = autoclass("org.apache.lucene.index.Term")
        self._term_query = autoclass("org.apache.lucene.search.TermQuery")
        self._builder = autoclass("org.apache.lucene.search.BooleanQuery$Builder")
        self._should = autoclass("org.apache.lucene.search.BooleanClause$Occur").SHOULD
        sort_field = autoclass("org.apache.lucene.search.SortField")
        string_type = autoclass("org.apache.lucene.search.SortField$Type").STRING_VAL
        self._sort = autoclass("org.apache.lucene.search.Sort")(
            sort_field.FIELD_SCORE, sort_field(ID_FIELD, string_type))  # ties by id, as Anserini breaks them

    @staticmethod
    def _doc_ids(directories: Sequence[Path], max_docs: list[int]) -> list[str] | None:
        """Every shard's id list, concatenated in the MultiReader's doc-number order; None if one is missing."""
        ids: list[str] = []
        for directory, max_doc in zip(directories, max_docs, strict=True):
            shard_ids = read_doc_ids(directory, max_doc)
            if shard_ids is None:
                return None
            ids.extend(shard_ids)
        return ids

    def sanitise(self, query: str) -> str:
        clean = query.encode("utf-8", "ignore").decode("utf-8", "ignore")
        return " ".join(unique_terms(tokenize(clean))[: self.config.max_query_terms])

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        terms = self.sanitise(query).split()
        if not terms or k <= 0:
            return []
        try:
            with JNI_CALLS:  # one lock for every instance (see semantica.stores.lucene.JNI_CALLS)
                builder = self._builder()
                for term in terms:
                    builder.add(self._term_query(self._term(CONTENTS_FIELD, term)), self._should)
                hits = self._top(builder.build(), int(k))
        except Exception as exc:  # a Java exception must not reach the caller raw
            raise LuceneError(f"lexical search failed: {exc}") from exc
        # Anserini rounds scores to SCORE_DECIMALS and orders equal ones by id; do the same
        return sorted(((cid, round(score, SCORE_DECIMALS)) for cid, score in hits), key=lambda hit: (-hit[1], hit[0]))

    def _top(self, query: Any, k: int) -> list[tuple[str, float]]:
        """The k best (id, score), equal scores by id: read by score alone with `TIE_MARGIN` more hits and ordered
        here, or, when the k-th score's ties may reach past the hits read, sorted by id in Lucene."""
        if self._ids is not None:
            top = self._searcher.search(query, k + TIE_MARGIN)
            read = [(self._ids[sd.doc], float(sd.score)) for sd in top.scoreDocs]
            if len(read) < k + TIE_MARGIN or read[-1][1] < read[k - 1][1]:  # every hit tied with the k-th is read
                return sorted(read, key=lambda hit: (-hit[1], hit[0]))[:k]
        top = self._searcher.search(query, k, self._sort, True)
        if self._ids is not None:
            return [(self._ids[sd.doc], float(sd.score)) for sd in top.scoreDocs]
        stored = self._searcher.storedFields()
        return [(stored.document(sd.doc, self._id_fields).get(ID_FIELD), float(sd.score)) for sd in top.scoreDocs]

    def close(self) -> None:
        with JNI_CALLS:
            self._reader.close()
