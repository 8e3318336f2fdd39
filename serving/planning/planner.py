"""The query planner: mode and dynamic K before retrieval; retry, MMR and budgets after reranking.

`SearchPipeline` calls it in three marked places (serving/pipeline.py): `validate` (mode, primary
repository, dynamic K), `begin` (the plan and the mode's fusion multipliers) and `finish` (graduated
retry, MMR for mmr_diverse, budgets across repositories). Everything it decides goes into `Plan`,
which the response carries as `SearchResponse.plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semantica.api import QueryError, SearchRequest
from semantica.config import Config
from semantica.hits import Hit, RankedList
from semantica.repo_names import normalize_repo_name
from semantica.schema import Chunk
from semantica.snapshot import Snapshot
from serving.planning.analyzer import FORCED, ModeChoice, QueryAnalyzer, QueryFeatures, StrategySelector
from serving.planning.budgets import BudgetPlan, RepoBudgets
from serving.planning.mmr import StoredVectors, mmr_order
from serving.planning.modes import RetryLevel, SearchMode, mode_multipliers
from serving.planning.passes import PipelinePass
from serving.planning.retry import QueryRewriter, ResultEvaluator, Verdict, import_neighbours, merge_ranked


@dataclass
class Plan:
    """What the planner decided for one request (`SearchResponse.plan`)."""

    choice: ModeChoice
    k: int
    k_source: str
    multipliers: dict[str, float] | None
    localize_multipliers: dict[str, float] | None
    budgets: BudgetPlan | None = None
    verdict: Verdict | None = None
    retries: list[dict[str, Any]] = field(default_factory=list)
    partial: bool = False
    partial_why: list[str] = field(default_factory=list)
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
            "k": self.k, "k_source": self.k_source,
            "weights": dict(self.multipliers) if self.multipliers else None,
            "budgets": ({"primary": self.budgets.primary, "why": self.budgets.why, "shares": self.budgets.budgets}
                        if self.budgets else None),
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "retries": self.retries, "partial": self.partial, "partial_why": self.partial_why,
            "mmr": self.mmr, "sub_queries": self.sub_queries,
        }


class QueryPlanner:
    """Plans one request at a time; thread-safe (no per-request state on the object)."""

    def __init__(self, config: Config) -> None:
        p = config.planning
        if not 1 <= p.k_min <= p.k_max:
            raise ValueError(f"planning: need 1 <= k_min <= k_max, got k_min={p.k_min}, k_max={p.k_max}")
        self.config = config
        self.max_level = RetryLevel.parse(p.max_retry_level)
        self.analyzer = QueryAnalyzer(p)
        self.selector = StrategySelector(p)
        self.multipliers = mode_multipliers(p.modes.multipliers)
        self.budgets = RepoBudgets(p.budgets)
        self.evaluator = ResultEvaluator(p.retry)
        self.rewriter = QueryRewriter(p.retry, p.analyzer.stop_words)
        self.vectors = StoredVectors()

    # -- before retrieval ------------------------------------------------------------------------

    def validate(self, request: SearchRequest) -> None:
        """Check `mode` and `primary_repo` (QueryError listing the valid values); give a request without k
        its dynamic K when planning is on."""
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
        if request.k is None and self.config.planning.enabled and self.config.planning.dynamic_k:
            request.k = self._choose(request).k

    def _choose(self, request: SearchRequest) -> ModeChoice:
        forced = SearchMode.parse(request.mode) if request.mode else None
        return self.selector.select(request.query, self.analyzer.analyze(request.query), forced)

    def begin(self, request: SearchRequest) -> Plan | None:
        """The plan (None when planning is off and the request forces no mode)."""
        p = self.config.planning
        if not p.enabled and request.mode is None:
            return None
        choice = self._choose(request)
        dynamic = p.enabled and p.dynamic_k and request.k == choice.k
        multipliers = self.multipliers[choice.mode]
        if all(v == 1.0 for v in multipliers.values()):
            multipliers = None
        return Plan(choice, request.k or 0, "dynamic" if dynamic else "request", multipliers,
                    multipliers if p.modes.apply_to_localize else None)

    # -- after reranking -------------------------------------------------------------------------

    def finish(self, plan: Plan | None, run: PipelinePass, hits: list[Hit], snapshots: list[Snapshot]) -> list[Hit]:
        """Retry while weak (up to planning.max_retry_level), then MMR (mmr_diverse) and budgets."""
        if plan is None:
            return hits
        p = self.config.planning
        if p.enabled and p.retry.enabled:
            hits = self._retry(plan, run, hits, snapshots)
        if plan.mode is SearchMode.MMR_DIVERSE and (p.modes.mmr_enabled or plan.forced):  # a forced mode gets MMR
            vectors = self.vectors.get([h.chunk_id for h in hits[: p.modes.mmr_top_n]], snapshots)
            hits = mmr_order(hits, vectors, p.modes.mmr_lambda, p.modes.mmr_top_n)
            plan.mmr = {"lambda": p.modes.mmr_lambda, "top_n": p.modes.mmr_top_n, "vectors": len(vectors)}
        repos = list(dict.fromkeys(s.repo for s in snapshots))
        if p.enabled and p.budgets.enabled and len(repos) > 1:
            tops: dict[str, float] = {}
            for h in hits:
                repo = run.chunks[h.chunk_id].repo
                tops[repo] = max(tops.get(repo, 0.0), h.score)
            plan.budgets = self.budgets.allocate(plan.k, repos, run.request.primary_repo, run.request.repos, tops)
            hits = self.budgets.merge(hits, plan.budgets, run.chunks, plan.k)
        return hits

    def _retry(self, plan: Plan, run: PipelinePass, hits: list[Hit], snapshots: list[Snapshot]) -> list[Hit]:
        c = self.config
        r = c.planning.retry
        features: QueryFeatures = plan.choice.features
        verdict = plan.verdict = self.evaluator.judge(hits[: plan.k], run.chunks, features)
        best, best_verdict = hits, verdict
        relaxed_k = max(1, round(c.retrieval.k_per_retriever * r.relax_k_factor))
        depth = max(plan.k, round(run.cutoff * r.relax_k_factor))
        queries = [run.request.query]
        lists: dict[str, RankedList] = {}
        for level in RetryLevel:
            if level is RetryLevel.NONE:
                continue
            if not best_verdict.weak or level > self.max_level:
                break
            step: dict[str, Any] = {"level": int(level), "name": level.name.lower()}
            if level is RetryLevel.PARTIAL:
                plan.partial, plan.partial_why = True, list(best_verdict.reasons)
                step["verdict"] = best_verdict.to_dict()
                plan.retries.append(step)
                break
            if level is RetryLevel.RELAX:
                step.update(k_per_retriever=relaxed_k, fusion_depth=depth)
                lists = run.retrieve(run.request.query, snapshots, relaxed_k)
            elif level is RetryLevel.MULTI_QUERY:
                rewrites = self.rewriter.rewrites(run.request.query, features)
                step["queries"] = rewrites
                queries = queries + rewrites
                lists = merge_ranked([lists, *(run.retrieve(q, snapshots, relaxed_k) for q in rewrites)],
                                     r.merge_rrf_k) if rewrites else lists
            elif level is RetryLevel.ADJACENT_SCOPE:
                lists, scope = self._adjacent(run, best, snapshots, queries, relaxed_k, lists)
                step["scope"] = scope
            candidate = run.rank(lists, depth, plan.multipliers)
            verdict = self.evaluator.judge(candidate[: plan.k], run.chunks, features)
            step["verdict"] = verdict.to_dict()
            if len(verdict.reasons) < len(best_verdict.reasons):
                best, best_verdict = candidate, verdict
                step["kept"] = True
            else:
                step["kept"] = False
            plan.retries.append(step)
        plan.verdict = best_verdict
        return best

    def _adjacent(self, run: PipelinePass, hits: list[Hit], snapshots: list[Snapshot], queries: list[str],
                  k: int, lists: dict[str, RankedList]) -> tuple[dict[str, RankedList], dict[str, Any]]:
        r = self.config.planning.retry
        searched = {s.repo for s in snapshots}
        scope: dict[str, Any] = {"repos": [], "seeds": [], "paths": []}
        passes = [lists]
        if r.adjacent_repos:
            others = [s for s in run.other_snapshots() if s.repo not in searched]
            if others:
                scope["repos"] = [s.repo for s in others]
                snapshots.extend(others)  # the answer may now cite them
                passes.extend(run.retrieve(q, others, k) for q in queries)
        if r.adjacent_imports:
            seeds: dict[str, list[str]] = {}
            for h in hits[: r.adjacent_seed_hits]:
                chunk: Chunk = run.chunks[h.chunk_id]
                if chunk.path not in seeds.setdefault(chunk.repo, []):
                    seeds[chunk.repo].append(chunk.path)
                    scope["seeds"].append(f"{chunk.repo}:{chunk.path}")
            for snapshot in snapshots:
                paths = import_neighbours(snapshot, seeds.get(snapshot.repo, []))
                if paths:
                    scope["paths"].extend(f"{snapshot.repo}:{p}" for p in paths)
                    passes.extend(run.retrieve(q, [snapshot], k, paths) for q in queries)
        return merge_ranked(passes, r.merge_rrf_k), scope
