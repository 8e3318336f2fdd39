"""The in-process indexing pipeline: discover -> parse -> resolve -> embed -> write -> publish.

The Ray Data job runs the same stage classes (`RepoSource`, `FileParser`, `GraphResolver`,
`ChunkEmbedder`, `SnapshotWriter`) distributed; this module strings them together in one process,
with a progress bar per stage and a summary of what was done.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from pipelines.discover import LANGUAGE_BY_NAME, LANGUAGE_BY_SUFFIX, RepoSource, SourceFile, repo_name_from_path
from pipelines.embed import ChunkEmbedder, EmbeddingCache
from pipelines.parse import FileParser, GraphResolver, ParsedFile
from pipelines.parse_cache import ParseCache
from pipelines.write import SnapshotContent, SnapshotWriter
from semantica.config import Config
from semantica.encoder import Encoder, shared_encoder
from semantica.graph import GRAPH_STORE_MEMGRAPH
from semantica.layout import IndexLayout
from semantica.schema import FileError
from semantica.source import IndexableRule, SourceKind, SourceRecord, git_status

PARSE_CACHE_FILE = "parsed.sqlite"
EMBEDDINGS_DIR = "embeddings"


@dataclass
class IndexSummary:
    """What one indexing run did (printed by the CLI; `--json` prints it as one object)."""

    repo: str
    commit: str = ""
    snapshot_id: str = ""
    snapshot_path: str = ""
    files: int = 0
    chunks: int = 0
    symbols: int = 0
    edges: int = 0
    errors: int = 0
    files_parsed: int = 0
    files_reused: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    error_samples: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def record_source(source: RepoSource, ref: str | None, config: Config) -> SourceRecord:
    """What a snapshot is built from, for the freshness check of every later answer (read it before
    discovery hashes the files: see semantica.freshness)."""
    discover = source.config
    rule = IndexableRule(suffixes=sorted(LANGUAGE_BY_SUFFIX), names=sorted(LANGUAGE_BY_NAME),
                         vendored_dirs=list(discover.vendored_dirs), include_globs=list(discover.include_globs))
    if source.commit is None and not source.bare:
        if config.freshness.untracked_cache:  # a git index extension: later status calls skip unchanged dirs
            subprocess.run(["git", "-C", source.repo_path, "update-index", "--untracked-cache"], capture_output=True,
                           timeout=config.freshness.git_timeout_s, check=False)
        status = git_status(source.repo_path, config.freshness.git_timeout_s)
        return SourceRecord(kind=SourceKind.WORKTREE.value, path=source.repo_path, commit=status.head,
                            branch=status.branch, dirty=status.changed, indexable=rule)
    followed = ref or "HEAD"
    is_sha = len(followed) == 40 and all(c in "0123456789abcdef" for c in followed)
    return SourceRecord(kind=SourceKind.GIT.value, path=source.repo_path, ref=followed, commit=source.commit or "",
                        branch="" if is_sha or followed == "HEAD" else followed, indexable=rule)


def peak_rss_mb() -> float:
    """Peak resident memory of this process (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class RepoIndexer:
    """Indexes one repository snapshot and publishes it atomically."""

    ERROR_SAMPLES = 20

    def __init__(self, config: Config, encoder_factory: Callable[[], Encoder] | None = None,
                 progress: bool = True) -> None:
        self.config = config
        self.layout = IndexLayout(config.paths.index_root)
        self._encoder_factory = encoder_factory or (lambda: shared_encoder(config.encoder))
        self.progress = progress and sys.stderr.isatty()
        cache_dir = Path(config.paths.cache_dir)
        self.parse_cache = ParseCache(cache_dir / PARSE_CACHE_FILE)
        self.parser = FileParser(config.chunk)
        self.resolver = GraphResolver()
        self.writer = SnapshotWriter(config)

    def _bar(self, total: int | None, desc: str) -> tqdm:
        return tqdm(total=total, desc=f"{desc:<8}", unit="it", disable=not self.progress, file=sys.stderr,
                    leave=False, dynamic_ncols=True)

    @contextmanager
    def _timed(self, summary: IndexSummary, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        summary.seconds[stage] = round(summary.seconds.get(stage, 0.0) + time.perf_counter() - start, 3)

    def index(self, repo_path: str, name: str | None = None, commit: str | None = None) -> IndexSummary:
        """Build, verify and publish a snapshot; the previous snapshot stays current on any failure."""
        source = RepoSource(repo_path, commit, self.config.discover)
        repo = name or repo_name_from_path(repo_path)
        record = self.source_record(source, commit)  # before discovery hashes files: see semantica.freshness
        snapshot_id, paths = self.layout.begin(repo, source.commit or "")
        summary = IndexSummary(repo=repo, commit=source.commit or "worktree", snapshot_id=snapshot_id,
                               snapshot_path="")
        try:
            content = self._build(source, repo, summary)
            content.source = record.to_dict()
            with self._timed(summary, "write"):
                content.stats = {"seconds": summary.seconds}
                self.writer.write(paths, content)
            graph_db = self._graph_db_loader()
            if graph_db is not None:  # before publish: a Memgraph failure keeps the old snapshot current
                with self._timed(summary, "graph_db"):
                    graph_db.load(repo, snapshot_id, content.symbols, content.chunks, content.edges,
                                  delete_superseded=False)
            with self._timed(summary, "publish"):
                final = self.layout.publish(repo, snapshot_id, self.config.index.keep_snapshots)
            if graph_db is not None:
                graph_db.delete_superseded(repo, snapshot_id)
        except BaseException:
            self.layout.discard(repo, snapshot_id)
            raise
        summary.snapshot_path = str(final)
        summary.peak_rss_mb = round(peak_rss_mb(), 1)
        return summary

    def source_record(self, source: RepoSource, ref: str | None) -> SourceRecord:
        return record_source(source, ref, self.config)

    def _graph_db_loader(self) -> Any:
        """A Memgraph loader when `graph.store: memgraph`; the embedded store needs no loading."""
        if self.config.graph.store != GRAPH_STORE_MEMGRAPH:
            return None
        from semantica.memgraph import MemgraphLoader, connect

        return MemgraphLoader(connect(self.config.graph.memgraph_uri))

    def _build(self, source: RepoSource, repo: str, summary: IndexSummary) -> SnapshotContent:
        with self._timed(summary, "discover"):
            entries, errors = source.entries()
        parsed, read_errors = self._parse(source, repo, entries, summary)
        errors.extend(read_errors)
        for error in errors:  # discovery names the repo after its directory; the snapshot uses --name
            error.repo = repo
        with self._timed(summary, "resolve"):
            edges = self.resolver.resolve(parsed)
        chunks = [chunk for p in parsed for chunk in p.chunks]
        symbols = [symbol for p in parsed for symbol in p.symbols]
        vectors, model_id = self._embed(chunks, summary)
        summary.files = len(parsed)
        summary.chunks, summary.symbols, summary.edges = len(chunks), len(symbols), len(edges)
        summary.errors = len(errors)
        summary.error_samples = [{"path": e.path, "reason": e.reason} for e in errors[: self.ERROR_SAMPLES]]
        return SnapshotContent(repo=repo, commit=source.commit or "", chunks=chunks, vectors=vectors,
                               symbols=symbols, edges=edges, errors=errors, model_id=model_id,
                               files={e.path: e.blob_sha for e in entries}, skipped=[e.path for e in errors])

    def _parse(self, source: RepoSource, repo: str, entries: list, summary: IndexSummary) -> tuple[list[ParsedFile], list[FileError]]:
        keys = {e.path: ParseCache.key(repo, e.path, e.blob_sha) for e in entries}
        with self._timed(summary, "parse"):
            cached = self.parse_cache.get_many(list(keys.values()))
            todo = [e for e in entries if keys[e.path] not in cached]
            fresh: dict[str, ParsedFile] = {}
            errors: list[FileError] = []
            bar = self._bar(len(entries), "parse")
            bar.update(len(entries) - len(todo))
            for item in source.read(todo):
                bar.update(1)
                if isinstance(item, FileError):
                    errors.append(item)
                    continue
                fresh[keys[item.path]] = self._parse_one(repo, item, errors)
            bar.close()
            self.parse_cache.put_many({k: v for k, v in fresh.items() if v is not None})
        by_key = {**cached, **fresh}
        parsed = [by_key[keys[e.path]] for e in entries if by_key.get(keys[e.path]) is not None]
        summary.files_reused = len(entries) - len(todo)
        summary.files_parsed = len(fresh)
        return parsed, errors

    def _parse_one(self, repo: str, file: SourceFile, errors: list[FileError]) -> ParsedFile | None:
        try:
            return self.parser.parse(repo, file)
        except Exception as exc:  # one bad file must not stop the run: record it and go on
            errors.append(FileError(repo=repo, path=file.path, stage="parse", reason=f"{type(exc).__name__}: {exc}"))
            return None

    def _embed(self, chunks: list, summary: IndexSummary) -> tuple[np.ndarray, str]:
        with self._timed(summary, "embed"):
            encoder = self._encoder_factory()
            cache = EmbeddingCache(Path(self.config.paths.cache_dir) / EMBEDDINGS_DIR, encoder.model_id, encoder.dim,
                                   self.config.encoder.max_length)
            embedder = ChunkEmbedder(encoder.encode, encoder.dim, cache, self.config.encoder.batch_size,
                                     self.config.encoder.cache_segment_vectors)
            bar = self._bar(len(chunks), "embed")
            vectors, stats = embedder.embed(chunks, progress=bar.update)
            bar.close()
        summary.chunks_embedded, summary.chunks_reused = stats.embedded, stats.reused
        return vectors, encoder.model_id
