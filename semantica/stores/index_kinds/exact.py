"""Exact-search shards (`exact/`, semantica.stores.exact): every indexed file's whole content, as line-aligned
segments with their trigram postings, partitioned by the same path hash as the chunks and keyed by each file's
path and blob sha, so a file that did not change keeps its shard (hard-linked from the previous snapshot, its
content never read again).

The partition count comes from the text's size (`exact.shard_bytes` per shard), not from the chunks': every
pattern asks every shard, and each FTS5 query has a fixed cost, so a shard holds megabytes rather than the
chunks' thousand-chunk partitions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from semantica.schema import ShardInfo
from semantica.stores.exact.store import EXACT_FORMAT, ExactShard, StoredFile, write_shard
from semantica.stores.index_kinds.base import KindWritten, WriteContext
from semantica.stores.index_kinds.sharding import content_key, partition_of, shard_name

KIND = "exact"
EXACT_DIR = "exact"
SHARD_SUFFIX = ".sqlite"


class FileTexts(Protocol):
    """The snapshot's indexed files (path, blob sha, in path order), their size in bytes and a reader of their
    decoded text."""

    files: list[tuple[str, str]]
    bytes: int

    def read(self, wanted: list[tuple[str, str]]) -> Iterator[StoredFile]: ...


class ExactKind:
    name = KIND
    directories = (EXACT_DIR,)

    def write(self, context: WriteContext) -> KindWritten:
        texts: FileTexts | None = context.inputs.texts
        if not context.config.exact.index or texts is None:
            return KindWritten()
        count = partition_count(texts.bytes, context.config.exact.shard_bytes, context.config.shards.max_partitions)
        partitions: list[list[tuple[str, str]]] = [[] for _ in range(count)]
        for path, blob in texts.files:
            partitions[partition_of(path, count)].append((path, blob))
        shards: list[ShardInfo] = []
        for number, files in enumerate(partitions):
            if not files:
                continue
            key = content_key(KIND, [EXACT_FORMAT, str(context.config.exact.compress_level)],
                              (f"{path}\x00{blob}" for path, blob in files))
            relative = f"{EXACT_DIR}/{shard_name(number, 0, key)}{SHARD_SUFFIX}"
            count = len(files)
            if not context.linker.link(relative, KIND):
                count = write_shard(context.root / relative, texts.read(files), context.config.exact.compress_level)
            shards.append(ShardInfo(KIND, relative, count, ""))
        return KindWritten(shards, {"exact_files": sum(s.count for s in shards)})

    def open(self, snapshot: Any) -> list[ExactShard]:
        """One reader per shard; [] for a snapshot built without the kind."""
        return [ExactShard(p) for p in snapshot.shard_paths(KIND)]


def partition_count(text_bytes: int, shard_bytes: int, max_partitions: int) -> int:
    """Partitions of about `shard_bytes` of text each, at least one and at most `max_partitions`."""
    return max(1, min(max_partitions, math.ceil(text_bytes / max(1, shard_bytes))))


def stored(files: Iterable[Any]) -> Iterator[StoredFile]:
    """Discovery's decoded files (objects with path, blob_sha, text; anything else is skipped) as stored rows."""
    for file in files:
        text = getattr(file, "text", None)
        if text is not None:
            yield StoredFile(file.path, file.blob_sha, text)
