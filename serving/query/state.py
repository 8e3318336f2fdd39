"""What one query carries from stage to stage: `QueryState`, and the per-stage clock `StageTimer`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from semantica.api import SearchRequest, SearchResponse
from semantica.hits import Hit, RankedList
from semantica.runtime import observability
from semantica.schema import Chunk
from semantica.snapshot import Snapshot
from serving.core.context import Context
from serving.core.intent import IntentResult
from serving.graph.route import RoutedAnswer
from serving.knowledge.inject import InjectedKnowledge, UsedEntry
from serving.planning.planner import Plan
from serving.retrievers.base import Filters
from serving.retrievers.registry import RetrieverSpec


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


@dataclass
class QueryState:
    """One request on its way through the stages. A stage fills the fields it owns and returns the state;
    the first five come from the pipeline (the validated request, the answering snapshots, the clock, the
    warnings and the `degraded` list every stage that fails softly appends to)."""

    request: SearchRequest
    snapshots: list[Snapshot]
    timer: StageTimer
    warnings: list[str]
    degraded: list[dict[str, str]]
    intent: IntentResult | None = None
    enabled: list[RetrieverSpec] = field(default_factory=list)  # the retrievers this request runs, seeds first
    filters: Filters = field(default_factory=Filters)
    plan: Plan | None = None
    expanded: dict[str, Any] | None = None  # what decomposition did (`SearchResponse.plan`)
    lists: dict[str, RankedList] = field(default_factory=dict)  # retriever name -> its ranked chunk list
    chunks: dict[str, Chunk] = field(default_factory=dict)  # every chunk of the answering snapshots, by id
    hits: list[Hit] = field(default_factory=list)
    routed: RoutedAnswer | None = None  # the graph's exact answer to a structural question
    voters: dict[str, list[Any]] = field(default_factory=dict)  # past commits per file
    files: list[dict[str, Any]] = field(default_factory=list)
    functions: list[dict[str, Any]] = field(default_factory=list)
    knowledge: list[UsedEntry] = field(default_factory=list)  # trusted entries relevant to the query
    injected: InjectedKnowledge | None = None  # those entries rendered into the context budget
    context: Context | None = None
    response: SearchResponse | None = None
