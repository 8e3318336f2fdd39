"""The in-process query pipeline: the same stage classes the Ray Serve graph wraps, in one process.

validate -> intent -> retrievers (vector alongside symbol -> lexical -> graph seeded by them)
-> weighted RRF + consensus -> learning-to-rank (when a model is configured) -> late interaction -> cross-encoder (conditional) -> context,
with per-stage timings, a `degraded` list for stages that failed but did not sink the answer,
and an LRU cache keyed by snapshot ids, query and parameters.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from semantica import observability
from semantica.api import SearchRequest, SearchResponse
from semantica.config import Config
from semantica.encoder import Encoder
from semantica.hits import ChunkMeta, Hit, RankedList
from semantica.schema import Chunk
from semantica.snapshot import Snapshot, SnapshotSet
from serving.core.answer import context_dict, degraded_entry, explain_history, file_lines, hit_view, interleave
from serving.core.context import localizer_first_hits
from serving.core.intent import IntentResult
from serving.core.localization import LocalizationInputs
from serving.core.localize import Localizer
from serving.core.localizer.stage import LearnedStage, reads_history
from serving.core.prefetch import Prefetcher
from serving.core.query_encoding import QueryEncoder
from serving.core.result_cache import ResultCache
from serving.core.validation import validate_request
from serving.knowledge.inject import KnowledgeInjector
from serving.planning.passes import PipelinePass  # query planning
from serving.rerankers.base import Reranker, RerankInput
from serving.retrievers.base import Filters, RetrievalQuery, ScoredList, merge_scored, to_ranked
from serving.retrievers.granular import granular_lists
from serving.retrievers.history import merge_history_lists
from serving.retrievers.registry import RetrieverSpec, retriever_spec
from serving.stages import Stages, build_stages

SYMBOL_SEEDS = "symbol"
"""The retriever whose own hits are a seeded retriever's `symbol_seeds` (the targets of "who calls X")."""
PENDING = "pending: still building (a successor snapshot of the same commit adds it)"  # manifest.pending
log = logging.getLogger(__name__)


