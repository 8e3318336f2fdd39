"""Multi-granularity lexical documents: whole files and functions beside the chunk documents.

Chunk BM25 scores a file by its best chunk; a bug report's words are spread over a whole file or
function, so BM25 over whole-file and whole-function documents ranks files and functions better
(plain file BM25: 67.2 file Acc@5 on the SWE-bench dev split, chunk BM25: 57.1). The indexer writes
one Lucene shard set per granularity (`pipelines/granular.py`); the localizer fuses their lists
(`serving/retrievers/granular.py`). Both sides share the names and key formats here.
"""

from __future__ import annotations

from collections.abc import Iterable

from semantica.schema import ParsableEnum, Symbol

FUNCTION_SEPARATOR = "::"
FUNCTION_SYMBOL_KINDS = frozenset({"function", "method"})


class Granularity(ParsableEnum):
    """What one granular Lucene document holds."""

    FILE = "file"
    FUNCTION = "function"

    @property
    def shard_kind(self) -> str:
        """`ShardInfo.kind` of this granularity's shards in the manifest."""
        return f"lucene_{self.value}"

    @property
    def directory(self) -> str:
        """Directory (inside the snapshot) that holds this granularity's shards."""
        return f"lucene_{self.value}"


def function_key(path: str, qualname: str) -> str:
    """`path::Qualified.name`: a function document's id, the localizer's and the benchmark's key."""
    return f"{path}{FUNCTION_SEPARATOR}{qualname}"


def path_of_key(key: str) -> str:
    """The file path of a file or function key."""
    return key.split(FUNCTION_SEPARATOR, 1)[0]


def outer_functions(symbols: Iterable[Symbol]) -> list[Symbol]:
    """Functions and methods that no other function holds (a nested one is folded into its holder)."""
    symbols = list(symbols)
    kind_by_id = {s.symbol_id: s.kind for s in symbols}
    return [s for s in symbols
            if s.kind in FUNCTION_SYMBOL_KINDS and kind_by_id.get(s.parent, "") not in FUNCTION_SYMBOL_KINDS]
