"""The index-kind protocol: one kind of index a snapshot stores (its files, how they are written and how a
reader opens them). The writer iterates the registered kinds in order; a snapshot opens one by name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from semantica.config import Config
from semantica.schema import ShardInfo
from semantica.stores.index_kinds.sharding import ShardInputs, ShardLinker

if TYPE_CHECKING:
    from semantica.snapshot import Snapshot


@dataclass
class WriteContext:
    """One snapshot being written: its directory, inputs, partitions (chunk rows per partition) and the linker
    that reuses the previous snapshot's identical shards."""

    root: Path
    inputs: ShardInputs
    config: Config
    partitions: int
    rows: list[np.ndarray]
    linker: ShardLinker


@dataclass
class KindWritten:
    """What one kind wrote: manifest shard entries, counts (`manifest.counts`) and other manifest fields."""

    shards: list[ShardInfo] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)  # e.g. {"token_vectors": {...}}


class IndexKind(Protocol):
    """One kind of index: `name` (the registry key), `directories` (where its files live in a snapshot),
    `write` (build its files, reusing linked shards) and `open` (a reader over a published snapshot, or None
    when the snapshot stores none)."""

    name: str
    directories: tuple[str, ...]

    def write(self, context: WriteContext) -> KindWritten: ...

    def open(self, snapshot: Snapshot) -> Any: ...
