"""The stages around the rerankers: fusion of the lists into hits, the planner's finish (MMR), the
graph's exact answer to a structural question."""

from __future__ import annotations

from typing import TYPE_CHECKING

from semantica.hits import ChunkMeta
from serving.query.state import QueryState

if TYPE_CHECKING:
    from serving.stages import Stages


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


class FinishPlanStage:
    """The planner after reranking: MMR for a forced mmr_diverse (nothing without a plan)."""

    name = "finish_plan"

    def __init__(self, stages: Stages) -> None:
        self.planner = stages.planner

    def run(self, state: QueryState) -> QueryState:
        state.hits = state.timer.run("planning", lambda: self.planner.finish(state.plan, state.hits, state.snapshots))
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
