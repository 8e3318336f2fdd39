"""The stages from lists to hits: fusion, the rerankers, the planner's finish (MMR, budgets), the graph's exact
answer to a structural question. `Reranking` is the public way to run the registered rerankers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from semantica.api import SearchRequest
from semantica.hits import ChunkMeta, Hit
from semantica.schema import Chunk
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


class FuseStage:
    """Weighted RRF over the lists (the repository's learned weights when they won their A/B), to
    max(k, the intent's cutoff), with the plan's mode multipliers; hits outside the snapshots dropped."""

    name = "fuse"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        chunks = state.chunks
        meta = {cid: ChunkMeta.from_chunk(chunks[cid]) for ranked in state.lists.values() for cid, _ in ranked
                if cid in chunks}
        fusion = self.stages.ranking_hooks.fusion(state.snapshots, self.stages.fusion)
        multipliers = state.plan.multipliers if state.plan else None
        fused = state.timer.run("fusion", lambda: fusion.fuse(state.lists, state.intent, meta, state.request.k,
                                                              multipliers=multipliers))
        state.hits = [h for h in fused if h.chunk_id in chunks]
        return state


class RerankStage:
    name = "rerank"

    def __init__(self, stages: Stages) -> None:
        self.reranking = stages.reranking

    def run(self, state: QueryState) -> QueryState:
        state.hits = self.reranking.rerank(state.request, state.intent, state.hits, state.chunks, state.timer,
                                           state.degraded)
        return state


class FinishPlanStage:
    """The planner after reranking: MMR for mmr_diverse, budgets across repositories (nothing without a plan)."""

    name = "finish_plan"

    def __init__(self, stages: Stages) -> None:
        self.planner = stages.planner

    def run(self, state: QueryState) -> QueryState:
        state.hits = state.timer.run("planning", lambda: self.planner.finish(
            state.plan, state.request, state.hits, state.snapshots, state.chunks))
        return state


class GraphRouteStage:
    """A structural question ("who calls X") answered exactly from the graph first; no reranker touches that
    order (`graph_ops.route_queries`)."""

    name = "graph_route"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        if not self.stages.config.graph_ops.route_queries:
            return state
        state.routed = state.timer.run("graph_ops", lambda: self.stages.graph_router.answer(
            state.request.query, state.snapshots, state.warnings))
        if state.routed is not None:
            state.hits = state.routed.merge(state.hits, state.chunks)
        return state


class TokenVectorWarningStage:
    """Late interaction over a snapshot without stored token vectors encoded its candidates per query: say so."""

    name = "token_vector_warning"

    def __init__(self, stages: Stages) -> None:
        del stages  # reads the state alone

    def run(self, state: QueryState) -> QueryState:
        if LATE_INTERACTION in state.timer.ms:
            state.warnings.extend(
                f"{s.repo}: snapshot {s.snapshot_id} stores no token vectors; late interaction encoded its "
                f"candidates per query (slow): re-index it" for s in state.snapshots if not s.manifest.token_vectors)
        return state
