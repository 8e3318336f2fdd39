"""Write stage for whole-file and function-level Lucene documents (semantica/stores/granular.py).

A file document holds the file's whole text; a function document holds one function or method with
its nested functions folded in (a nested function is part of the body that holds it, as in the
SWE-bench gold). Both use the chunk shards' code-aware pretokenized text (`semantica.stores.lucene`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from semantica.config import LuceneConfig
from semantica.schema import ShardInfo
from semantica.stores.granular import (  # noqa: F401 (re-exported: the documents live beside the names they share)
    GranularDocs,
    Granularity,
    file_documents,
    file_texts_from_chunks,
    snapshot_documents,
)
from semantica.stores.lucene import LuceneShardWriter, raw_document

SHARD_NAME = "shard-{number:03d}"


class GranularIndexWriter:
    """Writes each granularity's shards under `<snapshot>/lucene_<granularity>/` and lists them."""

    def __init__(self, config: LuceneConfig) -> None:
        self.config = config

    def write(self, root: Path, raw_docs: dict[Granularity, list[str]]) -> list[ShardInfo]:
        """`raw_docs`: `semantica.stores.lucene.raw_document` lines per granularity; empty ones get no shard."""
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
