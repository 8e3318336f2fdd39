"""Fusing the sub-query lists into each strategy's list (weighted RRF), a pure function.

The pipeline and the offline replay (`semantica eval localize`) both call `ListMerger.merge`, so a
replay over mined lists reproduces what the pipeline fused. The result keeps the shape every later
stage expects (`{retriever name: RankedList}`): chunk fusion, localization and mining are unchanged.

For strategy s, a chunk c scores

    MAIN_WEIGHT / (RRF_K + r_main,s(c))  +  sum over sub-queries q feeding s of  w_kind(q) / (RRF_K + r_q,s(c))

where a direct list (frames, paths) feeds the strategies in `decompose.direct_into`, and a sub-query's
list of strategy t feeds t, or the strategies `decompose.routes["kind.t"]` names instead (so that, e.g.,
the calls sub-query's symbol hits can vote in localization, which reads only the vector and lexical
lists), kept to the best `MAX_LIST` (or the main list's length if longer). Ties keep the main list's order.
A strategy no sub-query feeds keeps its list unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.config import PlanningConfig
from semantica.hits import RankedList
from serving.planning.decompose import SubQueryKind
from serving.retrievers.registry import conf_retriever_names, retriever_name

DIRECT = "direct"
"""The list key of a frame/path lookup (not a retriever)."""
MAIN_SOURCE = "main"
RRF_K = 60.0  # the RRF constant of the merge (the usual 60; the sub-query weights are what is tuned)
MAIN_WEIGHT = 1.0  # the main query's list weight: each kind's `planning.decompose.weights` entry is relative to it
MAX_LIST = 150  # merged list length per strategy (a main list longer than this keeps its length)


@dataclass
class SubQueryLists:
    """One sub-query's ranked lists: by retriever name, or `direct` for a frame/path lookup."""

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
        d = config.decompose
        self.direct_into = set(conf_retriever_names(d.direct_into, "planning.decompose.direct_into"))
        self.routes = {route: set(conf_retriever_names(targets, f"planning.decompose.routes.{route}"))
                       for route, targets in d.routes.items()}
        for route in d.routes:
            kind, _, strategy = route.partition(".")
            SubQueryKind.parse(kind)
            conf_retriever_names([strategy], f"planning.decompose.routes.{route}")  # "kind.retriever", both known
        for kind, names in d.strategies.items():
            SubQueryKind.parse(kind)
            conf_retriever_names(names, f"planning.decompose.strategies.{kind}")

    def weight(self, kind: SubQueryKind) -> float:
        return float(self.config.decompose.weights.get(kind.value, 0.0))

    def merge(self, main: dict[str, RankedList], sub_queries: list[SubQueryLists]) -> dict[str, RankedList]:
        feeds: dict[str, list[tuple[float, RankedList]]] = {s: [] for s in main}
        for sub in sub_queries:
            w = self.weight(sub.kind)
            if w <= 0:
                continue
            for key, ranked in sub.lists.items():
                targets = self.direct_into if key == DIRECT else \
                    self.routes.get(f"{sub.kind.value}.{key}", {retriever_name(key)})
                for strategy in targets & set(main):
                    feeds[strategy].append((w, ranked))
        merged: dict[str, RankedList] = {}
        for strategy, ranked in main.items():
            extra = [(w, r) for w, r in feeds[strategy] if r]
            merged[strategy] = self._fuse(ranked, extra, RRF_K, MAIN_WEIGHT, max(MAX_LIST, len(ranked))) \
                if extra else ranked
        return merged

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
