"""Write stage: Parquet tables, FAISS and Lucene shards, and the manifest of one snapshot."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.granular import GranularIndexWriter, snapshot_documents
from pipelines.token_cache import TokenVectorBuilder
from semantica.config import Config
from semantica.granular import Granularity
from semantica.graph import CsrGraphStore
from semantica.layout import LUCENE_DIR, VECTORS_DIR, SnapshotPaths, directory_checksums
from semantica.lucene import LuceneDoc, LuceneShardWriter
from semantica.schema import (
    CHUNK_ARROW_SCHEMA,
    EDGE_ARROW_SCHEMA,
    ERROR_ARROW_SCHEMA,
    SCHEMA_VERSION,
    SYMBOL_ARROW_SCHEMA,
    Chunk,
    Edge,
    FileError,
    Manifest,
    ShardInfo,
    Symbol,
    file_node_id,
)
from semantica.source import write_file_blobs
from semantica.vectors import VectorShardPaths, write_shard


def write_table(path: Any, rows: Sequence[Any], schema: pa.Schema) -> None:
    """Rows (dataclasses with `to_row`) -> one Parquet file with a fixed schema."""
    table = pa.Table.from_pylist([r.to_row() for r in rows], schema=schema)
    pq.write_table(table, path)


def shard_ranges(total: int, shard_size: int) -> list[tuple[int, int]]:
    """[start, end) ranges covering `total` items in shards of at most `shard_size` (one if empty)."""
    size = max(1, shard_size)
    return [(start, min(total, start + size)) for start in range(0, total, size)] or [(0, 0)]


@dataclass
class SnapshotContent:
    """Everything one snapshot holds; `vectors[i]` belongs to `chunks[i]`."""

    repo: str
    commit: str
    chunks: list[Chunk]
    vectors: np.ndarray
    symbols: list[Symbol]
    edges: list[Edge]
    errors: list[FileError]
    model_id: str
    stats: dict[str, Any] = field(default_factory=dict)
    token_vectors: TokenVectorBuilder | None = None  # None: no stored token vectors (late interaction encodes)

    files: dict[str, str] = field(default_factory=dict)  # path -> blob sha of every indexed file
    skipped: list[str] = field(default_factory=list)  # paths discovery skipped
    source: dict[str, Any] = field(default_factory=dict)  # semantica.source.SourceRecord


class SnapshotWriter:
    """Writes a snapshot's files into its (temporary) directory and seals them with a manifest."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def write(self, paths: SnapshotPaths, content: SnapshotContent) -> Manifest:
        write_table(paths.chunks, content.chunks, CHUNK_ARROW_SCHEMA)
        write_table(paths.symbols, content.symbols, SYMBOL_ARROW_SCHEMA)
        write_table(paths.edges, content.edges, EDGE_ARROW_SCHEMA)
        write_table(paths.errors, content.errors, ERROR_ARROW_SCHEMA)
        self._write_pagerank(paths, content)
        write_file_blobs(paths.files, content.files, content.skipped)
        shards = (self._write_vectors(paths, content) + self._write_lucene(paths, content)
                  + self._write_granular(paths, content))
        tokens = (content.token_vectors.write(paths.tokens, [c.content_sha for c in content.chunks]).to_dict()
                  if content.token_vectors is not None else {})
        manifest = Manifest(
            repo=content.repo,
            snapshot_id=paths.root.name.removesuffix(".tmp"),
            commit=content.commit,
            created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            model_id=content.model_id,
            model_path=_checkpoint(self.config.encoder.model_path),
            dim=int(content.vectors.shape[1]) if content.vectors.ndim == 2 else 0,
            counts={
                "chunks": len(content.chunks), "symbols": len(content.symbols),
                "edges": len(content.edges), "errors": len(content.errors),
                "files": len({c.path for c in content.chunks}),
                **{f"{g.shard_kind}_docs": sum(s.count for s in shards if s.kind == g.shard_kind) for g in Granularity},
            },
            shards=shards,
            checksums=directory_checksums(paths.root),
            schema_version=SCHEMA_VERSION,
            stats=content.stats,
            token_vectors=tokens,

            source=content.source,
        )
        for shard in manifest.shards:  # a shard's checksum covers all of its files
            prefix = shard.path.removesuffix(".faiss")
            shard.checksum = hashlib.sha256("".join(
                f"{name}:{digest}" for name, digest in sorted(manifest.checksums.items()) if name.startswith(prefix)
            ).encode()).hexdigest()
        paths.write_manifest(manifest)
        return manifest

    def _write_pagerank(self, paths: SnapshotPaths, content: SnapshotContent) -> None:
        """The graph prior, computed once here rather than per query."""
        nodes = [s.symbol_id for s in content.symbols] + [file_node_id(c.path) for c in content.chunks]
        ranks = CsrGraphStore(content.edges, nodes).pagerank(self.config.graph.pagerank_damping)
        table = pa.table({"node": list(ranks), "score": list(ranks.values())},
                         schema=pa.schema([("node", pa.string()), ("score", pa.float64())]))
        pq.write_table(table, paths.pagerank)

    def _write_vectors(self, paths: SnapshotPaths, content: SnapshotContent) -> list[ShardInfo]:
        shards: list[ShardInfo] = []
        for number, (start, end) in enumerate(shard_ranges(len(content.chunks), self.config.faiss.shard_max_vectors)):
            if end <= start:
                break
            shard = VectorShardPaths.of(paths.vectors, f"shard-{number:03d}")
            write_shard(shard, content.vectors[start:end], np.arange(start, end), self.config.faiss)
            shards.append(ShardInfo("faiss", f"{VECTORS_DIR}/{shard.index.name}", end - start, ""))
        return shards

    def _write_lucene(self, paths: SnapshotPaths, content: SnapshotContent) -> list[ShardInfo]:
        shards: list[ShardInfo] = []
        for number, (start, end) in enumerate(shard_ranges(len(content.chunks), self.config.lucene.shard_max_docs)):
            if end <= start:
                break
            directory = paths.lucene / f"shard-{number:03d}"
            writer = LuceneShardWriter(directory, self.config.lucene)
            writer.add(
                LuceneDoc(c.chunk_id, c.content, c.path, c.symbol) for c in content.chunks[start:end]
            )
            writer.close()
            shards.append(ShardInfo("lucene", f"{LUCENE_DIR}/{directory.name}", end - start, ""))
        return shards

    def _write_granular(self, paths: SnapshotPaths, content: SnapshotContent) -> list[ShardInfo]:
        """Whole-file and function-level BM25 shards (`granular.index`); none when it is off."""
        if not self.config.granular.index:
            return []
        return GranularIndexWriter(self.config.lucene).write_documents(
            paths.root, snapshot_documents(content.chunks, content.symbols))


def _checkpoint(model_path: str) -> str:
    """The encoder checkpoint as an absolute path ("" for the packaged default), for the manifest."""
    return str(Path(model_path).expanduser().resolve()) if model_path else ""
