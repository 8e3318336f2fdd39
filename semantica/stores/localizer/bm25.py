"""In-memory BM25 over one field of a snapshot's documents (a sparse matrix; no JVM, milliseconds a query).

Term counts are computed once per document text and kept as arrays over a vocabulary that only grows,
so the next snapshot of the same repository (which shares almost every blob) is assembled from cached
arrays: building a field is a concatenation, not a re-tokenization.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from semantica.stores.tokenizer import tokenize

if TYPE_CHECKING:
    from scipy import sparse


class Vocabulary:
    """Term -> id, growing; shared by every field and snapshot of one builder."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def encode(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(term ids, term frequencies) of a token sequence."""
        counts = Counter(tokens)
        ids = np.fromiter((self.ids.setdefault(t, len(self.ids)) for t in counts), dtype=np.int32, count=len(counts))
        return ids, np.fromiter(counts.values(), dtype=np.float32, count=len(counts))

    def lookup(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Known terms of a query and their counts (unknown terms cannot score)."""
        counts = Counter(t for t in tokens if t in self.ids)
        ids = np.fromiter((self.ids[t] for t in counts), dtype=np.int64, count=len(counts))
        return ids, np.fromiter(counts.values(), dtype=np.float32, count=len(counts))


@dataclass
class TermCounts:
    ids: np.ndarray
    tfs: np.ndarray


def term_counts(vocab: Vocabulary, text: str) -> TermCounts:
    ids, tfs = vocab.encode(tokenize(text))
    return TermCounts(ids, tfs)


class Bm25Field:
    """BM25 (Lucene's idf, k1/b) over one field; `search` returns (doc index, score) best first."""

    def __init__(self, docs: Sequence[TermCounts], n_terms: int, k1: float, b: float) -> None:
        from scipy import sparse  # a fifth of a second to import: only where a field is built

        self.n_docs = len(docs)
        lengths = np.array([d.tfs.sum() for d in docs], dtype=np.float32)
        if not docs:
            self.weights = sparse.csc_matrix((0, max(1, n_terms)), dtype=np.float32)
            return
        rows = np.repeat(np.arange(len(docs), dtype=np.int32), [len(d.ids) for d in docs])
        cols = np.concatenate([d.ids for d in docs]).astype(np.int32)
        tfs = np.concatenate([d.tfs for d in docs])
        avg = float(lengths.mean()) or 1.0
        df = np.bincount(cols, minlength=n_terms).astype(np.float32)
        idf = np.log1p((self.n_docs - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * lengths[rows] / avg)
        values = idf[cols] * tfs * (k1 + 1.0) / (tfs + norm)
        self.weights = sparse.csc_matrix((values, (rows, cols)), shape=(self.n_docs, n_terms), dtype=np.float32)

    @classmethod
    def from_weights(cls, weights: sparse.csc_matrix) -> Bm25Field:
        """A field whose BM25 weights were computed before (a stored localizer snapshot)."""
        field = cls.__new__(cls)
        field.n_docs = weights.shape[0]
        field.weights = weights
        return field

    def scores(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        ids_ok = ids < self.weights.shape[1]
        ids, counts = ids[ids_ok], counts[ids_ok]
        if not len(ids) or not self.n_docs:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self.weights[:, ids] @ counts).ravel()

    def search(self, ids: np.ndarray, counts: np.ndarray, depth: int) -> list[tuple[int, float]]:
        return top_scores(self.scores(ids, counts), depth)


def top_scores(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """(doc index, score) of the best `depth` positive scores, best first (equal scores: lower index first)."""
    hit = np.flatnonzero(scores > 0)
    if not len(hit):
        return []
    hit = hit[at_least_kth_best(scores[hit], depth)]
    top = hit[np.argsort(-scores[hit], kind="stable")[:depth]]
    return list(zip(top.tolist(), scores[top].tolist()))


def at_least_kth_best(values: np.ndarray, count: int) -> np.ndarray:
    """The positions of `values` at least the count-th largest, ties at it included: all a full sort's first `count`
    can hold, so only these need sorting (every position where there are no more than `count`)."""
    if not 0 < count < len(values):
        return np.arange(len(values))
    return np.flatnonzero(values >= np.partition(values, len(values) - count)[len(values) - count])
