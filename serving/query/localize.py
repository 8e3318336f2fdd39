"""The stages from lists to files and functions: who voted (history), and the localization tail
(serving/core/localization.py: fixed fusion, the learned blend)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from semantica.snapshot import Snapshot
from serving.core.answer import degraded_entry
from serving.core.localization import LocalizationInputs
from serving.localizer.stage import reads_history
from serving.query.state import QueryState

if TYPE_CHECKING:
    from serving.stages import Stages

HISTORY = "history"
"""The history retriever's registry name."""


class HistoryStage:
    """Which past commits voted for each file (the history retriever over the snapshots that store history):
    read when the answer explains, or when the learned localizer reads history features for this query."""

    name = "history"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def applies(self, state: QueryState) -> bool:
        config, learned = self.stages.config, self.stages.learned_localizer
        learned_reads = reads_history(config.localizer) and learned.applies(state.request.query, len(state.snapshots))
        return state.request.explain or learned_reads

    def run(self, state: QueryState) -> QueryState:
        if not self.applies(state):
            return state
        try:
            state.voters = state.timer.run(
                "history", lambda: self.voters(state.request.query, state.snapshots))
        except Exception as exc:  # optional: the answer goes without its voters
            state.degraded.append(degraded_entry("history", exc))
        return state

    def voters(self, query: str, snapshots: list[Snapshot]) -> dict[str, list[Any]]:
        """Localizer key -> the past commits that voted for it, over the snapshots that store history
        (serving/retrievers/history.py)."""
        voters: dict[str, list[Any]] = {}
        for snapshot in snapshots:
            retrievers = self.stages.retrievers(snapshot)
            try:
                retriever = retrievers.get(HISTORY)
            except KeyError:  # a stage set without a history retriever (the Ray graph deploys the enabled ones only)
                return {}
            if getattr(retriever, "available", False):
                voters.update(retriever.voters(query))
        return voters


class LocalizeStage:
    """Ranked files and functions from the lists (the learned localizer's failure degrades, never fails)."""

    name = "localize"

    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    def run(self, state: QueryState) -> QueryState:
        stages, request, snapshots = self.stages, state.request, state.snapshots
        depth = max(request.k, stages.config.query.file_rank_depth)
        state.files, state.functions = stages.localization.run(
            LocalizationInputs(state.lists, state.chunks, state.intent, depth, voters=state.voters),
            lambda ranked, ranked_functions: stages.learned_localizer.apply(request.query, snapshots, ranked,
                                                                            ranked_functions),
            timed=state.timer.run, on_learned_error=lambda exc: state.degraded.append(degraded_entry("localizer", exc)))
        return state
