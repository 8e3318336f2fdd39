"""Read side of one published snapshot: tables in memory, each index kind (`semantica.stores.index_kinds`) opened
lazily by name."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from semantica.api import QueryError
from semantica.config import Config
from semantica.errors import public_message
from semantica.layout import IndexLayout, RepoEntry, RepoState
from semantica.ondisk.branch_keys import names_at_branch, split_branch_key
from semantica.ondisk.freshness import Freshness, FreshnessChecker
from semantica.ondisk.layout_errors import BrokenSnapshotError, LayoutError, UnknownRepoError
from semantica.ondisk.repo_names import normalize_repo_name
from semantica.ondisk.snapshot_paths import SnapshotPaths
from semantica.ondisk.table_checks import DamagedTableError, damaged_error, damaged_tables
from semantica.runtime.once_by_name import OnceByName
from semantica.stores.graph import GRAPH_STORE_EMBEDDED, GRAPH_STORE_MEMGRAPH, CsrGraphStore, GraphStore
from semantica.stores.index_kinds import index_kind
from semantica.stores.index_kinds.history import KIND as HISTORY_KIND
from semantica.stores.index_kinds.lucene import KIND as LUCENE_KIND
from semantica.stores.index_kinds.tokens import KIND as TOKENS_KIND
from semantica.stores.index_kinds.vectors import KIND as VECTORS_KIND
from semantica.stores.lucene import LuceneShardSearcher
from semantica.stores.lucene_multi import LuceneMultiShardSearcher

if TYPE_CHECKING:
    from semantica.stores.history import HistorySearcher
from semantica.ondisk.source import FileBlobs
from semantica.schema import Chunk, Edge, Manifest, Symbol, chunk_lines
from semantica.stores import memgraph  # its client is looked up per call (a test records it there)
from semantica.stores.token_vectors import StoredTokenVectors
from semantica.stores.vectors import VectorShardSearcher

log = logging.getLogger(__name__)
SNAPSHOT_STAGE = "snapshot"  # the `degraded` entry of a repository that cannot answer (search, grep, graph)
FILE_LINES_KEPT = 256
"""Files whose rebuilt lines a snapshot keeps: every answer widens its hits from their files' lines, and a
rebuild splits each of the file's chunks again (milliseconds for a long file)."""
def read_parquet(path: Path) -> pa.Table:
    """One Parquet file, read by pyarrow's file reader: `pq.read_table` goes through `pyarrow.dataset`,
    which imports pandas (seconds of a cold CLI query under load)."""
    return pq.ParquetFile(path).read()


def read_table(paths: SnapshotPaths, path: Path, repo: str) -> pa.Table:
    """A table of a published snapshot; one that cannot be read is a `DamagedTableError` naming it."""
    try:
        return read_parquet(path)
    except Exception as exc:
        log.warning("table %s of %r cannot be read", path, repo, exc_info=True)
        raise DamagedTableError(repo, [path.relative_to(paths.root).as_posix()], public_message(exc)) from exc


