"""The in-process query pipeline: the declared list of query stages (serving/query/registry.py) over the
collaborators `build_stages` makes, the same ones the Ray Serve graph wraps.

learned prefetch -> intent -> scope -> plan -> retrieve -> expand -> fuse -> rerank -> finish plan
-> graph route -> history -> localize -> knowledge -> context -> answer,
with per-stage timings, a `degraded` list for stages that failed but did not sink the answer,
and an LRU cache keyed by snapshot ids, query and parameters.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from semantica.api import QueryDeadlineExceeded, SearchRequest, SearchResponse
from semantica.config import Config
from semantica.hits import RankedList
from semantica.runtime import observability
from semantica.runtime.encoder import Encoder
from semantica.snapshot import Snapshot, SnapshotSet, answer_freshness
from semantica.stores.index_kinds.tokens import KIND as TOKENS_KIND
from semantica.stores.index_kinds.vectors import KIND as VECTORS_KIND
from serving.core.prefetch import Prefetcher
from serving.core.query_encoding import QueryEncoder
from serving.core.result_cache import ResultCache
from serving.core.validation import validate_request
from serving.knowledge.inject import KnowledgeInjector
from serving.localizer.stage import LearnedStage
from serving.query.base import QueryStage
from serving.query.state import QueryState, StageTimer
from serving.rerankers.base import Reranker
from serving.retrievers.registry import retriever_spec
from serving.stages import Stages, build_stages

__all__ = ["SearchPipeline", "StageTimer"]

PENDING = "pending: still building (a successor snapshot of the same commit adds it)"  # manifest.pending
FRESHNESS_THREADS = 4  # concurrent answers each check their sources beside their own stages


class SearchPipeline:
    """Answers `SearchRequest`s over the published snapshots under one index root. It only orchestrates:
    the stages come from `build_stages` (in process) or `serving.ray.remote.remote_stages` (the Serve graph)."""

    def __init__(self, config: Config, snapshots: SnapshotSet | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None, stages: Stages | None = None) -> None:
        self.stages = stages or build_stages(config, snapshots, encoder_factory)
        self.config = self.stages.config
        self.snapshots = self.stages.snapshots
        self._cache: ResultCache[SearchResponse] = ResultCache(config.query.query_cache_items)
        self._prefetcher = Prefetcher()
        # each answer's freshness (git status of its sources) is checked while its stages run, not after them
        self._freshness = ThreadPoolExecutor(max_workers=FRESHNESS_THREADS, thread_name_prefix="freshness")
        self.planner = self.stages.planner  # query planning: serving/planning/

    @property
    def query_stages(self) -> list[QueryStage]:
        """The stages `_search` runs, in their declared order."""
        return self.stages.query_stages

    @property
    def knowledge(self) -> KnowledgeInjector:  # serving/knowledge/
        return self.stages.knowledge

    # -- the stages (read through; built and owned by `self.stages`) ---------------------------

    @property
    def intent(self) -> Any:
        return self.stages.intent

    @property
    def learned_localizer(self) -> LearnedStage:
        return self.stages.learned_localizer

    @property
    def query_encoder(self) -> QueryEncoder:
        return self.stages.query_encoder

    @property
    def graph_ops(self) -> Any:
        return self.stages.graph_ops

    @property
    def rerankers(self) -> list[Reranker]:
        return self.stages.rerankers

    @property
    def ranking_hooks(self) -> Any:  # serving/planning/hooks.py
        return self.stages.ranking_hooks

    def retrievers(self, snapshot: Snapshot) -> Any:
        return self.stages.retrievers(snapshot)

    def prefetch(self, repos: list[str] | None = None, strategies: list[str] | None = None,
                 query: str | None = None) -> Prefetcher:
        """Start loading, in parallel, what the first query over `repos` (default: all) will need: only the
        retrievers of `strategies` (and those that seed them) when given, so a query that needs no lexical
        list does not start the JVM; the learned localizer's models only when `query` (when known) is one the
        localizer stage re-ranks, so an identifier lookup does not wait for a lightgbm import; the encoder only when a
        snapshot's chunk or token vectors are stored (over first `index.dense_later` snapshots nothing encodes)."""
        names = repos or self.snapshots.repos()
        specs = self.stages.retriever_specs
        if strategies:
            wanted = set(strategies) | {seed for spec in specs if spec.name in strategies for seed in spec.seeded_by}
            specs = [spec for spec in specs if spec.name in wanted]
        found: dict[str, Snapshot] = {}
        for name in names:
            try:
                found[name] = self.snapshots.get(name)
            except Exception:  # an unknown repository: the query itself reports it
                continue
        loads: dict[str, Callable[[], Any]] = {}
        if not found or not all(s.building(VECTORS_KIND) and s.building(TOKENS_KIND) for s in found.values()):
            loads["encoder"] = self.stages.encoder_factory  # none while every chunk and token vector is still building
        for name, snapshot in found.items():
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
        """The snapshots that can answer (`SnapshotSet.answering`: a broken one is listed in `degraded`), and for a
        first snapshot (`index.dense_later`) each index still building, so its answer is marked and never cached."""
        snapshots = self.snapshots.answering(list(request.repos), degraded)
        degraded.extend({"stage": kind, "error": PENDING} for s in snapshots for kind in s.manifest.pending)
        return snapshots

    # -- the work ------------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResponse:
        with observability.span("search", **{"semantica.k": request.k}):  # the stages' parent span
            return self._search_cached(request)

    def _search_cached(self, request: SearchRequest) -> SearchResponse:
        timer = StageTimer()
        warnings = timer.run("validate", lambda: self.validate(request))
        degraded: list[dict[str, str]] = []
        snapshots = self._repos(request, degraded)
        key = request.cache_key(tuple(s.snapshot_id for s in snapshots) + self.ranking_hooks.cache_tag(snapshots)
                                + self.knowledge.cache_tag(snapshots))
        cached = self._cache.get(key)
        if cached is not None:
            return SearchResponse(**{**cached.__dict__, "cached": True, "freshness": self.freshness(snapshots)})
        freshness = self._freshness.submit(self.freshness, snapshots)  # a subprocess: it overlaps the stages
        response, _ = self._search(request, snapshots, timer, warnings, degraded)
        if not response.degraded:
            self._cache.put(key, response, {s.repo: s.snapshot_id for s in snapshots})
        return SearchResponse(**{**response.__dict__, "freshness": freshness.result()})

    def freshness(self, snapshots: list[Snapshot]) -> dict[str, dict[str, Any]]:
        """Each answer says how fresh its snapshots are (checked while it is answered: a git status per repository,
        or a read of its watched tree's events when nothing changed since the last check)."""
        return answer_freshness(self.config, snapshots)

    def search_with_lists(self, request: SearchRequest) -> tuple[SearchResponse, dict[str, RankedList]]:
        """One uncached search that also returns each retriever's ranked chunk list: the offline jobs
        that learn or replay the later stages (`semantica mine`) need both from the same pass."""
        timer = StageTimer()
        warnings = timer.run("validate", lambda: self.validate(request))
        degraded: list[dict[str, str]] = []
        return self._search(request, self._repos(request, degraded), timer, warnings, degraded)

    def _search(self, request: SearchRequest, snapshots: list[Snapshot], timer: StageTimer,
                warnings: list[str], degraded: list[dict[str, str]]) -> tuple[SearchResponse, dict[str, RankedList]]:
        """Run the declared stages over one query state; the answer stage writes the response."""
        state = QueryState(request, snapshots, timer, warnings, degraded)
        limit = self.config.query.deadline_s
        deadline = time.monotonic() + limit
        for stage in self.query_stages:
            if time.monotonic() > deadline:
                raise QueryDeadlineExceeded(f"the query ran past query.deadline_s ({limit} s) before its "
                                            f"{stage.name!r} stage; narrow it (fewer repositories, a smaller k) "
                                            "or retry")
            state = stage.run(state)
        if state.response is None:
            raise RuntimeError(f"no query stage wrote a response: {[s.name for s in self.query_stages]}")
        return state.response, state.lists
