"""The fused-hit feature schema: the features, in order, under a version number.

Fusion writes every hit's `features` in this order; `semantica mine` records them and a model trained on
mined rows reads them positionally, so the order is a contract between a model file and the code that
writes the features. A model records `FEATURE_SCHEMA_VERSION` (with its feature names) when it is trained,
and loading one made under another version is a clear error instead of silently wrong scores. Bump the
version whenever `FEATURE_NAMES` change.

`FEATURE_STRATEGIES` are the retrievers that own rank / RRF / weight features. Retrievers are named by
string (`serving.retrievers.registry`); a retriever registered beyond these is fused and explained but adds
no feature until a model is trained on a schema that lists it.
"""

from __future__ import annotations

FEATURE_SCHEMA_VERSION = 1

FEATURE_STRATEGIES: tuple[str, ...] = ("vector", "lexical", "symbol", "graph")

FEATURE_NAMES: tuple[str, ...] = (
    *(f"rank_{s}" for s in FEATURE_STRATEGIES),      # 1-based rank, ABSENT_RANK when absent
    *(f"rrf_{s}" for s in FEATURE_STRATEGIES),       # w_s / (k_s + rank_s), 0.0 when absent
    *(f"weight_{s}" for s in FEATURE_STRATEGIES),    # normalised intent weight of the strategy
    "n_strategies",                                  # M: strategies that returned the hit
    "best_rank",                                     # lowest rank over those strategies
    "avg_rank",                                      # mean rank over those strategies
    "consensus",                                     # the consensus factor applied
    "chunk_lines",                                   # chunk size in lines (0 when unknown)
    "file_depth",                                    # number of '/' in the path (0 when unknown)
)
