"""The query planner: the mode before retrieval; MMR after reranking.

The query stages call it in three places: request validation (`validate`: the mode), the plan stage before
retrieval (`begin`: the plan and the mode's fusion multipliers) and the finish stage after reranking
(`finish`: MMR for a forced mmr_diverse). Everything it decides goes into `Plan`, which the response carries
as `SearchResponse.plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semantica.api import QueryError, SearchRequest
from semantica.config import Config
from semantica.hits import Hit
from semantica.snapshot import Snapshot
from serving.planning.analyzer import FORCED, ModeChoice, QueryAnalyzer, StrategySelector
from serving.planning.mmr import StoredVectors, mmr_order
from serving.planning.modes import SearchMode, mode_multipliers


@dataclass
class Plan:
    """What the planner decided for one request (`SearchResponse.plan`)."""

    choice: ModeChoice
    k: int
    multipliers: dict[str, float] | None
    mmr: dict[str, Any] | None = None
    sub_queries: list[Any] = field(default_factory=list)  # filled by decomposition (decompose.py)

    @property
    def forced(self) -> bool:
        return self.choice.why == FORCED

    @property
    def mode(self) -> SearchMode:
        return self.choice.mode

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode.value, "why": self.choice.why, "features": self.choice.features.to_dict(),
            "k": self.k,
            "weights": dict(self.multipliers) if self.multipliers else None,
            "mmr": self.mmr, "sub_queries": self.sub_queries,
        }


class QueryPlanner:
    """Plans one request at a time; thread-safe (no per-request state on the object)."""

    def __init__(self, config: Config) -> None:
        p = config.planning
        self.config = config
        self.analyzer = QueryAnalyzer(p)
        self.selector = StrategySelector(p)
        self.multipliers = mode_multipliers(p.modes.multipliers)
        self.vectors = StoredVectors()

    # -- before retrieval ------------------------------------------------------------------------

    def validate(self, request: SearchRequest) -> None:
        """Check `mode` (QueryError listing the valid values)."""
        if request.mode is not None:
            try:
                request.mode = SearchMode.parse(request.mode).value
            except ValueError as exc:
                raise QueryError(str(exc)) from None

    def _choose(self, request: SearchRequest) -> ModeChoice:
        forced = SearchMode.parse(request.mode) if request.mode else None
        return self.selector.select(request.query, self.analyzer.analyze(request.query), forced)

    def begin(self, request: SearchRequest) -> Plan | None:
        """The plan (None when planning is off and the request forces no mode)."""
        p = self.config.planning
        if not p.enabled and request.mode is None:
            return None
        choice = self._choose(request)
        multipliers = self.multipliers[choice.mode]
        if all(v == 1.0 for v in multipliers.values()):
            multipliers = None
        return Plan(choice, request.k or 0, multipliers)

    # -- after reranking -------------------------------------------------------------------------

    def finish(self, plan: Plan | None, hits: list[Hit], snapshots: list[Snapshot]) -> list[Hit]:
        """MMR for a forced mmr_diverse (only a forced mode gets it)."""
        if plan is None or plan.mode is not SearchMode.MMR_DIVERSE or not plan.forced:
            return hits
        modes = self.config.planning.modes
        vectors = self.vectors.get([h.chunk_id for h in hits[: modes.mmr_top_n]], snapshots)
        plan.mmr = {"lambda": modes.mmr_lambda, "top_n": modes.mmr_top_n, "vectors": len(vectors)}
        return mmr_order(hits, vectors, modes.mmr_lambda, modes.mmr_top_n)
