"""Result types shared by the serving stages: strategies, ranked lists, fused hits.

A retriever answers with a `RankedList` (`[(chunk_id, rank)]`, ranks 1-based); fusion turns the
lists into `Hit`s that carry everything later stages and the learning-to-rank log need: the final
score, the fused score, per-strategy ranks and RRF contributions, an 18-value feature vector
(`FEATURE_NAMES`) and a readable explanation. Rerankers fill `ltr_score` / `late_score` / `cross_score` and
update `score`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.schema import Chunk, ParsableEnum


class Strategy(ParsableEnum):
    """A retrieval strategy (one index kind). The order here is the feature order."""

    VECTOR = "vector"
    LEXICAL = "lexical"
    SYMBOL = "symbol"
    GRAPH = "graph"


STRATEGIES: tuple[Strategy, ...] = tuple(Strategy)
STRATEGY_VALUES = frozenset(s.value for s in STRATEGIES)


def strategy_key(name: Strategy | str) -> Strategy | str:
    """A ranked list's key: a built-in strategy as its member, another registered retriever by its name
    (the members hash and compare as their names, so either finds the same list)."""
    value = name.value if isinstance(name, Strategy) else str(name).strip().lower()
    return Strategy(value) if value in STRATEGY_VALUES else value


def strategy_value(key: Strategy | str) -> str:
    return key.value if isinstance(key, Strategy) else key

RankedList = list[tuple[str, int]]
"""One retriever's answer: (chunk_id, rank) pairs, rank 1 = best."""

ABSENT_RANK = 1000
"""Rank feature value for a strategy that did not return the hit (larger than any real rank, so
"smaller is better" holds for every rank feature). Real ranks are 1-based; 0 never occurs."""

FEATURE_NAMES: tuple[str, ...] = (
    *(f"rank_{s.value}" for s in STRATEGIES),      # 1-based rank, ABSENT_RANK when absent
    *(f"rrf_{s.value}" for s in STRATEGIES),       # w_s / (k_s + rank_s), 0.0 when absent
    *(f"weight_{s.value}" for s in STRATEGIES),    # normalised intent weight of the strategy
    "n_strategies",                                # M: strategies that returned the hit
    "best_rank",                                   # lowest rank over those strategies
    "avg_rank",                                    # mean rank over those strategies
    "consensus",                                   # the consensus factor applied
    "chunk_lines",                                 # chunk size in lines (0 when unknown)
    "file_depth",                                  # number of '/' in the path (0 when unknown)
)
N_FEATURES = len(FEATURE_NAMES)
assert N_FEATURES == 18


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
    """One fused result. `score` is the current final score (fusion sets it to `fused_score`;
    the LTR model, late interaction and the cross-encoder overwrite it)."""

    chunk_id: str
    score: float
    fused_score: float
    ranks: dict[str, int] = field(default_factory=dict)
    rrf_scores: dict[str, float] = field(default_factory=dict)
    features: list[float] = field(default_factory=list)
    explanation: str = ""
    late_score: float | None = None
    cross_score: float | None = None
    ltr_score: float | None = None
    chunk: Chunk | None = None

    @property
    def best_rank(self) -> int:
        """Lowest (best) rank over the strategies that returned this hit; ABSENT_RANK if none."""
        return min(self.ranks.values()) if self.ranks else ABSENT_RANK

    def feature_dict(self) -> dict[str, float]:
        """Features by name (for logging)."""
        return dict(zip(FEATURE_NAMES, self.features))
