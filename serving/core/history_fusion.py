"""Fusing the history signal into file and function localization, in the localizer's reciprocal-rank units.

The history retriever's vote lists (past commits similar to the query voted for what they changed) add
`file_weight / (rrf_k + rank)` to file scores and `function_weight / (rrf_k + rank)` to function scores; the
fix-frequency priors add `prior_weight / (rrf_k + rank)` by their own ranking. Weights: `history.*` in conf
(docs/history.md says which data chose them). Keys are the localizer's: `repo\\x00path[::Qualified.name]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.config import HistoryConfig
from semantica.hits import RankedList
from semantica.stores.history.index import HistoryVotes
from serving.core.granular_fusion import localizer_key


@dataclass
class HistoryLists:
    """One query's history lists in localizer keys, best first."""

    files: RankedList = field(default_factory=list)
    functions: RankedList = field(default_factory=list)
    prior_files: RankedList = field(default_factory=list)
    prior_functions: RankedList = field(default_factory=list)

    @classmethod
    def from_votes(cls, repo: str, votes: HistoryVotes, prior_files: list[tuple[str, float]] = (),
                   prior_functions: list[tuple[str, float]] = (), k: int = 200) -> HistoryLists:
        def ranked(keys: list[str]) -> RankedList:
            return [(localizer_key(repo, key), rank) for rank, key in enumerate(keys[:k], 1)]
        return cls(ranked([v.key for v in votes.files]), ranked([v.key for v in votes.functions]),
                   ranked([key for key, _ in prior_files]), ranked([key for key, _ in prior_functions]))


class HistoryFusion:
    """Adds the history lists' reciprocal-rank scores to fused file and function scores."""

    def __init__(self, config: HistoryConfig) -> None:
        if config.rrf_k <= 0:
            raise ValueError(f"history.rrf_k must be > 0, got {config.rrf_k}")
        self.config = config

    def _add(self, scores: dict[str, float], ranked: RankedList, weight: float) -> dict[str, float]:
        if weight <= 0:
            return scores
        out = dict(scores)
        for key, rank in ranked:
            out[key] = out.get(key, 0.0) + weight / (self.config.rrf_k + rank)
        return out

    def files(self, fused: dict[str, float], lists: HistoryLists) -> dict[str, float]:
        scores = self._add(fused, lists.files, self.config.file_weight)
        return self._boost(scores, lists.prior_files)

    def functions(self, fused: dict[str, float], lists: HistoryLists) -> dict[str, float]:
        scores = self._add(fused, lists.functions, self.config.function_weight)
        return self._boost(scores, lists.prior_functions)

    def _boost(self, scores: dict[str, float], prior: RankedList) -> dict[str, float]:
        """The prior only re-orders what some retriever found: it never adds a key of its own."""
        if self.config.prior_weight <= 0:
            return scores
        out = dict(scores)
        for key, rank in prior:
            if key in out:
                out[key] += self.config.prior_weight / (self.config.rrf_k + rank)
        return out
