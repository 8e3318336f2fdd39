"""A snapshot's history as the localizer's inputs: the vote lists and the priors of the feature schema.

Corpus mining (jobs/localizer/history.py) and the query-time stage (`LearnedStage`) both turn a
`HistorySearcher` into `HistorySignals` here, so a model trained with history features sees at query time
the values it was trained on. The signals are files-only, as history is read and the corpus is mined.
"""

from __future__ import annotations

import math

from semantica.stores.history.priors import Prior
from semantica.stores.history.store import HistorySearcher
from semantica.stores.localizer.features import NAN, HistorySignals


def prior_features(prior: Prior) -> tuple[float, float, float]:
    """(changes, fix-like changes, days since the last change) as the schema's history_* features."""
    age = prior.last_change_days if math.isfinite(prior.last_change_days) else NAN
    return float(prior.changes), float(prior.fixes), float(age)


class SnapshotHistory:
    """One snapshot's history, ready to give a query its `HistorySignals` (priors computed once)."""

    def __init__(self, searcher: HistorySearcher) -> None:
        self.searcher = searcher
        self.priors = {k: prior_features(p) for k, p in searcher.priors.files.items()}

    @property
    def shas(self) -> set[str]:
        return {r.sha for r in self.searcher.history.records}

    def signals(self, query: str) -> HistorySignals:
        votes = self.searcher.index.votes(query)
        return HistorySignals([(v.key, v.score) for v in votes.files], self.priors)
