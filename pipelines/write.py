"""Write stage: Parquet tables, every registered index kind (`semantica.stores.index_kinds`) and the manifest of
one snapshot.

The shards are partitioned and content-addressed (`pipelines.shards`): every shard the previous snapshot
of the same repository already holds is hard-linked, so a one-file change writes one partition.
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.shards import (
    PARTITIONS_STAT,
    REUSE_STAT,
    PartitionedShardWriter,
    PreviousShards,
    ShardInputs,
    ShardLinker,
    ShardReuse,
)
from pipelines.token_cache import TokenVectorBuilder
from semantica.config import Config
from semantica.encoder_identity import parse_model_id
from semantica.errors import ErrorKind
from semantica.ondisk.snapshot_paths import SnapshotPaths, directory_checksums
from semantica.ondisk.source import write_file_blobs
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
    Symbol,
    file_node_id,
)
from semantica.stores.graph import CsrGraphStore

MIB = 1024 * 1024
DISK_FULL_TEXT = "No space left on device"  # strerror(ENOSPC): in a Java IOException's and a FAISS write error's text
CAUSE_DEPTH = 8  # how far down an exception's causes a full disk is looked for
PAGERANK_DAMPING = 0.85  # the index-time PageRank prior's damping (the usual 0.85; the graph retriever weighs the prior)


class DiskFullError(OSError):
    """No space left while a snapshot was written: the build is dropped and the published snapshot stays
    current. The message names the directory and its free space; no Python or Java trace."""

    error_kind = ErrorKind.UNAVAILABLE

    def __init__(self, directory: Path) -> None:
        free = _free_bytes(directory)
        super().__init__(errno.ENOSPC, f"no space left on device while writing a snapshot under {directory} "
                                       f"({free / MIB:.1f} MiB free there); the previous snapshot stays published: "
                                       f"free some space or point paths.index_root elsewhere", str(directory))

    def __str__(self) -> str:
        return str(self.strerror)


def _free_bytes(directory: Path) -> int:
    for folder in (directory, *directory.parents):
        try:
            return shutil.disk_usage(folder).free
        except OSError:
            continue
    return 0


def is_disk_full(exc: BaseException | None) -> bool:
    """ENOSPC from Python (Parquet, NumPy files, a short Lucene shard), SQLITE_FULL (exact shards), from the JVM (a
    Lucene IOException) or from FAISS's C++ writer (a RuntimeError naming the file and the errno's text), or a cause
    of it."""
    seen = 0
    while exc is not None and seen < CAUSE_DEPTH:
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        if getattr(exc, "classname", None) and DISK_FULL_TEXT in str(getattr(exc, "innermessage", "") or ""):
            return True
        if type(exc) is RuntimeError and DISK_FULL_TEXT in str(exc):
            return True
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:  # the exact kind's shards
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def write_table(path: Any, rows: Sequence[Any], schema: pa.Schema) -> None:
    """Rows (dataclasses with `to_row`) -> one Parquet file with a fixed schema."""
    table = pa.Table.from_pylist([r.to_row() for r in rows], schema=schema)
    pq.write_table(table, path)


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
    source: dict[str, Any] = field(default_factory=dict)  # semantica.ondisk.source.SourceRecord
    previous: SnapshotPaths | None = None  # the published snapshot whose unchanged shards are hard-linked
    history: Any = None  # semantica.stores.history.History of the snapshot's commit (None: not a git source, or off)
    texts: Any = None  # semantica.stores.index_kinds.exact.FileTexts of the indexed files (None: no exact index)
    functions: Any = None  # pipelines.function_vectors.StoredFunctions (None: the dense channel stores none)
    pending: list[str] = field(default_factory=list)  # kinds left out of this snapshot, built by its successor


@dataclass
class WriteResult:
    """The sealed manifest, the files linked from the previous snapshot (relative path -> checksum,
    not hashed again at publish) and what was linked and written per shard kind."""

    manifest: Manifest
    trusted: dict[str, str]
    reuse: ShardReuse


class SnapshotWriter:
    """Writes a snapshot's files into its (temporary) directory and seals them with a manifest."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def write(self, paths: SnapshotPaths, content: SnapshotContent) -> WriteResult:
        """Every file of the snapshot into `paths.root` (a `.tmp` directory no reader opens); a full disk is a
        `DiskFullError`, and the caller discards the directory."""
        try:
            return self._write(paths, content)
        except Exception as exc:
            if is_disk_full(exc):
                raise DiskFullError(paths.root.parent) from None
            raise

    def _write(self, paths: SnapshotPaths, content: SnapshotContent) -> WriteResult:
        write_table(paths.chunks, content.chunks, CHUNK_ARROW_SCHEMA)
        write_table(paths.symbols, content.symbols, SYMBOL_ARROW_SCHEMA)
        write_table(paths.edges, content.edges, EDGE_ARROW_SCHEMA)
        write_table(paths.errors, content.errors, ERROR_ARROW_SCHEMA)
        self._write_pagerank(paths, content)
        write_file_blobs(paths.files, content.files, content.skipped)
        linker = ShardLinker(PreviousShards.of(content.previous), paths.root, self.config.shards.reuse)
        written = PartitionedShardWriter(self.config).write(
            paths.root, ShardInputs(content.chunks, content.vectors, content.symbols, content.model_id,
                                    content.token_vectors, content.history, content.texts,
                                    content.functions),
            linker)
        shards = written.shards
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
                **written.counts,
            },
            shards=shards,
            checksums=directory_checksums(paths.root, known=linker.trusted),
            schema_version=SCHEMA_VERSION,
            stats={**content.stats, PARTITIONS_STAT: written.partitions, REUSE_STAT: linker.reuse.to_dict()},
            source=content.source,
            runtime=parse_model_id(content.model_id).runtime_name,
            export_sha=parse_model_id(content.model_id).export_sha,
            pending=list(content.pending),
            **written.manifest,  # Manifest fields an index kind fills (token_vectors)
        )
        for shard in manifest.shards:  # a shard's checksum covers all of its files (`x.faiss`: `x.*`)
            prefix = str(PurePosixPath(shard.path).with_suffix(""))
            shard.checksum = hashlib.sha256("".join(
                f"{name}:{digest}" for name, digest in sorted(manifest.checksums.items()) if name.startswith(prefix)
            ).encode()).hexdigest()
        paths.write_manifest(manifest)
        return WriteResult(manifest, linker.trusted, linker.reuse)

    def _write_pagerank(self, paths: SnapshotPaths, content: SnapshotContent) -> None:
        """The graph prior, computed once here rather than per query."""
        nodes = [s.symbol_id for s in content.symbols] + [file_node_id(c.path) for c in content.chunks]
        ranks = CsrGraphStore(content.edges, nodes).pagerank(PAGERANK_DAMPING)
        table = pa.table({"node": list(ranks), "score": list(ranks.values())},
                         schema=pa.schema([("node", pa.string()), ("score", pa.float64())]))
        pq.write_table(table, paths.pagerank)

def _checkpoint(model_path: str) -> str:
    """The encoder checkpoint as an absolute path ("" for the packaged default), for the manifest."""
    return str(Path(model_path).expanduser().resolve()) if model_path else ""