@dataclass
class Snapshot:
    """One immutable snapshot, opened for reading."""

    paths: SnapshotPaths
    manifest: Manifest
    config: Config
    _indexes: OnceByName = field(default_factory=OnceByName, repr=False)  # kinds open in parallel, each once

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
        return Chunk.from_table(self._table(self.paths.chunks))

    @cached_property
    def chunk_by_id(self) -> dict[str, Chunk]:
        return {c.chunk_id: c for c in self.chunks}

    @cached_property
    def chunk_row(self) -> dict[str, int]:
        """chunk id -> row (the row of its FAISS vector and of its stored token vectors)."""
        return {c.chunk_id: row for row, c in enumerate(self.chunks)}

    def _table(self, path: Path) -> pa.Table:
        return read_table(self.paths, path, self.repo)

    def building(self, kind: str) -> bool:
        """Whether index `kind` is still being built by a successor of this snapshot (`index.dense_later`): the
        stages that read it use what is stored and encode nothing in its place."""
        return kind in self.manifest.pending

    def index(self, kind: str) -> Any:
        """The reader of one index kind (`semantica.stores.index_kinds`: "faiss", "lucene", "tokens",
        "history" or a registered one), opened once per snapshot; KeyError for an unregistered kind."""
        return self._indexes.get(kind, lambda: self._open_index(kind))

    def _open_index(self, kind: str) -> Any:
        registered = index_kind(kind)
        try:
            return registered.open(self)
        except Exception as exc:  # a cut file of the kind: say which, as a table reader does
            damaged = {name: why for name, why in damaged_tables(self.paths, self.manifest).items()
                       if name.split("/", 1)[0] in registered.directories}
            if damaged:
                raise damaged_error(self.repo, damaged) from exc
            raise

    def opened(self) -> set[str]:
        """The index kinds opened so far (a prefetch opens them before the first query needs them)."""
        return self._indexes.names()

    @property
    def token_vectors(self) -> StoredTokenVectors | None:
        """The stored late-interaction token vectors (memory-mapped); None for a snapshot built without them."""
        return self.index(TOKENS_KIND)

    @cached_property
    def chunks_by_path(self) -> dict[str, list[Chunk]]:
        grouped: dict[str, list[Chunk]] = {}
        for chunk in self.chunks:
            grouped.setdefault(chunk.path, []).append(chunk)
        return grouped

    def file_lines(self, path: str) -> list[str]:
        """A file's lines rebuilt from its chunks (lines no chunk covers are empty); the last files asked for are
        kept (the snapshot never changes), each caller gets its own list."""
        return list(self._kept_file_lines(path))

    @cached_property
    def _kept_file_lines(self) -> Callable[[str], tuple[str, ...]]:
        by_path = self.chunks_by_path  # the cache holds the chunks, not the snapshot
        return functools.lru_cache(maxsize=FILE_LINES_KEPT)(lambda path: tuple(chunk_lines(by_path.get(path, []))))

    @cached_property
    def file_blobs(self) -> FileBlobs:
        """Indexed files' blob shas (`files.parquet`; from the chunks for older snapshots)."""
        if self.paths.files.exists():
            try:
                return FileBlobs.read(self.paths.files)
            except Exception as exc:
                raise DamagedTableError(self.repo, [self.paths.files.name], public_message(exc)) from exc
        return FileBlobs({c.path: c.blob_sha for c in self.chunks}, set())

    def freshness(self) -> Freshness:
        """Is this snapshot behind its source now? (git status + the few changed files; see semantica.ondisk.freshness)"""
        return FreshnessChecker(self.config.freshness).check(self.manifest, lambda: self.file_blobs)

    def checked_freshness(self) -> dict[str, Any]:
        """`freshness()` as a dict; one that cannot be checked is `stale: null` with the reason, never an error
        of the answer or the listing that asks."""
        try:
            return self.freshness().to_dict()
        except Exception as exc:  # the answer stands; its freshness is unknown
            return unknown_freshness(self.repo, exc, self.snapshot_id)

    @property
    def history(self) -> HistorySearcher | None:
        """The snapshot's history searcher (semantica.stores.history.HistorySearcher), or None when it stores none."""
        return self.index(HISTORY_KIND)

    @cached_property
    def symbols(self) -> list[Symbol]:
        return Symbol.from_table(self._table(self.paths.symbols))

    @cached_property
    def edges(self) -> list[Edge]:
        return Edge.from_table(self._table(self.paths.edges))

    @cached_property
    def pagerank(self) -> dict[str, float]:
        if not self.paths.pagerank.exists():
            return {}
        table = self._table(self.paths.pagerank)
        return dict(zip(table.column("node").to_pylist(), table.column("score").to_pylist()))

    @cached_property
    def graph_store(self) -> GraphStore:
        """The embedded CSR graph, or Memgraph when `graph.store: memgraph` (conf/cluster.yaml)."""
        if self.config.graph.store == GRAPH_STORE_MEMGRAPH:
            return memgraph.MemgraphGraphStore(memgraph.connect(self.config.graph.memgraph_uri), self.repo, self.snapshot_id)
        if self.config.graph.store != GRAPH_STORE_EMBEDDED:
            raise ValueError(f"graph.store={self.config.graph.store!r}: use {GRAPH_STORE_EMBEDDED!r} or "
                             f"{GRAPH_STORE_MEMGRAPH!r}")
        return CsrGraphStore(self.edges, [s.symbol_id for s in self.symbols])

    def shard_paths(self, kind: str) -> list[Path]:
        return [self.paths.root / s.path for s in self.manifest.shards if s.kind == kind]

    @property
    def vector_shards(self) -> list[VectorShardSearcher]:
        return self.index(VECTORS_KIND)

    @property
    def lucene_shards(self) -> list[LuceneShardSearcher | LuceneMultiShardSearcher]:
        """One searcher: the shard's own, or one over all shards with collection-wide BM25 statistics."""
        return self.index(LUCENE_KIND)


