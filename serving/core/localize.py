"""Localization: files and functions ranked rank-first from the retrievers' chunk lists (what SWE-bench scores)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from semantica.config import QueryConfig
from semantica.hits import ChunkMeta, RankedList
from semantica.languages import is_test_path
from semantica.schema import Chunk
from serving.core.fusion import ExpansionMatcher, WeightedRRF
from serving.core.intent import IntentResult

FUNCTION_KINDS = frozenset({"function", "method"})
PATH_MATCH = "path"
REPO_SEPARATOR = "\x00"


def localizer_key(repo: str, key: str) -> str:
    """A file (`path`) or function (`path::Qualified.name`) key of one repository as the localizer spells it."""
    return f"{repo}{REPO_SEPARATOR}{key}"


class Localizer:
    """Ranks files and functions: where an agent should look or patch.

    Rank-first at the file (and function) level: each strategy's chunk list becomes a file list
    (a file takes its best chunk's rank), the file lists are fused with the same weighted RRF and
    consensus as chunks — so a file that the lexical and the vector retriever reach through
    different chunks gets the consensus it deserves. Only `query.localize_strategies` vote (vector
    and lexical by default: on the SWE-bench dev split the symbol and graph lists, built from the
    many identifiers of a long bug report, diluted file and function rankings; they still shape the
    chunk hits, where short identifier and "who calls" queries need them). Files named in the query
    are boosted; test files are damped (a fix lands in the code
    under test far more often than in the test).
    """

    def __init__(self, config: QueryConfig, fusion: WeightedRRF, voters: Iterable[str] | None = None) -> None:
        """`voters`: the registered names of `query.localize_strategies` (`build_stages` checks them against
        the retriever registry, which core does not import); by default the conf names, case folded."""
        self.config = config
        self.fusion = fusion
        self.voters = set(voters if voters is not None else
                          (name.strip().lower() for name in config.localize_strategies))

    @staticmethod
    def _project(ranked: RankedList, key_of: Callable[[str], str | None]) -> RankedList:
        """A chunk ranking -> a ranking of keys (file or function), each at its best chunk's rank."""
        out: dict[str, int] = {}
        for chunk_id, _ in ranked:
            key = key_of(chunk_id)
            if key is not None and key not in out:
                out[key] = len(out) + 1
        return list(out.items())

    def _rank(self, lists: dict[str, RankedList], key_of: Callable[[str], str | None],
              intent: IntentResult, path_of: Callable[[str], str], depth: int,
              voters: set[str] | None = None) -> list[tuple[str, float]]:
        projected = {s: self._project(ranked, key_of) for s, ranked in lists.items() if voters is None or s in voters}
        base = dict(self.fusion.scores(projected, intent, k=sum(len(v) for v in projected.values())))
        matcher = ExpansionMatcher(intent.expansions)
        scored: list[tuple[str, float]] = []
        for key, score in base.items():
            path = path_of(key)
            if is_test_path(path):
                score *= self.config.localize_test_factor
            if matcher.match(ChunkMeta(path=path)).startswith(PATH_MATCH):
                score *= self.config.localize_path_boost
            scored.append((key, score))
        return sorted(scored, key=lambda item: -item[1])[:depth]

    def localize(self, lists: dict[str, RankedList], chunks: dict[str, Chunk],
                 intent: IntentResult, depth: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Files and functions, each `{repo, path | function, score}`, best first (the search mode's weights
        shape only the chunk hits: on localization they lost under leave-one-repository-out)."""
        def file_of(chunk_id: str) -> str | None:
            chunk = chunks.get(chunk_id)
            return f"{chunk.repo}\x00{chunk.path}" if chunk else None

        def function_of(chunk_id: str) -> str | None:
            chunk = chunks.get(chunk_id)
            if chunk is None or chunk.kind not in FUNCTION_KINDS or not chunk.symbol:
                return None
            return f"{chunk.repo}\x00{chunk.path}::{chunk.symbol}"

        def path_of(key: str) -> str:
            return key.split("\x00", 1)[1].split("::", 1)[0]

        voters = self.voters
        if not voters & set(lists):
            voters = set(lists)  # an ablation without any of them: let what ran vote
        files = self._rank(lists, file_of, intent, path_of, depth, voters)
        functions = self._rank(lists, function_of, intent, path_of, depth, voters)
        return ([{"repo": k.split("\x00")[0], "path": k.split("\x00")[1], "score": round(v, 6)} for k, v in files],
                [{"repo": k.split("\x00")[0], "function": k.split("\x00")[1], "score": round(v, 6)}
                 for k, v in functions])
