"""Write stage for whole-file and function-level Lucene documents (semantica/granular.py).

A file document holds the file's whole text; a function document holds one function or method with
its nested functions folded in (a nested function is part of the body that holds it, as in the
SWE-bench gold). Both use the chunk shards' code-aware pretokenized text (`semantica.lucene`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from semantica.config import LuceneConfig
from semantica.granular import Granularity, function_key, outer_functions
from semantica.lucene import LuceneDoc, LuceneShardWriter, raw_document
from semantica.schema import Chunk, ShardInfo, Symbol

SHARD_NAME = "shard-{number:03d}"


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


class GranularIndexWriter:
    """Writes each granularity's shards under `<snapshot>/lucene_<granularity>/` and lists them."""

    def __init__(self, config: LuceneConfig) -> None:
        self.config = config

    def write(self, root: Path, raw_docs: dict[Granularity, list[str]]) -> list[ShardInfo]:
        """`raw_docs`: `semantica.lucene.raw_document` lines per granularity; empty ones get no shard."""
        shards: list[ShardInfo] = []
        size = max(1, self.config.shard_max_docs)
        for granularity, docs in raw_docs.items():
            for number, start in enumerate(range(0, len(docs), size)):
                directory = root / granularity.directory / SHARD_NAME.format(number=number)
                writer = LuceneShardWriter(directory, self.config)
                writer.add_raw(docs[start: start + size])
                writer.close()
                shards.append(ShardInfo(granularity.shard_kind, f"{granularity.directory}/{directory.name}",
                                        writer.count, ""))
        return shards

    def write_documents(self, root: Path, documents: Iterable[GranularDocs]) -> list[ShardInfo]:
        raw: dict[Granularity, list[str]] = {g: [] for g in Granularity}
        for docs in documents:
            for granularity in Granularity:
                raw[granularity].extend(raw_document(d) for d in docs.of(granularity))
        return self.write(root, raw)
