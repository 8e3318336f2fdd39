"""Whole-file and function-level BM25 over one snapshot (semantica/stores/granular.py).

Unlike the chunk retrievers, these answer with file paths and `path::Qualified.name` keys: they feed
file and function localization, not the chunk hits. A snapshot written before these shards existed
has none; its lists are then empty (localization falls back to the chunk lists alone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

from semantica.config import GranularConfig
from semantica.snapshot import Snapshot
from semantica.stores.granular import Granularity, function_key, outer_functions, path_of_key
from semantica.stores.lucene import LuceneShardSearcher
from serving.core.granular_fusion import GranularLists, localizer_key
from serving.retrievers.base import Filters, ScoredList, merge_scored, to_ranked


class GranularRetriever:
    """`search(query, granularity, k)` -> (key, bm25) best first, all of that granularity's shards merged."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    @cached_property
    def _shards(self) -> dict[Granularity, list[LuceneShardSearcher]]:
        s = self.snapshot
        return {g: [LuceneShardSearcher(p, s.config.lucene) for p in s.shard_paths(g.shard_kind)] for g in Granularity}

    def available(self, granularity: Granularity) -> bool:
        return bool(self.snapshot.shard_paths(granularity.shard_kind))

    def search(self, query: str, granularity: Granularity, k: int, keep_repeats: bool = True) -> ScoredList:
        if k <= 0:
            return []
        return merge_scored([shard.search(query, k, keep_repeats) for shard in self._shards[granularity]], k)

    def allows(self, filters: Filters | None) -> Callable[[str], bool]:
        """Whether a path passes the request's filters (judged on one of the file's chunks)."""
        if filters is None or filters.is_empty():
            return lambda _path: True
        by_path = self.snapshot.chunks_by_path
        return lambda path: bool(by_path.get(path)) and filters.allows(by_path[path][0])

    @cached_property
    def functions_by_path(self) -> dict[str, list[str]]:
        """Function keys of every file, in source order (the candidates of "functions of the top files")."""
        out: dict[str, list[str]] = {}
        for symbol in sorted(outer_functions(self.snapshot.symbols), key=lambda s: (s.path, s.start_line)):
            out.setdefault(symbol.path, []).append(function_key(symbol.path, symbol.qualname))
        return out


def granular_lists(query: str, retrievers: Sequence[GranularRetriever], config: GranularConfig,
                   filters: Filters | None = None) -> GranularLists:
    """Both granular lists of `query` over several snapshots, in localizer keys, scores merged."""
    files: list[ScoredList] = []
    functions: list[ScoredList] = []
    by_file: dict[str, list[str]] = {}
    for retriever in retrievers:
        repo = retriever.snapshot.repo
        allowed = retriever.allows(filters)
        files.append([(localizer_key(repo, k), s) for k, s in retriever.search(query, Granularity.FILE, config.k, config.query_repeats)
                      if allowed(k)])
        functions.append([(localizer_key(repo, k), s) for k, s in
                          retriever.search(query, Granularity.FUNCTION, config.k, config.query_repeats) if allowed(path_of_key(k))])
        for path, keys in retriever.functions_by_path.items():
            by_file[localizer_key(repo, path)] = [localizer_key(repo, k) for k in keys]
    return GranularLists(files=to_ranked(merge_scored(files, config.k)),
                         functions=to_ranked(merge_scored(functions, config.k)),
                         functions_of=lambda file_key: by_file.get(file_key, ()))
