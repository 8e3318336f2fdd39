"""Partitioned, content-addressed shards: a new snapshot rebuilds only the partitions whose content changed.

Chunks go to `count` partitions by a hash of their path (all chunks of a file stay together; the count
is kept from the previous snapshot while its partitions stay within 2x of `shards.partition_chunks`).
Each registered index kind (`semantica.stores.index_kinds`: FAISS, Lucene, token vectors,
history, the localizer's fields, function vectors, exact) writes its shards in turn, each named
`p<partition>s<piece>-<key>`. The key is a sha256 over what the shard is built from:
- FAISS: the encoder, the index settings and the vectors' bytes;
- Lucene: each document's id, path, symbol and content sha (the raw document is a function of these);
- token vectors: the codec and each chunk's content sha and token count.
A shard of the same name in the previous snapshot therefore holds exactly these bytes and is hard-linked
instead of rebuilt. A snapshot stays self-contained and immutable (links, not references: pruning the
old snapshot leaves the linked files), and its checksums for linked files are the previous manifest's.
FAISS row ids (chunk rows of this snapshot) and `tokens/rows.npy` are always written: rows move when
another partition grows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from semantica.config import Config, ConfigError, ShardsConfig
from semantica.schema import ShardInfo
from semantica.stores.index_kinds import WriteContext, index_kind
from semantica.stores.index_kinds.sharding import (  # noqa: F401 (re-exported: the write stage's names)
    PARTITIONS_STAT,
    PreviousShards,
    ShardInputs,
    ShardLinker,
    ShardReuse,
    partition_of,
)

REUSE_STAT = "shard_reuse"  # manifest.stats key: shards linked and written per kind


def partition_count(total: int, config: ShardsConfig, previous: int = 0) -> int:
    """How many partitions `total` chunks get: the previous count while each holds within 2x of the
    target (so the next build can reuse its shards), else total/target, at most `max_partitions`."""
    target = max(1, config.partition_chunks)
    cap = max(1, config.max_partitions)
    if 0 < previous <= cap and previous * target / 2 <= total <= previous * target * 2:
        return previous
    return max(1, min(cap, math.ceil(total / target)))


def partition_rows(paths: Sequence[str], count: int) -> list[np.ndarray]:
    """Row numbers (ascending) of each partition's items, given each item's path."""
    known: dict[str, int] = {}
    assigned = np.empty(len(paths), dtype=np.int64)
    for row, path in enumerate(paths):
        number = known.get(path)
        if number is None:
            number = known[path] = partition_of(path, count)
        assigned[row] = number
    return [np.flatnonzero(assigned == number) for number in range(count)]


@dataclass
class ShardsWritten:
    """The manifest's shard list, counts and other fields (e.g. token vectors) and the partition count."""

    shards: list[ShardInfo]
    tokens: dict[str, Any]
    partitions: int
    counts: dict[str, int] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


class PartitionedShardWriter:
    """Writes a snapshot's index kinds (`index.kinds`, looked up in the registry) partition by partition,
    hard-linking every shard whose content key the previous snapshot already holds."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def write(self, root: Path, inputs: ShardInputs, linker: ShardLinker) -> ShardsWritten:
        count = partition_count(len(inputs.chunks), self.config.shards, linker.previous.partitions)
        rows = partition_rows([c.path for c in inputs.chunks], count)
        context = WriteContext(root, inputs, self.config, count, rows, linker)
        shards: list[ShardInfo] = []
        counts: dict[str, int] = {}
        fields: dict[str, Any] = {}
        for name in self.config.index.kinds:
            try:
                kind = index_kind(name)
            except KeyError as exc:
                raise ConfigError(f"index.kinds: {exc.args[0]}") from None
            written = kind.write(context)
            shards += written.shards
            counts.update(written.counts)
            fields.update(written.manifest)
        return ShardsWritten(shards, fields.get("token_vectors", {}), count, counts, fields)
