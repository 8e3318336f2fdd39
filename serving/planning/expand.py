"""The planning step the expand stage runs between retrieval and fusion: decomposition.

`QueryExpansion.expand` takes the main query's per-strategy lists, looks the query's stack frames up in
the snapshot, and fuses that list into each strategy's list (`ListMerger`). It returns `PlannedLists` (the
merged lists, carrying a `PlanTrace` of every list for mining) and what it decided for
`SearchResponse.plan` (None when it did nothing, so a query without frames is answered exactly as without
planning).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from semantica.config import PlanningConfig
from semantica.hits import RankedList
from semantica.snapshot import Snapshot
from serving.graph.ops import SnapshotGraph
from serving.planning.decompose import QueryDecomposer
from serving.planning.direct import DirectResolver
from serving.planning.merge import DIRECT, ListMerger, PlannedLists, PlanTrace, SubQueryLists
from serving.retrievers.base import Filters


class QueryExpansion:
    """Decomposition after the pipeline's retrieval; see the module docstring."""

    def __init__(self, config: PlanningConfig, graph_of: Callable[[Snapshot], SnapshotGraph]) -> None:
        self.config = config
        self.decomposer = QueryDecomposer(config.decompose)
        self.direct = DirectResolver()
        self.merger = ListMerger(config)
        self.graph_of = graph_of

    def expand(self, query: str, snapshots: list[Snapshot], filters: Filters,
               main: dict[str, RankedList]) -> tuple[dict[str, RankedList], dict[str, Any] | None]:
        sub_queries = self.decomposer.decompose(query)
        if not sub_queries:
            return main, None
        allowed = _allowed(snapshots, filters)
        graphs = [self.graph_of(s) for s in snapshots]
        subs = [SubQueryLists(sub.kind, sub.text, {DIRECT: _concat(
            [[(c, r) for c, r in self.direct.frames(g, sub.frames) if allowed(c)] for g in graphs])})
            for sub in sub_queries]
        trace = PlanTrace(main=main, sub_queries=subs)
        plan: dict[str, Any] = {"sub_queries": [dict(s.to_dict(), hits={k: len(v) for k, v in lists.lists.items()})
                                                for s, lists in zip(sub_queries, subs)]}
        return PlannedLists(self.merger.merge(main, subs), trace), plan


def _allowed(snapshots: list[Snapshot], filters: Filters) -> Callable[[str], bool]:
    """Whether a chunk id found by lookup passes the request's filters (retrievers filter their own)."""
    if filters.is_empty():
        return lambda chunk_id: True
    tables = [s.chunk_by_id for s in snapshots]

    def allowed(chunk_id: str) -> bool:
        for table in tables:
            chunk = table.get(chunk_id)
            if chunk is not None:
                return filters.allows(chunk)
        return False

    return allowed


def _concat(per_graph: list[RankedList]) -> RankedList:
    """One list from several repositories' lists: interleaved by rank, re-ranked from 1."""
    merged = sorted((rank, i, chunk_id) for i, ranked in enumerate(per_graph) for chunk_id, rank in ranked)
    out = list(dict.fromkeys(chunk_id for _, _, chunk_id in merged))
    return [(chunk_id, rank) for rank, chunk_id in enumerate(out, 1)]
