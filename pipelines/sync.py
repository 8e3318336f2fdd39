"""Sync: bring one repository's snapshot up to date with its source, and say what changed.

Used by the MCP `sync` tool and by `semantica watch`. It is the indexer (`Indexer`), not a second
one: a re-index reuses every unchanged file's parse, chunks and vectors through the blob-keyed caches,
so only changed files are parsed and embedded. A snapshot that is already fresh is not rebuilt unless
`force` is set.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.discover import repo_name_from_path
from pipelines.indexer import Indexer, IndexSummary
from semantica.config import Config
from semantica.layout import IndexLayout
from semantica.ondisk.layout_errors import UnknownRepoError
from semantica.ondisk.source import SourceKind, SourceRecord, compare_blobs
from semantica.snapshot import Snapshot


class SyncError(ValueError):
    """The sync request cannot be served (no such repository, no recorded source, no path)."""


@dataclass
class SyncResult:
    """What a sync did: the files that changed and what the indexer reused."""

    repo: str
    reindexed: bool
    reason: str
    snapshot_id: str
    previous_snapshot_id: str = ""
    commit: str = ""
    source: str = ""
    path: str = ""
    ref: str = ""
    edited: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    files_parsed: int = 0
    files_reused: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks: int = 0
    shards_linked: int = 0  # shards hard-linked from the previous snapshot (pipelines.shards)
    shards_written: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)  # the indexer's own timings per stage

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RepoSyncer:
    """Re-indexes a repository (by name: its recorded source; or by path) only when it moved on."""

    def __init__(self, config: Config, indexer: Indexer | None = None) -> None:
        self.config = config
        self.layout = IndexLayout(config.paths.index_root)
        self.indexer = indexer or Indexer(config, progress=False)

    def _current(self, repo: str) -> Snapshot | None:
        try:
            return Snapshot.open(self.layout.current(repo), self.config)
        except UnknownRepoError:
            return None

    def sync(self, repo: str | None = None, path: str | None = None, ref: str | None = None,
             force: bool = False) -> SyncResult:
        start = time.perf_counter()
        if not repo and not path:
            raise SyncError("sync needs a repository name (repo) or a path to a git checkout (path)")
        if path is not None:
            path = str(Path(path).expanduser().resolve())
        name = repo or repo_name_from_path(path or "")
        before = self._current(name)
        record = SourceRecord.from_dict(before.manifest.source) if before else None
        if path is None:
            if before is None:
                known = ", ".join(self.layout.repos()) or "none"
                raise SyncError(f"repository {name!r} is not indexed (indexed: {known}); pass path= to index it")
            if record is None:
                raise SyncError(f"the snapshot of {name!r} recorded no source path; pass path= to re-index it")
            path = record.path
            if ref is None and record.kind == SourceKind.GIT.value:
                ref = record.ref
        if before is not None and not force and record is not None and record.path == path and (ref or "") == record.ref:
            freshness = before.freshness()
            if freshness.stale is False:
                return SyncResult(repo=name, reindexed=False, reason="up to date: " + (freshness.reason or "no indexed "
                                  "file changed"), snapshot_id=before.snapshot_id, previous_snapshot_id=before.snapshot_id,
                                  commit=freshness.commit, source=record.kind, path=path, ref=record.ref,
                                  seconds=round(time.perf_counter() - start, 3))
        summary = self.indexer.index(path, name, ref)
        return self._result(name, before, summary, path, ref, start)

    def _result(self, name: str, before: Snapshot | None, summary: IndexSummary, path: str, ref: str | None,
                start: float) -> SyncResult:
        after = Snapshot.open(self.layout.current(name), self.config)
        old = before.file_blobs.blobs if before else {}
        new = after.file_blobs.blobs
        changes = compare_blobs(old, {p: new.get(p) for p in set(old) | set(new)})
        record = SourceRecord.from_dict(after.manifest.source)
        return SyncResult(
            repo=name, reindexed=True,
            reason="first index" if before is None else (f"re-indexed: {changes.summary()}" if changes.count
                                                         else "re-indexed (forced or ref changed); no file changed"),
            snapshot_id=after.snapshot_id, previous_snapshot_id=before.snapshot_id if before else "",
            commit=record.commit if record else summary.commit, source=record.kind if record else "", path=path,
            ref=ref or "", edited=changes.edited, added=changes.added, deleted=changes.deleted, renamed=changes.renamed,
            files_parsed=summary.files_parsed, files_reused=summary.files_reused,
            chunks_embedded=summary.chunks_embedded, chunks_reused=summary.chunks_reused, chunks=summary.chunks,
            shards_linked=summary.shards_linked, shards_written=summary.shards_written,
            seconds=round(time.perf_counter() - start, 3), stage_seconds=dict(summary.seconds),
        )

