"""The stages that write the answer: knowledge entries, the packed context, and the `SearchResponse`."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from semantica.api import SearchResponse
from serving.core.answer import context_dict, degraded_entry, explain_history, file_lines, hit_view
from serving.core.context import localizer_first_hits
from serving.knowledge.inject import InjectedKnowledge
from serving.query.state import QueryState

if TYPE_CHECKING:
    from serving.stages import Stages


def context_budget(state: QueryState, stages: Stages) -> int:
    """The request's context budget in tokens, else `context.token_budget`."""
    budget = state.request.context_budget
    return stages.config.context.token_budget if budget is None else budget


class KnowledgeStage:
    """Trusted relevant entries (serving/knowledge/, `knowledge.enabled`): they boost the hits they name and take
    their share of the context budget. An unreadable store degrades the answer, never fails it."""

    name = "knowledge"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        knowledge = self.stages.knowledge
        if not knowledge.enabled:
            return state
        try:
            state.knowledge = state.timer.run("knowledge", lambda: knowledge.lookup(
                state.request.query, [s.repo for s in state.snapshots]))
        except Exception as exc:
            state.degraded.append(degraded_entry("knowledge", exc))
        state.hits = knowledge.boost(state.hits, state.knowledge, state.chunks, state.request.k)
        state.injected = knowledge.render(state.knowledge, context_budget(state, self.stages))
        return state


class ContextStage:
    """The first k hits packed into the budget the knowledge entries left (the localizer's functions first when
    `context.localizer_first` and the learned localizer are on)."""

    name = "context"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        config, chunks = self.stages.config, state.chunks
        injected = state.injected or InjectedKnowledge([])
        packed = state.hits[: state.request.k]
        if config.context.localizer_first and config.localizer.enabled:
            packed = localizer_first_hits(packed, state.functions, chunks, config.context.localizer_functions)
        budget = context_budget(state, self.stages) - injected.tokens
        state.context = state.timer.run("context", lambda: self.stages.context_builder.build(
            self.stages.knowledge.dedupe(packed, injected.entries, chunks), chunks, file_lines(state.snapshots),
            budget))
        return state


class AnswerStage:
    """The `SearchResponse` from the state; the injected entries are then counted as used."""

    name = "answer"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        request, intent, chunks, routed = state.request, state.intent, state.chunks, state.routed
        injected = state.injected or InjectedKnowledge([])
        plan = state.plan.to_dict() if state.plan else None
        if state.expanded:  # what decomposition did
            plan = {**(plan or {}), **state.expanded}
        response = SearchResponse(
            query=request.query,
            intent={"dominant": intent.dominant.value,
                    "probabilities": {i.value: round(p, 4) for i, p in intent.probabilities.items()},
                    "expansions": asdict(intent.expansions)},
            hits=[hit_view(rank, hit, chunks[hit.chunk_id], request.explain)
                  for rank, hit in enumerate(state.hits[: request.k], 1)],
            files=state.files, functions=state.functions, context=context_dict(state.context, injected),
            degraded=state.degraded, warnings=state.warnings, timings_ms=state.timer.ms,
            snapshots={s.repo: s.snapshot_id for s in state.snapshots},
            graph=routed.result.to_dict() if routed is not None else None, plan=plan)
        for view in response.hits:
            if request.explain and state.voters:
                explain_history(view, state.voters)
            if routed is not None:
                view.graph = routed.by_chunk.get(view.chunk_id)
        self.stages.knowledge.mark_used(injected)
        state.response = response
        return state
