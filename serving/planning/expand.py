"""The planning step the expand stage runs between retrieval and fusion: decomposition.

`QueryExpansion.expand` takes the main query's per-strategy lists, runs the sub-queries of an
issue-length query through the same retrievers (in parallel, each kind on the strategies
`planning.decompose.strategies` names), looks frames and paths up in the snapshot, and fuses
everything into one list per strategy (`ListMerger`). It returns `PlannedLists` (the merged lists, carrying a `PlanTrace` of every list
for mining) and what it decided for `SearchResponse.plan` (None when it did nothing, so a short
query is answered exactly as without planning).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from semantica.config import PlanningConfig
from semantica.hits import RankedList
from semantica.snapshot import Snapshot
from serving.core.intent import IntentResult
from serving.graph.ops import SnapshotGraph
from serving.planning.decompose import QueryDecomposer, SubQuery, SubQueryKind
from serving.planning.direct import DirectResolver
from serving.planning.merge import DIRECT, ListMerger, PlannedLists, PlanTrace, SubQueryLists
from serving.retrievers.base import Filters
from serving.retrievers.registry import retriever_name

Retrieve = Callable[[str, IntentResult, set[str]], dict[str, RankedList]]
"""(text, its intent, retriever names) -> ranked lists over the request's snapshots (the pipeline's retrieval)."""


class QueryExpansion:
    """Decomposition around the pipeline's retrieval; see the module docstring."""

    def __init__(self, config: PlanningConfig, classify: Callable[[str], IntentResult],
                 graph_of: Callable[[Snapshot], SnapshotGraph]) -> None:
        self.config = config
        self.decomposer = QueryDecomposer(config.decompose)
        self.direct = DirectResolver()
        self.merger = ListMerger(config)
        self.classify = classify
        self.graph_of = graph_of
        self._pool = ThreadPoolExecutor(max_workers=len(SubQueryKind), thread_name_prefix="subquery")

    def expand(self, query: str, intent: IntentResult, snapshots: list[Snapshot], enabled: set[str],
               filters: Filters, main: dict[str, RankedList],
               retrieve: Retrieve) -> tuple[dict[str, RankedList], dict[str, Any] | None]:
        sub_queries = self.decomposer.decompose(query, intent)
        if not sub_queries:
            return main, None
        allowed = _allowed(snapshots, filters)
        graphs = [self.graph_of(s) for s in snapshots] if any(s.direct for s in sub_queries) else []
        subs = self._run(sub_queries, enabled, graphs, allowed, retrieve)
        trace = PlanTrace(main=main, sub_queries=subs)
        plan: dict[str, Any] = {"sub_queries": [dict(s.to_dict(), hits={k: len(v) for k, v in lists.lists.items()})
                                                for s, lists in zip(sub_queries, subs)]}
        return PlannedLists(self.merger.merge(main, subs), trace), plan

    def _run(self, sub_queries: list[SubQuery], enabled: set[str], graphs: list[SnapshotGraph],
             allowed: Callable[[str], bool], retrieve: Retrieve) -> list[SubQueryLists]:
        """Every sub-query's lists, in parallel (direct lookups inline: dictionary work)."""
        def one(sub: SubQuery) -> SubQueryLists:
            if sub.direct:
                lookup = (lambda g: self.direct.frames(g, sub.frames)) if sub.kind is SubQueryKind.FRAME \
                    else (lambda g: self.direct.paths(g, sub.paths))
                ranked = _concat([[(c, r) for c, r in lookup(g) if allowed(c)] for g in graphs])
                return SubQueryLists(sub.kind, sub.text, {DIRECT: ranked})
            strategies = {retriever_name(s) for s in self.config.decompose.strategies.get(sub.kind.value, [])} & enabled
            lists = retrieve(sub.text, self.classify(sub.text), strategies) if strategies else {}
            return SubQueryLists(sub.kind, sub.text, dict(lists))

        return list(self._pool.map(one, sub_queries))


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