class StageTimer:
    """Wall-clock milliseconds per stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._lock = threading.Lock()  # repositories run their stages in parallel
        self._trace = observability.current_context()  # stages run in worker threads nest under the request
        self._request_id = observability.request_id_var.get()  # and log (and call replicas) under its id

    def run(self, stage: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            # one span per stage, named as in --explain; a worker thread takes the request's id along
            with observability.request_scope(self._request_id), observability.span(stage, self._trace):
                return fn()
        finally:
            with self._lock:
                self.ms[stage] = round(self.ms.get(stage, 0.0) + (time.perf_counter() - start) * 1000, 3)


class SearchPipeline:
    """Answers `SearchRequest`s over the published snapshots under one index root. It only orchestrates:
    the stages come from `build_stages` (in process) or `serving.ray.remote.remote_stages` (the Serve graph)."""

    def __init__(self, config: Config, snapshots: SnapshotSet | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None, stages: Stages | None = None) -> None:
        self.stages = stages or build_stages(config, snapshots, encoder_factory)
        self.config = self.stages.config
        self.snapshots = self.stages.snapshots
        self._cache: ResultCache[SearchResponse] = ResultCache(config.query.query_cache_items)
        width = max(1, len(self.stages.retriever_specs))
        self._pool = ThreadPoolExecutor(max_workers=width * max(1, config.retrieval.repo_parallelism),
                                        thread_name_prefix="retrieve")
        self._repo_pool = ThreadPoolExecutor(max_workers=max(1, config.retrieval.repo_parallelism),
                                             thread_name_prefix="repo")
        self._prefetcher = Prefetcher()
        self.planner = self.stages.planner  # query planning: serving/planning/
        self.knowledge = KnowledgeInjector(self.config, snapshots=self.snapshots)  # serving/knowledge/

    # -- the stages (read through; built and owned by `self.stages`) ---------------------------

    @property
    def intent(self) -> Any:
        return self.stages.intent

    @property
    def fusion(self) -> Any:
        return self.stages.fusion

    @property
    def localizer(self) -> Localizer:
        return self.stages.localizer

    @property
    def learned_localizer(self) -> LearnedStage:
        return self.stages.learned_localizer

    @property
    def context_builder(self) -> Any:
        return self.stages.context_builder

    @property
    def query_encoder(self) -> QueryEncoder:
        return self.stages.query_encoder
    @property
    def expansion(self) -> Any:  # decomposition + multi-hop (serving/planning/)
        return self.stages.expansion


    @property
    def graph_ops(self) -> Any:
        return self.stages.graph_ops

    @property
    def graph_router(self) -> Any:
        return self.stages.graph_router

    @property
    def rerankers(self) -> list[Reranker]:
        return self.stages.rerankers

    def retrievers(self, snapshot: Snapshot) -> Any:
        return self.stages.retrievers(snapshot)

    def prefetch(self, repos: list[str] | None = None, strategies: list[str] | None = None,
                 query: str | None = None) -> Prefetcher:
        """Start loading, in parallel, what the first query over `repos` (default: all) will need: only the
        retrievers of `strategies` (and those that seed them) when given, so a query that needs no lexical
        list does not start the JVM; the learned localizer's models only when `query` (when known) is one the
        localizer stage re-ranks, so an identifier lookup does not wait for a lightgbm import."""
        names = repos or self.snapshots.repos()
        specs = self.stages.retriever_specs
        if strategies:
            wanted = set(strategies) | {seed for spec in specs if spec.name in strategies for seed in spec.seeded_by}
            specs = [spec for spec in specs if spec.name in wanted]
        loads: dict[str, Callable[[], Any]] = {"encoder": self.stages.encoder_factory}
        for name in names:
            try:
                snapshot = self.snapshots.get(name)
            except Exception:  # an unknown repository: the query itself reports it
                continue
            retrievers = self.retrievers(snapshot)
            for spec in specs:
                loads[f"{name}:{spec.name}"] = lambda r=retrievers, n=spec.name: r.get(n)
            loads[f"{name}:tables"] = lambda s=snapshot: (s.chunk_row, s.token_vectors)
            if self.config.localizer.enabled and (query is None or self.learned_localizer.applies(query, len(names))):
                loads[f"{name}:localizer"] = lambda s=snapshot: self.learned_localizer.preload(s)
        return self._prefetcher.start(loads)

    # -- validation ----------------------------------------------------------------------------

    def validate(self, request: SearchRequest) -> list[str]:
        """Raise QueryError for a request that cannot be answered; return warnings for fixed ones."""
        return validate_request(request, self.config, self.planner, retriever_spec,
                                lambda: [s.name for s in self.stages.retriever_specs])

    def _repos(self, request: SearchRequest, degraded: list[dict[str, str]]) -> list[Snapshot]:
        """The snapshots that can answer (`SnapshotSet.answering`: a broken one is listed in `degraded`)."""
        return self.snapshots.answering(list(request.repos), degraded)

    # -- the work ------------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResponse:
        with observability.span("search", **{"semantica.k": request.k}):  # the stages' parent span
            return self._search_cached(request)

    def _search_cached(self, request: SearchRequest) -> SearchResponse:
        timer = StageTimer()
        warnings = timer.run("validate", lambda: self.validate(request))
        degraded: list[dict[str, str]] = []
        snapshots = self._repos(request, degraded)
        key = request.cache_key(tuple(s.snapshot_id for s in snapshots) + self.ranking_hooks.cache_tag(snapshots)  # 15
                                + self.knowledge.cache_tag(snapshots))
        cached = self._cache.get(key)
        if cached is not None:
            return SearchResponse(**{**cached.__dict__, "cached": True, "freshness": self.freshness(snapshots)})
        asked = len(snapshots)  # retry's adjacent scope may add repositories the key does not name: not cached
        response, _ = self._search(request, snapshots, timer, warnings, degraded)
        if not response.degraded and len(snapshots) == asked:
            self._cache.put(key, response, {s.repo: s.snapshot_id for s in snapshots})
        return SearchResponse(**{**response.__dict__, "freshness": self.freshness(snapshots)})

    def freshness(self, snapshots: list[Snapshot]) -> dict[str, dict[str, Any]]:
        """Each answer says how fresh its snapshots are (checked now, never cached: a few ms per repository)."""
        if not self.config.freshness.enabled:
            return {}
        return {s.repo: s.freshness().to_dict() for s in snapshots}

    def search_with_lists(self, request: SearchRequest) -> tuple[SearchResponse, dict[str, RankedList]]:
        """One uncached search that also returns each retriever's ranked chunk list: the offline jobs
        that learn or replay the later stages (`semantica mine`) need both from the same pass."""
        timer = StageTimer()
        warnings = timer.run("validate", lambda: self.validate(request))
        degraded: list[dict[str, str]] = []
        return self._search(request, self._repos(request, degraded), timer, warnings, degraded)

    def _search(self, request: SearchRequest, snapshots: list[Snapshot], timer: StageTimer,
                warnings: list[str], degraded: list[dict[str, str]]) -> tuple[SearchResponse, dict[str, RankedList]]:
        self.learned_localizer.prefetch_query(request.query, len(snapshots))  # dense channel: overlaps retrieval
        for snapshot in snapshots:  # a first snapshot (index.dense_later): its model-built indexes are still building
            degraded.extend({"stage": kind, "error": PENDING} for kind in snapshot.manifest.pending)
        intent = timer.run("intent", lambda: self.intent.classify(request.query))
        enabled = [spec for spec in self.stages.retriever_specs if not request.strategies or spec.name in request.strategies]
        filters = Filters(path_globs=list(request.path_globs), languages=list(request.languages))
        plan = timer.run("planning", lambda: self.planner.begin(request))  # planning: mode, K (None when off)
        multipliers = plan.multipliers if plan else None  # planning: the mode's fusion weights
        lists = self._retrieve(request.query, intent, snapshots, enabled, filters, timer, degraded)
        expanded = None
        if self.config.planning.enabled:  # decomposition + multi-hop (each with its own switch too)
            lists, expanded = timer.run("planning", lambda: self.expansion.expand(
                request.query, intent, snapshots, {spec.name for spec in enabled}, filters, lists,
                lambda text, sub_intent, strategies: self._retrieve(
                    text, sub_intent, snapshots, [spec for spec in enabled if spec.name in strategies], filters,
                    StageTimer(), degraded)))
        chunks: dict[str, Chunk] = {}
        for snapshot in snapshots:
            chunks.update(snapshot.chunk_by_id)
        depth = max(request.k, self.config.query.file_rank_depth)
        meta = {cid: ChunkMeta.from_chunk(chunks[cid]) for ranked in lists.values() for cid, _ in ranked if cid in chunks}
        fusion = self.ranking_hooks.fusion(snapshots, self.fusion)  # feedback-learned weights (A/B-gated)
        fused = timer.run("fusion", lambda: fusion.fuse(lists, intent, meta, request.k,  # max(k, intent cutoff)
                                                        multipliers=multipliers))
        hits = self._rerank(request, intent, [h for h in fused if h.chunk_id in chunks], chunks, timer, degraded)
        hits = timer.run("planning", lambda: self.planner.finish(plan, PipelinePass(  # planning: retry, MMR, budgets
            self, request, intent, enabled, filters, chunks, timer, degraded), hits, snapshots))
        routed = timer.run("graph_ops", lambda: self.graph_router.answer(request.query, snapshots, warnings)) \
            if self.config.graph_ops.route_queries else None
        if routed is not None:  # the exact answer first; no reranker touches its order
            hits = routed.merge(hits, chunks)
        if "late_interaction" in timer.ms:
            warnings.extend(f"{s.repo}: snapshot {s.snapshot_id} stores no token vectors; late interaction encoded its "
                            f"candidates per query (slow): re-index it" for s in snapshots if not s.manifest.token_vectors)
        granular = None
        if self.config.granular.enabled:
            try:
                granular = timer.run("granular", lambda: granular_lists(
                    request.query, [self.retrievers(s).granular for s in snapshots], self.config.granular, filters))
            except Exception as exc:  # optional lists: localization falls back to the chunk lists
                degraded.append(degraded_entry("granular", exc))
        history, voters = None, {}
        learned_reads_history = (reads_history(self.config.localizer)
                                 and self.learned_localizer.applies(request.query, len(snapshots)))
        if self.config.history.enabled or request.explain or learned_reads_history:
            try:
                history, voters = timer.run("history", lambda: self._history(request.query, snapshots, filters))
            except Exception as exc:  # optional lists: localization falls back to the others
                degraded.append(degraded_entry("history", exc))
        files, functions = self.stages.localization.run(
            LocalizationInputs(lists, chunks, intent, depth, granular, plan.localize_multipliers if plan else None,
                               history, voters),
            lambda ranked: self.ranking_hooks.files(ranked, snapshots),  # trust and freshness in the file order
            lambda ranked, ranked_functions: self.learned_localizer.apply(request.query, snapshots, ranked,
                                                                           ranked_functions),
            timed=timer.run, on_learned_error=lambda exc: degraded.append(degraded_entry("localizer", exc)))
        used = self._knowledge(request.query, snapshots, timer, degraded)
        hits = self.knowledge.boost(hits, used, chunks, request.k)
        budget = self.config.context.token_budget if request.context_budget is None else request.context_budget
        injected = self.knowledge.render(used, budget)
        top = hits[: request.k]
        packed = top
        if self.config.context.localizer_first and self.config.localizer.enabled:
            packed = localizer_first_hits(top, functions, chunks, self.config.context.localizer_functions)
        context = timer.run("context", lambda: self.context_builder.build(
            self.knowledge.dedupe(packed, injected.entries, chunks), chunks, file_lines(snapshots),
            budget - injected.tokens))
        response = SearchResponse(
            query=request.query,
            intent={"dominant": intent.dominant.value,
                    "probabilities": {i.value: round(p, 4) for i, p in intent.probabilities.items()},
                    "expansions": asdict(intent.expansions)},
            hits=[hit_view(rank, hit, chunks[hit.chunk_id], request.explain) for rank, hit in enumerate(top, 1)],
            files=files, functions=functions, context=context_dict(context, injected), degraded=degraded,
            warnings=warnings, timings_ms=timer.ms, snapshots={s.repo: s.snapshot_id for s in snapshots},
            graph=routed.result.to_dict() if routed is not None else None,
            plan=plan.to_dict() if plan else None,  # planning
        )
        if request.explain and voters:
            for view in response.hits:
                explain_history(view, voters)
        if expanded:  # what decomposition / multi-hop did
            response.plan = {**(response.plan or {}), **expanded}
        if routed is not None:
            for view in response.hits:
                view.graph = routed.by_chunk.get(view.chunk_id)
        self.knowledge.mark_used(injected)
        return response, lists

    def _knowledge(self, query: str, snapshots: list[Snapshot], timer: StageTimer,
                   degraded: list[dict[str, str]]) -> list[Any]:
        """Trusted relevant entries (serving/knowledge/); an unreadable store degrades the answer, never fails it."""
        if not self.knowledge.enabled:
            return []
        try:
            return timer.run("knowledge", lambda: self.knowledge.lookup(query, [s.repo for s in snapshots]))
        except Exception as exc:
            degraded.append(degraded_entry("knowledge", exc))
            return []

    def _retrieve(self, query: str, intent: IntentResult, snapshots: list[Snapshot], enabled: list[RetrieverSpec],
                  filters: Filters, timer: StageTimer, degraded: list[dict[str, str]],
                  k: int | None = None) -> dict[str, RankedList]:
        """Every enabled retriever over every snapshot. Unseeded retrievers start at once; a seeded one
        (the graph walk) starts when its seed sources have answered, from their hits interleaved."""
        k = k or self.config.retrieval.k_per_retriever  # planning: a retry asks for more
        scored: dict[str, list[ScoredList]] = {spec.name: [] for spec in enabled}

        def attempt(name: str, fn: Callable[[], ScoredList]) -> ScoredList:
            try:
                return timer.run(name, fn)
            except Exception as exc:  # a failing index degrades the answer, it does not fail it
                degraded.append(degraded_entry(name, exc))
                return []

        def one_repo(snapshot: Snapshot) -> dict[str, ScoredList]:
            retrievers = self.retrievers(snapshot)
            futures: dict[str, Future[ScoredList]] = {}
            for spec in enabled:  # seed sources come before what they seed (enabled_specs orders them)
                seed_lists = {name: [c for c, _ in futures[name].result()] for name in spec.seeded_by if name in futures}
                rq = RetrievalQuery(text=query, intent=intent, seeds=interleave(*seed_lists.values()),
                                    symbol_seeds=seed_lists.get(SYMBOL_SEEDS, []))
                futures[spec.name] = self._pool.submit(
                    attempt, spec.name, lambda n=spec.name, q=rq: retrievers.get(n).search_scored(q, k, filters))
            return {name: future.result() for name, future in futures.items()}

        # repositories fan out in parallel (their own pool: a repo task waits on the retriever pool)
        per_repo = (list(self._repo_pool.map(one_repo, snapshots)) if len(snapshots) > 1
                    else [one_repo(s) for s in snapshots])
        for lists in per_repo:
            for name, hits in lists.items():
                scored[name].append(hits)
        return {name: to_ranked(merge_scored(lists, k)) for name, lists in scored.items()}

    @property
    def ranking_hooks(self) -> Any:  # serving/planning/hooks.py
        return self.stages.ranking_hooks

    def _rerank(self, request: SearchRequest, intent: IntentResult, hits: list[Hit], chunks: dict[str, Chunk],
                timer: StageTimer, degraded: list[dict[str, str]]) -> list[Hit]:
        """The registered rerankers in `rerank.order`; an optional one that fails keeps the previous order."""
        given = RerankInput(request, intent, chunks)
        for stage in self.rerankers:
            if not hits or not stage.wanted(given):
                continue
            try:
                hits = timer.run(stage.name, lambda: stage.rerank(hits, given))
            except Exception as exc:
                if not stage.optional:
                    raise
                degraded.append(degraded_entry(stage.name, exc))
        return hits

    def _history(self, query: str, snapshots: list[Snapshot], filters: Filters) -> tuple[Any, dict[str, list[Any]]]:
        """The history retriever's vote and prior lists over the snapshots that store history, and which past
        commits voted for each file and function (serving/retrievers/history.py)."""
        parts, voters = [], {}
        for snapshot in snapshots:
            try:
                retriever = self.retrievers(snapshot).get("history")
            except KeyError:  # a stage set without a history retriever (the Ray graph deploys the enabled ones only)
                return None, {}
            if getattr(retriever, "available", False):
                parts.append(retriever.lists(query, self.retrievers(snapshot).granular.allows(filters)))
                voters.update(retriever.voters(query))
        return (merge_history_lists(parts) if parts else None), voters
