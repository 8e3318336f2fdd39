"""The query planner: the mode before retrieval; MMR and budgets after reranking.

The query stages call it in three places: request validation (`validate`: mode, primary repository),
the plan stage before retrieval (`begin`: the plan and the mode's fusion multipliers) and the
finish stage after reranking (`finish`: MMR for mmr_diverse, budgets across repositories). Everything it
decides goes into `Plan`, which the response carries as `SearchResponse.plan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from semantica.api import QueryError, SearchRequest
from semantica.config import Config
from semantica.hits import Hit
from semantica.ondisk.repo_names import normalize_repo_name
from semantica.schema import Chunk
from semantica.snapshot import Snapshot
from serving.planning.analyzer import FORCED, ModeChoice, QueryAnalyzer, StrategySelector
from serving.planning.budgets import BudgetPlan, RepoBudgets
from serving.planning.mmr import StoredVectors, mmr_order
from serving.planning.modes import SearchMode, mode_multipliers


@dataclass
class Plan:
    """What the planner decided for one request (`SearchResponse.plan`)."""

    choice: ModeChoice
    k: int
    multipliers: dict[str, float] | None
    budgets: BudgetPlan | None = None
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
            "budgets": ({"primary": self.budgets.primary, "why": self.budgets.why, "shares": self.budgets.budgets}
                        if self.budgets else None),
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
        self.budgets = RepoBudgets(p.budgets)
        self.vectors = StoredVectors()

    # -- before retrieval ------------------------------------------------------------------------

    def validate(self, request: SearchRequest) -> None:
        """Check `mode` and `primary_repo` (QueryError listing the valid values)."""
        if request.mode is not None:
            try:
                request.mode = SearchMode.parse(request.mode).value
            except ValueError as exc:
                raise QueryError(str(exc)) from None
        if request.primary_repo is not None:
            request.primary_repo = normalize_repo_name(request.primary_repo)
            if request.repos and request.primary_repo not in request.repos:
                raise QueryError(f"primary_repo {request.primary_repo!r} is not among the repos asked for: "
                                 f"{request.repos}")

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

    def finish(self, plan: Plan | None, request: SearchRequest, hits: list[Hit], snapshots: list[Snapshot],
               chunks: Mapping[str, Chunk]) -> list[Hit]:
        """MMR (mmr_diverse), then budgets across repositories."""
        if plan is None:
            return hits
        p = self.config.planning
        if plan.mode is SearchMode.MMR_DIVERSE and plan.forced:  # only a forced mode gets MMR
            vectors = self.vectors.get([h.chunk_id for h in hits[: p.modes.mmr_top_n]], snapshots)
            hits = mmr_order(hits, vectors, p.modes.mmr_lambda, p.modes.mmr_top_n)
            plan.mmr = {"lambda": p.modes.mmr_lambda, "top_n": p.modes.mmr_top_n, "vectors": len(vectors)}
        repos = list(dict.fromkeys(s.repo for s in snapshots))
        if p.enabled and p.budgets.enabled and len(repos) > 1:
            tops: dict[str, float] = {}
            for h in hits:
                repo = chunks[h.chunk_id].repo
                tops[repo] = max(tops.get(repo, 0.0), h.score)
            plan.budgets = self.budgets.allocate(plan.k, repos, request.primary_repo, request.repos, tops)
            hits = self.budgets.merge(hits, plan.budgets, chunks, plan.k)
        return hits
