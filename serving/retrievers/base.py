"""What every retriever shares: the query it gets, filters, and scored -> ranked conversion.

A retriever searches ONE snapshot (Pyserini-style `search`); the pipeline merges
the scored lists of several repositories before ranking.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from semantica.hits import RankedList
from semantica.schema import Chunk
from serving.core.intent import Expansions, IntentResult

ScoredList = list[tuple[str, float]]
OVERFETCH_FACTOR = 4
"""With filters, ask the index for this many times k, then filter (filters are post-hoc)."""


@dataclass
class Filters:
    """Optional restrictions on which chunks may be returned."""

    path_globs: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.path_globs or self.languages)

    def allows(self, chunk: Chunk) -> bool:
        if self.languages and chunk.language not in self.languages:
            return False
        if self.path_globs and not any(fnmatch.fnmatch(chunk.path, g) for g in self.path_globs):
            return False
        return True


@dataclass
class RetrievalQuery:
    """The query text plus what earlier stages learned (intent, expansions, graph seeds).

    `seeds` mixes symbol and lexical hits; `symbol_seeds` are the symbol retriever's best hits alone,
    the precise targets of a directed question such as "who calls X"."""

    text: str
    intent: IntentResult | None = None
    seeds: list[str] = field(default_factory=list)
    symbol_seeds: list[str] = field(default_factory=list)

    @property
    def expansions(self) -> Expansions:
        return self.intent.expansions if self.intent else Expansions()

    @staticmethod
    def of(query: RetrievalQuery | str) -> RetrievalQuery:
        return query if isinstance(query, RetrievalQuery) else RetrievalQuery(text=query)


def to_ranked(scored: ScoredList) -> RankedList:
    """Best-first scored list -> 1-based ranks."""
    return [(chunk_id, rank) for rank, (chunk_id, _) in enumerate(scored, start=1)]


def merge_scored(lists: Sequence[ScoredList], k: int) -> ScoredList:
    """Merge best-first lists by score, keeping each chunk's best score."""
    best: dict[str, float] = {}
    for scored in lists:
        for chunk_id, score in scored:
            if score > best.get(chunk_id, float("-inf")):
                best[chunk_id] = score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]


class Retriever(Protocol):
    """One index kind over one snapshot."""

    name: str  # the name it is registered under (`serving.retrievers.registry`)

    def search_scored(self, query: RetrievalQuery | str, k: int, filters: Filters | None = None) -> ScoredList: ...

    def search(self, query: RetrievalQuery | str, k: int, filters: Filters | None = None) -> RankedList: ...


class BaseRetriever:
    """`search` from one `search_scored`; filtering with over-fetch."""

    name: str

    def __init__(self, chunk_by_id: dict[str, Chunk]) -> None:
        self.chunk_by_id = chunk_by_id

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        raise NotImplementedError

    def search_scored(self, query: RetrievalQuery | str, k: int, filters: Filters | None = None) -> ScoredList:
        if k <= 0:
            return []
        query = RetrievalQuery.of(query)
        if filters is None or filters.is_empty():
            return self._search(query, k)
        found = self._search(query, k * OVERFETCH_FACTOR)
        return [(c, s) for c, s in found if c in self.chunk_by_id and filters.allows(self.chunk_by_id[c])][:k]

    def search(self, query: RetrievalQuery | str, k: int, filters: Filters | None = None) -> RankedList:
        return to_ranked(self.search_scored(query, k, filters))
