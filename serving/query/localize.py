"""The stages from lists to files and functions: the granular lists, the history lists, and the localization
tail (serving/core/localization.py: fixed fusion, the learned blend, the final file order)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from semantica.snapshot import Snapshot
from serving.core.answer import degraded_entry
from serving.core.localization import LocalizationInputs
from serving.core.localizer.stage import reads_history
from serving.query.state import QueryState
from serving.retrievers.base import Filters
from serving.retrievers.granular import granular_lists
from serving.retrievers.history import merge_history_lists

if TYPE_CHECKING:
    from serving.stages import Stages

HISTORY = "history"
"""The history retriever's registry name."""


class GranularStage:
    """Function- and file-level lists (`granular.enabled`); when they fail, localization uses the chunk lists."""

    name = "granular"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        config = self.stages.config.granular
        if not config.enabled:
            return state
        try:
            state.granular = state.timer.run("granular", lambda: granular_lists(
                state.request.query, [self.stages.retrievers(s).granular for s in state.snapshots], config,
                state.filters))
        except Exception as exc:  # optional lists: localization falls back to the chunk lists
            state.degraded.append(degraded_entry("granular", exc))
        return state


class HistoryStage:
    """The history retriever's vote and prior lists, and which past commits voted for each file and function:
    read when history fuses (`history.enabled`), when the answer explains, or when the learned localizer reads
    history features for this query."""

    name = "history"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def applies(self, state: QueryState) -> bool:
        config, learned = self.stages.config, self.stages.learned_localizer
        learned_reads = reads_history(config.localizer) and learned.applies(state.request.query, len(state.snapshots))
        return config.history.enabled or state.request.explain or learned_reads

    def run(self, state: QueryState) -> QueryState:
        if not self.applies(state):
            return state
        try:
            state.history, state.voters = state.timer.run(
                "history", lambda: self.lists(state.request.query, state.snapshots, state.filters))
        except Exception as exc:  # optional lists: localization falls back to the others
            state.degraded.append(degraded_entry("history", exc))
        return state

    def lists(self, query: str, snapshots: list[Snapshot], filters: Filters) -> tuple[Any, dict[str, list[Any]]]:
        """Over the snapshots that store history (serving/retrievers/history.py)."""
        parts, voters = [], {}
        for snapshot in snapshots:
            retrievers = self.stages.retrievers(snapshot)
            try:
                retriever = retrievers.get(HISTORY)
            except KeyError:  # a stage set without a history retriever (the Ray graph deploys the enabled ones only)
                return None, {}
            if getattr(retriever, "available", False):
                parts.append(retriever.lists(query, retrievers.granular.allows(filters)))
                voters.update(retriever.voters(query))
        return (merge_history_lists(parts) if parts else None), voters


class LocalizeStage:
    """Ranked files and functions from the lists (the learned localizer's failure degrades, never fails)."""

    name = "localize"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        stages, request, snapshots = self.stages, state.request, state.snapshots
        depth = max(request.k, stages.config.query.file_rank_depth)
        plan = state.plan
        state.files, state.functions = stages.localization.run(
            LocalizationInputs(state.lists, state.chunks, state.intent, depth, state.granular,
                               plan.localize_multipliers if plan else None, state.history, state.voters),
            lambda ranked, ranked_functions: stages.learned_localizer.apply(request.query, snapshots, ranked,
                                                                            ranked_functions),
            timed=state.timer.run, on_learned_error=lambda exc: state.degraded.append(degraded_entry("localizer", exc)))
        return state