@dataclass
class RepoHealth:
    """Whether one repository can answer (for /healthz, `semantica repos`, `degraded`); `error` is
    short and path-free (the log keeps the detail)."""

    repo: str
    status: RepoState
    snapshot_id: str = ""
    commit: str = ""  # `Manifest.built_commit`: a working tree's HEAD too
    created: str = ""
    error: str = ""
    dirty: bool = False  # `Manifest.built_dirty`

    @property
    def ok(self) -> bool:
        return self.status is RepoState.OK

    def to_dict(self) -> dict[str, Any]:
        return {"repo": self.repo, "status": self.status.value, "snapshot": self.snapshot_id,
                "commit": self.commit, "dirty": self.dirty, "created": self.created, "error": self.error}

    @staticmethod
    def of(entry: RepoEntry) -> RepoHealth:
        m = entry.manifest
        return RepoHealth(entry.repo, entry.state, entry.snapshot_id, m.built_commit if m else "",
                          m.created if m else "", entry.error, m.built_dirty if m else False)


def unknown_freshness(repo: str, exc: BaseException, snapshot_id: str = "") -> dict[str, Any]:
    """The freshness of a snapshot that could not be checked (or opened): `stale: null` and why."""
    return Freshness(repo=repo, snapshot_id=snapshot_id, commit="", built_at="", reason=public_message(exc)).to_dict()


def answer_freshness(config: Config, snapshots: Iterable[Snapshot]) -> dict[str, dict[str, Any]]:
    """The `freshness` block of every answer on every front (search, grep, graph, map): an object keyed by
    repository whose values are `Freshness`, for the snapshots the answer read, checked now (a watched tree with no
    event since its last check reuses it: `semantica.ondisk.tree_watch`);
    `{}` when `freshness.enabled` is off."""
    if not config.freshness.enabled:
        return {}
    return {snapshot.repo: snapshot.checked_freshness() for snapshot in snapshots}


