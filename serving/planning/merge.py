"""Fusing the frame lookup's list into each strategy's list (weighted RRF), a pure function.

The pipeline and the offline replay (`semantica eval localize`) both call `ListMerger.merge`, so a
replay over mined lists reproduces what the pipeline fused. The result keeps the shape every later
stage expects (`{retriever name: RankedList}`): chunk fusion, localization and mining are unchanged.

For each strategy s in `decompose.direct_into`, a chunk c scores

    MAIN_WEIGHT / (RRF_K + r_main,s(c))  +  decompose.frame_weight / (RRF_K + r_frames(c))

kept to the best `MAX_LIST` (or the main list's length if longer). Ties keep the main list's order.
A strategy outside `direct_into` keeps its list unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.config import PlanningConfig
from semantica.hits import RankedList
from serving.planning.decompose import SubQueryKind
from serving.retrievers.registry import conf_retriever_names

DIRECT = "direct"
"""The list key of the frame lookup (not a retriever)."""
RRF_K = 60.0  # the RRF constant of the merge (the usual 60; the sub-query weights are what is tuned)
MAIN_WEIGHT = 1.0  # the main query's list weight: `planning.decompose.frame_weight` is relative to it
MAX_LIST = 150  # merged list length per strategy (a main list longer than this keeps its length)


@dataclass
class SubQueryLists:
    """One sub-query's ranked lists: `direct` for the frame lookup."""

    kind: SubQueryKind
    text: str
    lists: dict[str, RankedList] = field(default_factory=dict)


@dataclass
class PlanTrace:
    """Every list the planning stage saw, for mining and `--explain`: the main lists and each sub-query's."""

    main: dict[str, RankedList]
    sub_queries: list[SubQueryLists] = field(default_factory=list)


class PlannedLists(dict):
    """The merged `{retriever name: RankedList}` (a plain dict to every stage) carrying its `PlanTrace`."""

    def __init__(self, merged: dict[str, RankedList], trace: PlanTrace) -> None:
        super().__init__(merged)
        self.trace = trace


class ListMerger:
    """`merge(main, sub_queries)` -> one list per strategy, by the weights in `planning.decompose`."""

    def __init__(self, config: PlanningConfig) -> None:
        self.config = config
        self.direct_into = set(conf_retriever_names(config.decompose.direct_into, "planning.decompose.direct_into"))

    def merge(self, main: dict[str, RankedList], sub_queries: list[SubQueryLists]) -> dict[str, RankedList]:
        w = self.config.decompose.frame_weight
        feeds: dict[str, list[tuple[float, RankedList]]] = {s: [] for s in main}
        for sub in sub_queries:
            ranked = sub.lists.get(DIRECT)
            if w <= 0 or sub.kind is not SubQueryKind.FRAME or not ranked:
                continue
            for strategy in self.direct_into & set(main):
                feeds[strategy].append((w, ranked))
        return {strategy: self._fuse(ranked, feeds[strategy], RRF_K, MAIN_WEIGHT, max(MAX_LIST, len(ranked)))
                if feeds[strategy] else ranked for strategy, ranked in main.items()}

    @staticmethod
    def _fuse(main: RankedList, extra: list[tuple[float, RankedList]], k: float, main_weight: float,
              limit: int) -> RankedList:
        score: dict[str, float] = {}
        order: dict[str, int] = {}
        for chunk_id, rank in main:
            score[chunk_id] = score.get(chunk_id, 0.0) + main_weight / (k + rank)
            order.setdefault(chunk_id, len(order))
        for weight, ranked in extra:
            for chunk_id, rank in ranked:
                score[chunk_id] = score.get(chunk_id, 0.0) + weight / (k + rank)
                order.setdefault(chunk_id, len(order))
        best = sorted(score, key=lambda c: (-score[c], order[c]))[:limit]
        return [(chunk_id, rank) for rank, chunk_id in enumerate(best, 1)]
