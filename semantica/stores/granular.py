"""Multi-granularity lexical documents: whole files and functions beside the chunk documents.

Chunk BM25 scores a file by its best chunk; a bug report's words are spread over a whole file or
function, so BM25 over whole-file and whole-function documents ranks files and functions better
(plain file BM25: 67.2 file Acc@5 on the SWE-bench dev split, chunk BM25: 57.1). The indexer writes
one Lucene shard set per granularity (`semantica/stores/index_kinds/granular.py`); the localizer fuses their lists
(`serving/retrievers/granular.py`). Both sides share the names and key formats here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from semantica.schema import Chunk, ParsableEnum, Symbol
from semantica.stores.lucene import LuceneDoc

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


def file_texts_from_chunks(chunks: Iterable[Chunk]) -> dict[str, str]:
    """Each file's text rebuilt from its chunks (chunks tile a file; a line no chunk covers is empty)."""
    lines_by_path: dict[str, dict[int, str]] = {}
    for chunk in chunks:
        lines = lines_by_path.setdefault(chunk.path, {})
        for offset, text in enumerate(chunk.content.split("\n")):
            lines.setdefault(chunk.start_line + offset, text)
    return {path: "\n".join(lines.get(n, "") for n in range(1, max(lines, default=0) + 1))
            for path, lines in lines_by_path.items()}


@dataclass
class GranularDocs:
    """One file's documents at each granularity."""

    file: list[LuceneDoc]
    functions: list[LuceneDoc]

    def of(self, granularity: Granularity) -> list[LuceneDoc]:
        return self.file if granularity is Granularity.FILE else self.functions


def file_documents(path: str, text: str, symbols: Sequence[Symbol]) -> GranularDocs:
    """The whole-file document and one document per outer function of one file."""
    lines = text.split("\n")
    functions = [
        LuceneDoc(function_key(path, s.qualname), "\n".join(lines[s.start_line - 1: s.end_line]), path, s.qualname)
        for s in outer_functions(symbols)
    ]
    return GranularDocs(file=[LuceneDoc(path, text, path, "")], functions=functions)


def snapshot_documents(chunks: Sequence[Chunk], symbols: Sequence[Symbol]) -> Iterator[GranularDocs]:
    """Granular documents of every file of a snapshot, from its chunks and symbols."""
    symbols_by_path: dict[str, list[Symbol]] = {}
    for symbol in symbols:
        symbols_by_path.setdefault(symbol.path, []).append(symbol)
    for path, text in sorted(file_texts_from_chunks(chunks).items()):
        yield file_documents(path, text, symbols_by_path.get(path, []))
