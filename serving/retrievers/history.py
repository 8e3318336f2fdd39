"""The `history` retriever: past commits whose messages match the query vote for what they changed.

It searches one snapshot's stored history (semantica/stores/history: first-parent commits at or before the
snapshot's commit only). As a chunk retriever it answers with the chunks of the voted functions (scored
by their vote), then the first chunk of each voted file none of whose functions was voted (scored by the
file's vote). `voters` gives which past commits voted for a file or function (sha, subject, date), for the
answer. A snapshot with no
stored history (not a git source, or indexed with `history.index: false`) answers nothing.
"""

from __future__ import annotations

from functools import cached_property

from semantica.snapshot import Snapshot
from semantica.stores.history.index import HistoryVotes, Voter
from serving.core.localize import localizer_key
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList

FUNCTION_KINDS = frozenset({"function", "method"})


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
    def _chunks_of(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Chunk ids by function key (`path::Qualified.name`) and by path, in source order."""
        by_function: dict[str, list[str]] = {}
        by_path: dict[str, list[str]] = {}
        for chunk in sorted(self.snapshot.chunks, key=lambda c: (c.path, c.start_line)):
            by_path.setdefault(chunk.path, []).append(chunk.chunk_id)
            if chunk.kind in FUNCTION_KINDS and chunk.symbol:
                by_function.setdefault(f"{chunk.path}::{chunk.symbol}", []).append(chunk.chunk_id)
        return by_function, by_path

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        votes = self.votes(query.text)
        by_function, by_path = self._chunks_of
        scored: dict[str, float] = {}
        voted_paths: set[str] = set()
        for vote in votes.functions:
            for chunk_id in by_function.get(vote.key, ()):
                scored.setdefault(chunk_id, vote.score)
                voted_paths.add(vote.key.split("::", 1)[0])
        for vote in votes.files:
            if vote.key not in voted_paths and by_path.get(vote.key):
                scored.setdefault(by_path[vote.key][0], vote.score)
        return sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:k]

    def voters(self, query: str) -> dict[str, list[Voter]]:
        """Localizer key (`repo\\x00path[::name]`) -> the past commits that voted for it, strongest first."""
        votes = self.votes(query)
        return {localizer_key(self.snapshot.repo, v.key): v.voters for v in votes.files + votes.functions}

