"""The `history` retriever: past commits whose messages match the query vote for the files they changed.

It searches one snapshot's stored history (semantica/stores/history: first-parent commits at or before the
snapshot's commit only). As a chunk retriever it answers with the first chunk of each voted file, scored by the
file's vote. `voters` gives which past commits voted for a file (sha, subject, date), for the answer. A snapshot
with no stored history (not a git source, or indexed with `history.index: false`) answers nothing.
"""

from __future__ import annotations

from functools import cached_property

from semantica.snapshot import Snapshot
from semantica.stores.history.index import HistoryVotes, Voter
from serving.core.localize import localizer_key
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList


class HistoryRetriever(BaseRetriever):
    """Votes of past commits over one snapshot, as chunks (`search`) and as who voted for what (`voters`)."""

    strategy = "history"  # a registered retriever beyond the four built-in strategies (fused by name)

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__(snapshot.chunk_by_id)
        self.snapshot = snapshot
        self.searcher = snapshot.history

    @property
    def available(self) -> bool:
        return self.searcher is not None

    def votes(self, query: str) -> HistoryVotes:
        """The query's votes (the index keeps a few recent queries': the localizer asks for the same)."""
        return self.searcher.index.votes(query) if self.searcher is not None else HistoryVotes()

    @cached_property
    def _first_chunk(self) -> dict[str, str]:
        """Path -> the id of its first chunk in source order."""
        first: dict[str, str] = {}
        for chunk in sorted(self.snapshot.chunks, key=lambda c: (c.path, c.start_line)):
            first.setdefault(chunk.path, chunk.chunk_id)
        return first

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        scored: dict[str, float] = {}
        for vote in self.votes(query.text).files:
            if vote.key in self._first_chunk:
                scored.setdefault(self._first_chunk[vote.key], vote.score)
        return sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:k]

    def voters(self, query: str) -> dict[str, list[Voter]]:
        """Localizer key (`repo\\x00path`) -> the past commits that voted for that file, strongest first."""
        return {localizer_key(self.snapshot.repo, v.key): v.voters for v in self.votes(query).files}
