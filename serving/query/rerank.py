"""The rerank stage: the registered rerankers in `rerank.order`. `Reranking` is the public way to run them
(the stage calls it; so may any later stage that re-ranks a new candidate list)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from semantica.api import SearchRequest
from semantica.hits import Hit
from semantica.schema import Chunk
from semantica.stores.index_kinds.tokens import KIND as TOKENS_KIND
from serving.core.answer import degraded_entry
from serving.core.intent import IntentResult
from serving.query.state import QueryState, StageTimer
from serving.rerankers.base import Reranker, RerankInput

if TYPE_CHECKING:
    from serving.stages import Stages

LATE_INTERACTION = "late_interaction"
"""The reranker whose timing says candidates were scored by their token vectors."""


class Reranking:
    """The registered rerankers in `rerank.order`; an optional one that fails keeps the previous order."""

    def __init__(self, rerankers: list[Reranker]) -> None:
        self.rerankers = rerankers

    def rerank(self, request: SearchRequest, intent: IntentResult, hits: list[Hit], chunks: dict[str, Chunk],
               timer: StageTimer, degraded: list[dict[str, str]]) -> list[Hit]:
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


class RerankStage:
    name = "rerank"

    def __init__(self, stages: Stages) -> None:
        self.reranking = stages.reranking

    def run(self, state: QueryState) -> QueryState:
        state.hits = self.reranking.rerank(state.request, state.intent, state.hits, state.chunks, state.timer,
                                           state.degraded)
        return state


class TokenVectorWarningStage:
    """Late interaction over a snapshot without stored token vectors encoded its candidates per query: say so (not
    for one whose token vectors are still building: its candidates were not encoded, its `pending` entry says so)."""

    name = "token_vector_warning"

    def __init__(self, stages: Stages) -> None:
        del stages  # reads the state alone

    def run(self, state: QueryState) -> QueryState:
        if LATE_INTERACTION in state.timer.ms:
            state.warnings.extend(
                f"{s.repo}: snapshot {s.snapshot_id} stores no token vectors; late interaction encoded its "
                f"candidates per query (slow): re-index it" for s in state.snapshots
                if not s.manifest.token_vectors and not s.building(TOKENS_KIND))
        return state
