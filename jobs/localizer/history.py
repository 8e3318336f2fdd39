"""History votes and priors for the corpus's queries, with a strict time cut.

A labelled commit is answered on its snapshot (a commit at or before its parent, jobs/localizer/dataset.py),
so its history is that snapshot commit and its first-parent ancestors only: the labelled commit itself and
everything after it are never read, and neither are they in the BM25 statistics or the priors. At most
`localizer.history_max_commits` of the newest such commits are read (the CPU budget); commit records are
cached by sha (semantica/history/cache.py), so neighbouring snapshots read only the commits between them.
"""

from __future__ import annotations

import math
from pathlib import Path

from semantica.config import HistoryConfig
from semantica.history.priors import Prior
from semantica.history.reader import HistoryReader
from semantica.history.store import HistorySearcher
from semantica.localizer.features import NAN, HistorySignals


def prior_features(prior: Prior) -> tuple[float, float, float]:
    """(changes, fix-like changes, days since the last change) as the schema's history_* features."""
    age = prior.last_change_days if math.isfinite(prior.last_change_days) else NAN
    return float(prior.changes), float(prior.fixes), float(age)


class SnapshotHistory:
    """One snapshot's history, ready to give a query its `HistorySignals`."""

    def __init__(self, searcher: HistorySearcher) -> None:
        self.searcher = searcher
        priors = searcher.priors
        self.priors = {k: prior_features(p) for table in (priors.files, priors.functions) for k, p in table.items()}

    @property
    def shas(self) -> set[str]:
        return {r.sha for r in self.searcher.history.records}

    def signals(self, query: str) -> HistorySignals:
        votes = self.searcher.index.votes(query)
        return HistorySignals([(v.key, v.score) for v in votes.files], [(v.key, v.score) for v in votes.functions],
                              self.priors)


class CorpusHistory:
    """Reads each snapshot's history as of the snapshot commit (never later), through the sha cache."""

    def __init__(self, config: HistoryConfig, cache_path: str | Path) -> None:
        self.config = config
        self.reader = HistoryReader(config, cache_path)
        self._tokens: dict[str, list[str]] = {}

    def at(self, repo_path: str | Path, snapshot: str) -> SnapshotHistory:
        history = self.reader.read(repo_path, snapshot)
        return SnapshotHistory(HistorySearcher(history, self.config, self._tokens))

    def close(self) -> None:
        self.reader.close()
