"""History votes and priors for the corpus's queries, with a strict time cut.

A labelled commit is answered on its snapshot (a commit at or before its parent, jobs/localizer/dataset.py),
so its history is that snapshot commit and its first-parent ancestors only: the labelled commit itself and
everything after it are never read, and neither are they in the BM25 statistics or the priors. At most
`localizer.history_max_commits` of the newest such commits are read (the CPU budget); commit records are
cached by sha (pipelines/history/cache.py), so neighbouring snapshots read only the commits between them.
The signals come from serving/localizer/history_input.py, the code the query-time stage runs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pipelines.history.reader import HistoryReader
from semantica.config import Config, HistoryConfig
from semantica.stores.history.store import HistorySearcher
from serving.localizer.history_input import SnapshotHistory


class CorpusHistory:
    """Reads each snapshot's history as of the snapshot commit (never later), through the sha cache."""

    def __init__(self, config: HistoryConfig, cache_path: str | Path) -> None:
        self.config = config
        self.reader = HistoryReader(config, cache_path)
        self._tokens: dict[str, list[str]] = {}

    @classmethod
    def for_localizer(cls, config: Config) -> CorpusHistory:
        """The history the localizer's features read (`localizer.history_max_commits` newest commits) through the
        sha cache of `history.cache_file` or `<paths.cache_dir>/history.sqlite`: one setting for corpus mining and
        the dev replay."""
        return cls(dataclasses.replace(config.history, max_commits=config.localizer.history_max_commits),
                   config.history.cache_file or Path(config.paths.cache_dir) / "history.sqlite")

    def at(self, repo_path: str | Path, snapshot: str) -> SnapshotHistory:
        history = self.reader.read(repo_path, snapshot)
        return SnapshotHistory(HistorySearcher(history, self.config, self._tokens))

    def close(self) -> None:
        self.reader.close()
