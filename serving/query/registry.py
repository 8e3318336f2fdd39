"""The query stages by name, in the order they run: `QUERY_STAGES` declares the built-in path once, and
`register_query_stage` adds a plug-in stage after a named one. `serving.stages.Stages` builds the list."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from serving.query.answer import AnswerStage, ContextStage, KnowledgeStage
from serving.query.base import QueryStage
from serving.query.localize import HistoryStage, LocalizeStage
from serving.query.rank import FinishPlanStage, FuseStage, GraphRouteStage
from serving.query.rerank import RerankStage, TokenVectorWarningStage
from serving.query.retrieve import (
    ExpandStage,
    IntentStage,
    LocalizerQueryStage,
    PlanStage,
    QueryEncodingStage,
    RetrieveStage,
    ScopeStage,
)

if TYPE_CHECKING:
    from serving.stages import Stages

StageFactory = Callable[["Stages"], QueryStage]
"""The pipeline's collaborators (`Stages`) -> the stage object (a stage class is its own factory)."""

QUERY_STAGES: tuple[StageFactory, ...] = (
    QueryEncodingStage,  # the chunk encoder's pass begins: it overlaps intent and the other retrievers
    IntentStage,
    ScopeStage,  # retrievers, filters, chunks
    PlanStage,  # planning: mode and K
    RetrieveStage,
    LocalizerQueryStage,  # the localizer's dense pass begins: it overlaps fusion and reranking
    ExpandStage,  # planning: decomposition
    FuseStage,
    RerankStage,
    FinishPlanStage,  # planning: MMR
    GraphRouteStage,
    TokenVectorWarningStage,
    HistoryStage,
    LocalizeStage,
    KnowledgeStage,
    ContextStage,
    AnswerStage,
)

_registered: dict[str, StageFactory] = {}  # insertion order is run order


def _declare_builtins() -> None:
    if not _registered:
        _registered.update({factory.name: factory for factory in QUERY_STAGES})  # type: ignore[attr-defined]


def register_query_stage(name: str, factory: StageFactory, *, after: str) -> None:
    """Run the stage `factory` builds right after the stage `after`, in every pipeline built from now on."""
    _declare_builtins()
    if name in _registered:
        raise ValueError(f"query stage {name!r} is already registered")
    if after not in _registered:
        raise ValueError(f"unknown query stage {after!r}; known query stages: {', '.join(_registered)}")
    order = list(_registered.items())
    at = [n for n, _ in order].index(after) + 1
    _registered.clear()
    _registered.update(order[:at] + [(name, factory)] + order[at:])


def unregister_query_stage(name: str) -> None:
    """Remove a plug-in stage (a built-in one stays: the answer needs every one of them)."""
    if name in {factory.name for factory in QUERY_STAGES}:  # type: ignore[attr-defined]
        raise ValueError(f"query stage {name!r} is built in")
    _registered.pop(name, None)


def query_stage_factories() -> list[tuple[str, StageFactory]]:
    """(name, factory) of every registered stage, in run order."""
    _declare_builtins()
    return list(_registered.items())
