"""What every index kind shares when it writes shards: partition and shard names, content keys, and the
linker that hard-links a shard the previous snapshot already holds (see `pipelines.shards` for the scheme).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from semantica.ondisk.snapshot_paths import SnapshotPaths
from semantica.schema import SCHEMA_VERSION, Chunk, Symbol

log = logging.getLogger(__name__)

PARTITIONS_STAT = "partitions"  # manifest.stats key: the partition count, kept by the next build
KEY_CHARS = 20
LUCENE_DOC_FORMAT = "1"  # bump when `raw_document` or the code tokenizer changes what a document holds


def partition_of(path: str, count: int) -> int:
    """The partition of a file: stable across snapshots, branches and machines."""
    digest = hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % max(1, count)




def pieces(rows: np.ndarray, size: int) -> list[np.ndarray]:
    """A partition's rows cut into shards of at most `size` (a partition over the shard cap)."""
    step = max(1, size)
    return [rows[start:start + step] for start in range(0, len(rows), step)]


def shard_name(partition: int, piece: int, key: str) -> str:
    return f"p{partition:03d}s{piece:02d}-{key[:KEY_CHARS]}"


def content_key(kind: str, header: Iterable[str], items: Iterable[bytes | str]) -> str:
    """sha256 over a shard's kind, its settings and what it is built from, in order."""
    digest = hashlib.sha256(f"{kind}\x00{SCHEMA_VERSION}\x00".encode())
    for part in header:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    for item in items:
        digest.update(item if isinstance(item, bytes) else item.encode("utf-8", "surrogatepass"))
        digest.update(b"\x01")
    return digest.hexdigest()


@dataclass
class PreviousShards:
    """The published snapshot this build may link from (the same repository and branch)."""

    root: Path | None = None
    checksums: dict[str, str] = field(default_factory=dict)
    partitions: int = 0

    @staticmethod
    def of(paths: SnapshotPaths | None) -> PreviousShards:
        """Its manifest's checksums and partition count; nothing (build everything) when unreadable."""
        if paths is None:
            return PreviousShards()
        try:
            manifest = paths.read_manifest()
        except Exception:  # a broken previous snapshot: this build writes every shard
            log.warning("previous snapshot %s is unreadable; writing every shard", paths.root, exc_info=True)
            return PreviousShards()
        return PreviousShards(paths.root, dict(manifest.checksums), int(manifest.stats.get(PARTITIONS_STAT, 0) or 0))


@dataclass
class ShardReuse:
    """Shards hard-linked from the previous snapshot and shards written, per kind (for stats and tests)."""

    linked: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str, linked: bool) -> None:
        counts = self.linked if linked else self.written
        counts[kind] = counts.get(kind, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {"linked": dict(self.linked), "written": dict(self.written)}


class ShardLinker:
    """Hard-links a shard (a file, or a directory of files) from the previous snapshot when it has one
    of the same name; records the linked files' checksums so nobody hashes them again."""

    def __init__(self, previous: PreviousShards, target: Path, enabled: bool = True) -> None:
        self.previous = previous
        self.target = target
        self.enabled = enabled and previous.root is not None
        self.trusted: dict[str, str] = {}  # relative path -> checksum, from the previous (verified) manifest
        self.reuse = ShardReuse()

    def link(self, relative: str, kind: str) -> bool:
        """True when linked; False when the shard must be built (absent, or the link failed)."""
        linked = self._link(relative) if self.enabled else False
        self.reuse.count(kind, linked)
        return linked

    def _link(self, relative: str) -> bool:
        assert self.previous.root is not None
        source = self.previous.root / relative
        try:
            if source.is_file():
                files = [source]
            elif source.is_dir():
                files = sorted(p for p in source.rglob("*") if p.is_file())
            else:
                return False
        except OSError:  # removed while listed (the indexer pins the previous snapshot; other callers may not)
            log.info("cannot list shard %s of the previous snapshot; building it", relative, exc_info=True)
            return False
        names = [f.relative_to(self.previous.root).as_posix() for f in files]
        if not files or any(n not in self.previous.checksums for n in names):
            return False
        try:
            for file, name in zip(files, names):
                destination = self.target / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                os.link(file, destination)
        except OSError:  # pruned under us, or a filesystem without hard links: build it instead
            log.info("cannot link shard %s from the previous snapshot; building it", relative, exc_info=True)
            destination = self.target / relative
            if destination.is_dir():
                shutil.rmtree(destination, ignore_errors=True)
            else:
                destination.unlink(missing_ok=True)
            return False
        for name in names:
            self.trusted[name] = self.previous.checksums[name]
        return True




@dataclass
class ShardInputs:
    """What the shards of one snapshot are built from; `vectors[i]` belongs to `chunks[i]`."""

    chunks: list[Chunk]
    vectors: np.ndarray
    symbols: list[Symbol]
    model_id: str
    token_vectors: Any = None  # pipelines.token_cache.TokenVectorBuilder; None: no stored token vectors
    history: Any = None  # semantica.stores.history.History of the snapshot's commit; None: not a git source, or off
    texts: Any = None  # semantica.stores.index_kinds.exact.FileTexts: every indexed file's text (None: no exact index)
    functions: Any = None  # pipelines.function_vectors.StoredFunctions: the runner's function vectors (None: none)