class SnapshotSet:
    """The current snapshot of every repository, re-resolved when CURRENT moves (hot swap).

    One broken snapshot never takes the others down: `resolve` opens what it can and reports the rest."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.layout = IndexLayout(config.paths.index_root, config.index.stale_build_s)
        self._open: dict[str, Snapshot] = {}
        self._lock = threading.Lock()

    def repos(self) -> list[str]:
        return self.layout.repos()

    def default_repos(self) -> list[str]:
        """Repositories at their default branch (what a query without `branch` searches)."""
        return [r for r in self.layout.repos() if not split_branch_key(r)[1]]

    def names_for(self, repos: list[str], branch: str | None) -> list[str]:
        """Published names for `repos` (default: all) at `branch` (default: the default branch); a branch no
        repository was indexed at is BranchNotIndexed (`semantica.ondisk.branch_keys.names_at_branch`)."""
        if not branch:
            return list(repos) or self.default_repos()
        return names_at_branch(list(repos), branch, self.layout.repos())

    def get(self, repo: str) -> Snapshot:
        """The published snapshot of `repo`, reopened after a publish. RepoNameError for a bad name,
        UnknownRepoError when none, BrokenSnapshotError when its manifest cannot be read."""
        name = normalize_repo_name(repo)
        paths = self.layout.current(name)
        with self._lock:
            snapshot = self._open.get(name)
            if snapshot is None or snapshot.paths.root != paths.root:
                try:
                    snapshot = Snapshot.open(paths, self.config)
                except Exception as exc:
                    log.warning("snapshot of %r cannot be opened", name, exc_info=True)
                    raise BrokenSnapshotError(f"repository {name!r}: {public_message(exc)}") from exc
                if normalize_repo_name(snapshot.repo) != name:  # an old-layout directory of another repository
                    raise UnknownRepoError(
                        name, detail=f"repository {name!r} has no published snapshot: its directory holds "
                        f"{snapshot.repo!r} (old name mapping); run `semantica index --repo PATH --name {name}`")
                self._open[name] = snapshot
            return snapshot

    def freshness_of(self, repo: str) -> dict[str, Any]:
        """`repo`'s current snapshot's freshness; one that cannot be opened is `stale: null` (a listing's row)."""
        try:
            return self.get(repo).checked_freshness()
        except Exception as exc:
            return unknown_freshness(repo, exc)

    def load(self, repo: str) -> Snapshot:
        """`get` plus the chunk table a query needs; a DamagedTableError (a BrokenSnapshotError) when it cannot be
        read. Another damaged table fails only what reads it (the symbol and graph lists, the map: 503 naming it)."""
        snapshot = self.get(repo)
        try:
            _ = snapshot.chunk_by_id
        except BrokenSnapshotError:
            raise
        except Exception as exc:
            log.warning("chunks of %r cannot be read", snapshot.repo, exc_info=True)
            raise BrokenSnapshotError(f"repository {snapshot.repo!r}: chunks unreadable: {public_message(exc)}") from exc
        return snapshot

    def answering(self, names: list[str], degraded: list[dict[str, str]]) -> list[Snapshot]:
        """The snapshots that can answer a query naming `names` (none: every default-branch repository; another
        branch's `repo@branch` only when named); a broken one is skipped and listed in `degraded`. None can answer:
        BrokenSnapshotError; nothing indexed: QueryError (UnknownRepoError for a named one that does not exist)."""
        opened, broken = self.resolve(names or None)
        if not names:
            opened = [s for s in opened if not split_branch_key(s.repo)[1]]
            broken = [h for h in broken if not split_branch_key(h.repo)[1]]
        degraded.extend({"stage": SNAPSHOT_STAGE, "repo": h.repo, "error": h.error} for h in broken)
        if opened:
            return opened
        if broken:
            raise BrokenSnapshotError("no asked repository can answer: " +
                                      "; ".join(f"{h.repo!r}: {h.error}" for h in broken))
        raise QueryError("no repository is indexed yet: run `semantica index --repo PATH` first")

    def resolve(self, names: list[str] | None = None) -> tuple[list[Snapshot], list[RepoHealth]]:
        """The named repositories (all when None) opened for a query, and those that could not be.

        A named repository that does not exist is UnknownRepoError (a typo, not a fault)."""
        failures: list[RepoHealth] = []
        if names is None:
            entries = self.layout.listing()
            failures = [RepoHealth.of(e) for e in entries if e.state is RepoState.BROKEN]
            wanted = sorted({e.repo for e in entries if e.state is RepoState.OK})
        else:
            wanted = list(dict.fromkeys(normalize_repo_name(n) for n in names))
        snapshots: list[Snapshot] = []
        for name in wanted:
            try:
                snapshots.append(self.load(name))
            except BrokenSnapshotError as exc:
                failures.append(RepoHealth(name, RepoState.BROKEN, error=_without_repo(str(exc), name)))
        return snapshots, failures

    def health(self) -> list[RepoHealth]:
        """Per-repository status for /healthz: `checked_listing` as health rows."""
        return [RepoHealth.of(entry) for entry in self.checked_listing()]

    def checked_listing(self) -> list[RepoEntry]:
        """The listing plus a cheap check that each snapshot's files are there and readable (tables'
        footers parsed, shards present; no checksum pass): /healthz and /v1/repos agree on what is broken."""
        entries = self.layout.listing()
        for entry in entries:
            if entry.state is RepoState.OK and entry.manifest is not None:
                paths = SnapshotPaths(self.layout.root / entry.directory / entry.snapshot_id)
                damaged = damaged_tables(paths, entry.manifest)
                if damaged:
                    entry.state, entry.damaged = RepoState.BROKEN, list(damaged)
                    entry.error = _without_repo(str(damaged_error(entry.repo, damaged)), entry.repo)
                    continue
                try:
                    check_files(paths, entry.manifest)
                except Exception as exc:
                    log.warning("snapshot of %r failed its health check", entry.repo, exc_info=True)
                    entry.state, entry.error = RepoState.BROKEN, public_message(exc)
        return entries


def check_files(paths: SnapshotPaths, manifest: Manifest) -> None:
    """Raise when a file the manifest lists is missing or unreadable, or a table's footer is corrupt."""
    for relative in manifest.checksums:
        with open(paths.root / relative, "rb") as handle:
            handle.read(1)
    for table in (paths.chunks, paths.symbols, paths.edges):
        try:
            pq.read_metadata(table)
        except Exception as exc:  # say which table: Arrow's message does not
            raise LayoutError(f"{table.name} is unreadable ({public_message(exc)})") from exc


def _without_repo(message: str, repo: str) -> str:
    prefix = f"repository {repo!r}: "
    return message[len(prefix):] if message.startswith(prefix) else message
