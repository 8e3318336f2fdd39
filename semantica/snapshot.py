"""Read side of one published snapshot: tables in memory, FAISS and Lucene shards opened lazily."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pyarrow.parquet as pq

from semantica.config import Config
from semantica.freshness import Freshness, FreshnessChecker
from semantica.graph import GRAPH_STORE_EMBEDDED, GRAPH_STORE_MEMGRAPH, CsrGraphStore, GraphStore
from semantica.layout import IndexLayout, SnapshotPaths, branch_key, split_branch_key
from semantica.lucene import LuceneShardSearcher
from semantica.schema import Chunk, Edge, Manifest, Symbol
from semantica.source import FileBlobs
from semantica.vectors import VectorShardPaths, VectorShardSearcher


@dataclass
class Snapshot:
    """One immutable snapshot, opened for reading."""

    paths: SnapshotPaths
    manifest: Manifest
    config: Config
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @staticmethod
    def open(paths: SnapshotPaths, config: Config) -> Snapshot:
        return Snapshot(paths=paths, manifest=paths.read_manifest(), config=config)

    @property
    def repo(self) -> str:
        return self.manifest.repo

    @property
    def snapshot_id(self) -> str:
        return self.manifest.snapshot_id

    @cached_property
    def chunks(self) -> list[Chunk]:
        """Chunks in row order (FAISS ids are row numbers into this list)."""
        return [Chunk.from_row(r) for r in pq.read_table(self.paths.chunks).to_pylist()]

    @cached_property
    def chunk_by_id(self) -> dict[str, Chunk]:
        return {c.chunk_id: c for c in self.chunks}

    @cached_property
    def chunks_by_path(self) -> dict[str, list[Chunk]]:
        grouped: dict[str, list[Chunk]] = {}
        for chunk in self.chunks:
            grouped.setdefault(chunk.path, []).append(chunk)
        return grouped

    def file_lines(self, path: str) -> list[str]:
        """A file's lines rebuilt from its chunks (lines no chunk covers are empty)."""
        lines: dict[int, str] = {}
        for chunk in self.chunks_by_path.get(path, []):
            for offset, text in enumerate(chunk.content.split("\n")):
                lines.setdefault(chunk.start_line + offset, text)
        last = max(lines, default=0)
        return [lines.get(n, "") for n in range(1, last + 1)]

    @cached_property
    def file_blobs(self) -> FileBlobs:
        """Indexed files' blob shas (`files.parquet`; from the chunks for older snapshots)."""
        if self.paths.files.exists():
            return FileBlobs.read(self.paths.files)
        return FileBlobs({c.path: c.blob_sha for c in self.chunks}, set())

    def freshness(self) -> Freshness:
        """Is this snapshot behind its source now? (git status + the few changed files; see semantica.freshness)"""
        return FreshnessChecker(self.config.freshness).check(self.manifest, lambda: self.file_blobs)

    @cached_property
    def symbols(self) -> list[Symbol]:
        return [Symbol.from_row(r) for r in pq.read_table(self.paths.symbols).to_pylist()]

    @cached_property
    def edges(self) -> list[Edge]:
        return [Edge.from_row(r) for r in pq.read_table(self.paths.edges).to_pylist()]

    @cached_property
    def pagerank(self) -> dict[str, float]:
        if not self.paths.pagerank.exists():
            return {}
        table = pq.read_table(self.paths.pagerank)
        return dict(zip(table.column("node").to_pylist(), table.column("score").to_pylist()))

    @cached_property
    def graph_store(self) -> GraphStore:
        """The embedded CSR graph, or Memgraph when `graph.store: memgraph` (conf/cluster.yaml)."""
        if self.config.graph.store == GRAPH_STORE_MEMGRAPH:
            from semantica.memgraph import MemgraphGraphStore, connect

            return MemgraphGraphStore(connect(self.config.graph.memgraph_uri), self.repo, self.snapshot_id)
        if self.config.graph.store != GRAPH_STORE_EMBEDDED:
            raise ValueError(f"graph.store={self.config.graph.store!r}: use {GRAPH_STORE_EMBEDDED!r} or "
                             f"{GRAPH_STORE_MEMGRAPH!r}")
        return CsrGraphStore(self.edges, [s.symbol_id for s in self.symbols])

    def shard_paths(self, kind: str) -> list[Path]:
        return [self.paths.root / s.path for s in self.manifest.shards if s.kind == kind]

    @cached_property
    def vector_shards(self) -> list[VectorShardSearcher]:
        with self._lock:
            return [
                VectorShardSearcher(VectorShardPaths(p, p.with_name(p.name.removesuffix(".faiss") + ".ids.npy")),
                                    self.config.faiss)
                for p in self.shard_paths("faiss")
            ]

    @cached_property
    def lucene_shards(self) -> list[LuceneShardSearcher]:
        with self._lock:
            return [LuceneShardSearcher(p, self.config.lucene) for p in self.shard_paths("lucene")]


class SnapshotSet:
    """The current snapshot of every repository, re-resolved when CURRENT moves (hot swap)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.layout = IndexLayout(config.paths.index_root)
        self._open: dict[str, Snapshot] = {}
        self._lock = threading.Lock()

    def repos(self) -> list[str]:
        return self.layout.repos()

    def default_repos(self) -> list[str]:
        """Repositories at their default branch (what a query without `branch` searches)."""
        return [r for r in self.layout.repos() if not split_branch_key(r)[1]]

    def names_for(self, repos: list[str], branch: str | None) -> list[str]:
        """Published names for `repos` (default: all) at `branch` (default: the default branch)."""
        if not branch:
            return list(repos) or self.default_repos()
        if repos:
            return [branch_key(r, branch) for r in repos]
        return [r for r in self.layout.repos() if split_branch_key(r)[1] == branch]

    def get(self, repo: str) -> Snapshot:
        """The published snapshot of `repo` (UnknownRepoError when none); reopened after a publish."""
        paths = self.layout.current(repo)
        with self._lock:
            snapshot = self._open.get(repo)
            if snapshot is None or snapshot.paths.root != paths.root:
                snapshot = Snapshot.open(paths, self.config)
                self._open[repo] = snapshot
            return snapshot
