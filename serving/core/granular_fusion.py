"""Fusing whole-file and function-level BM25 lists into file and function localization.

The `Localizer` fuses the chunk retrievers' lists projected to files (functions); this adds, in the
same reciprocal-rank units, `weight / (rrf_k + rank)` for each key in a granular list, and — for
functions — candidates first: every function of the top `candidate_files` files is a candidate, and
each function gets a prior from its file's rank (a function in the best-ranked file is the likeliest
patch site). Keys are the localizer's: `repo\\x00path` and `repo\\x00path::Qualified.name`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from semantica.config import GranularConfig
from semantica.hits import RankedList
from semantica.stores.granular import path_of_key

REPO_SEPARATOR = "\x00"


def localizer_key(repo: str, key: str) -> str:
    """A granular key (`path` or `path::name`) as the localizer spells it."""
    return f"{repo}{REPO_SEPARATOR}{key}"


@dataclass
class GranularLists:
    """Granular lists of one query, in localizer keys; `functions_of(file key)` lists a file's functions."""

    files: RankedList = field(default_factory=list)
    functions: RankedList = field(default_factory=list)
    functions_of: Callable[[str], Sequence[str]] = lambda _file_key: ()


class GranularFusion:
    """Adds granular reciprocal-rank scores to fused file and function scores."""

    def __init__(self, config: GranularConfig) -> None:
        if config.rrf_k <= 0:
            raise ValueError(f"granular.rrf_k must be > 0, got {config.rrf_k}")
        self.config = config

    def _add(self, scores: dict[str, float], ranked: RankedList, weight: float) -> dict[str, float]:
        out = dict(scores)
        if weight <= 0:
            return out
        for key, rank in ranked:
            out[key] = out.get(key, 0.0) + weight / (self.config.rrf_k + rank)
        return out

    def files(self, fused: dict[str, float], lists: GranularLists) -> dict[str, float]:
        """File scores with whole-file BM25 fused in."""
        return self._add(fused, lists.files, self.config.file_weight)

    def functions(self, fused: dict[str, float], lists: GranularLists, ranked_files: Sequence[str]) -> dict[str, float]:
        """Function scores with function BM25, the top files' functions as candidates, and the file prior."""
        c = self.config
        scores = self._add(fused, lists.functions, c.function_weight)
        for file_key in ranked_files[: max(0, c.candidate_files)]:
            for function in lists.functions_of(file_key):
                scores.setdefault(function, 0.0)
        if c.file_prior_weight > 0:
            file_rank = {key: rank for rank, key in enumerate(ranked_files, start=1)}
            for key in scores:
                repo, _, rest = key.partition(REPO_SEPARATOR)
                rank = file_rank.get(localizer_key(repo, path_of_key(rest)))
                if rank is not None:
                    scores[key] += c.file_prior_weight / (c.rrf_k + rank)
        return scores
