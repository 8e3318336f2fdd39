"""Result types shared by the serving stages: ranked lists keyed by retriever name, fused hits.

A retriever answers with a `RankedList` (`[(chunk_id, rank)]`, ranks 1-based); fusion turns the
lists into `Hit`s that carry everything later stages and the mined log (`semantica mine`) need: the final
score, the fused score, per-retriever ranks and RRF contributions, the feature vector of the versioned
schema (`semantica.feature_schema`) and a readable explanation. Each reranker records its own score in
`Hit.scores[<reranker name>]` and updates `score`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.feature_schema import FEATURE_NAMES
from semantica.schema import Chunk

__all__ = ["ABSENT_RANK", "FEATURE_NAMES", "ChunkMeta", "Hit", "RankedList"]

RankedList = list[tuple[str, int]]
"""One retriever's answer: (chunk_id, rank) pairs, rank 1 = best. Ranked lists are keyed by the
retriever's registered name (`serving.retrievers.registry`), a plain str."""

ABSENT_RANK = 1000
"""Rank feature value for a strategy that did not return the hit (larger than any real rank, so
"smaller is better" holds for every rank feature). Real ranks are 1-based; 0 never occurs."""


@dataclass
class ChunkMeta:
    """What fusion needs to know about a chunk besides its ranks."""

    symbol: str = ""
    path: str = ""
    size: int = 0

    @staticmethod
    def from_chunk(chunk: Chunk) -> ChunkMeta:
        """Size is the chunk's line count."""
        return ChunkMeta(
            symbol=chunk.symbol or "",
            path=chunk.path or "",
            size=max(0, int(chunk.end_line) - int(chunk.start_line) + 1),
        )


@dataclass
class Hit:
    """One fused result. `score` is the current final score (fusion sets it to `fused_score`; each reranker
    that re-scores the hit overwrites it and records its own value in `scores[<reranker name>]`)."""

    chunk_id: str
    score: float
    fused_score: float
    ranks: dict[str, int] = field(default_factory=dict)
    rrf_scores: dict[str, float] = field(default_factory=dict)
    features: list[float] = field(default_factory=list)
    explanation: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    chunk: Chunk | None = None
