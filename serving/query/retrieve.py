"""The stages before fusion: the query's encoder passes, intent, the request's scope, the plan,
retrieval and decomposition. `Retrieval` is the public way to run the retrievers."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from semantica.config import Config
from semantica.hits import RankedList
from semantica.snapshot import Snapshot
from serving.core.answer import degraded_entry, interleave
from serving.core.intent import IntentResult
from serving.query.state import QueryState, StageTimer
from serving.retrievers.base import Filters, RetrievalQuery, ScoredList, merge_scored, to_ranked
from serving.retrievers.registry import RetrieverSpec

if TYPE_CHECKING:
    from serving.stages import RetrieverSource, Stages

VECTOR = "vector"
"""The retriever that reads the chunk encoder's query vector."""
SYMBOL_SEEDS = "symbol"
"""The retriever whose own hits are a seeded retriever's `symbol_seeds` (the targets of "who calls X")."""


class Retrieval:
    """Every enabled retriever over every snapshot, on pools sized by `retrieval.repo_parallelism`."""

    def __init__(self, config: Config, retrievers: RetrieverSource, width: int) -> None:
        self.config = config
        self.retrievers = retrievers
        parallel = max(1, config.retrieval.repo_parallelism)
        self._pool = ThreadPoolExecutor(max_workers=max(1, width) * parallel, thread_name_prefix="retrieve")
        self._repo_pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="repo")

    def retrieve(self, query: str, intent: IntentResult, snapshots: list[Snapshot], enabled: list[RetrieverSpec],
                 filters: Filters, timer: StageTimer, degraded: list[dict[str, str]],
                 k: int | None = None) -> dict[str, RankedList]:
        """Each retriever's ranked list. Unseeded retrievers start at once; a seeded one (the graph walk) starts
        when its seed sources have answered, from their hits interleaved. A failing index degrades the answer."""
        k = k or self.config.retrieval.k_per_retriever
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


class QueryEncodingStage:
    """Begins the chunk encoder's pass over the query when the search begins, where the request runs the local vector
    retriever over a snapshot with chunk vectors: it runs beside intent and the other retrievers, and the vector
    retriever and late interaction collect it."""

    name = "encode_query"

    def __init__(self, stages: Stages) -> None:
        self.query_encoder = stages.query_encoder
        self.local_vectors = stages.retrieves_locally and any(spec.name == VECTOR for spec in stages.retriever_specs)

    def run(self, state: QueryState) -> QueryState:
        request = state.request
        if self.local_vectors and request.query.strip() and (not request.strategies or VECTOR in request.strategies) \
                and any(_has_vectors(snapshot) for snapshot in state.snapshots):
            self.query_encoder.start(request.query)
        return state


class LocalizerQueryStage:
    """Begins the learned localizer's dense-channel pass over the query once retrieval has its lists (where the stage
    will re-rank): it runs beside fusion and reranking, and not beside the chunk encoder's pass, whose answer
    retrieval waits for."""

    name = "encode_localizer_query"

    def __init__(self, stages: Stages) -> None:
        self.learned = stages.learned_localizer

    def run(self, state: QueryState) -> QueryState:
        self.learned.prefetch_query(state.request.query, state.snapshots)
        return state


def _has_vectors(snapshot: Snapshot) -> bool:
    """Whether the snapshot holds chunk vectors to search; one whose shards fail to open has none here (its vector
    retriever reports that in the answer's `degraded`)."""
    try:
        return bool(snapshot.vector_shards)
    except Exception:
        return False


class IntentStage:
    name = "intent"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        state.intent = state.timer.run("intent", lambda: self.stages.intent.classify(state.request.query))
        return state


class ScopeStage:
    """The retrievers the request runs, its filters, and the answering snapshots' chunks by id."""

    name = "scope"

    def __init__(self, stages: Stages) -> None:
        self.specs = stages.retriever_specs

    def run(self, state: QueryState) -> QueryState:
        request = state.request
        state.enabled = [spec for spec in self.specs if not request.strategies or spec.name in request.strategies]
        state.filters = Filters(path_globs=list(request.path_globs), languages=list(request.languages))
        for snapshot in state.snapshots:
            state.chunks.update(snapshot.chunk_by_id)
        return state


class PlanStage:
    """The planner's mode and K (serving/planning/); None when planning is off and the request forces no mode."""

    name = "plan"

    def __init__(self, stages: Stages) -> None:
        self.planner = stages.planner

    def run(self, state: QueryState) -> QueryState:
        state.plan = state.timer.run("planning", lambda: self.planner.begin(state.request))
        return state


class RetrieveStage:
    name = "retrieve"

    def __init__(self, stages: Stages) -> None:
        self.retrieval = stages.retrieval

    def run(self, state: QueryState) -> QueryState:
        state.lists = self.retrieval.retrieve(state.request.query, state.intent, state.snapshots, state.enabled,
                                              state.filters, state.timer, state.degraded)
        return state


class ExpandStage:
    """Decomposition of a query holding stack frames (serving/planning/expand.py), when planning is on: the
    frames' chunks, looked up in the snapshot, merge into the retrievers' lists."""

    name = "expand"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        if not self.stages.config.planning.enabled:
            return state
        state.lists, state.expanded = state.timer.run("planning", lambda: self.stages.expansion.expand(
            state.request.query, state.snapshots, state.filters, state.lists))
        return state
