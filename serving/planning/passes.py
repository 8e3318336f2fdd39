"""One more retrieve -> fuse -> rerank pass of the pipeline, for the planner's retries.

It drives the pipeline's own stages (its retrievers, `WeightedRRF`, reranker registry), so a retry
answers exactly as the first pass would with the relaxed parameters, rewritten query or wider scope.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from semantica.api import SearchRequest
from semantica.branch_keys import split_branch_key
from semantica.hits import ChunkMeta, Hit, RankedList
from semantica.schema import Chunk
from semantica.snapshot import Snapshot
from serving.core.intent import IntentResult
from serving.retrievers.base import Filters


class PipelinePass:
    """Bound to one request: its intent, enabled strategies, filters, timer and `degraded` list."""

    def __init__(self, pipeline: Any, request: SearchRequest, intent: IntentResult, enabled: set[str],
                 filters: Filters, chunks: dict[str, Chunk], timer: Any, degraded: list[dict[str, str]]) -> None:
        self.pipeline = pipeline
        self.request = request
        self.intent = intent
        self.enabled = enabled
        self.filters = filters
        self.chunks = chunks  # shared with the pipeline's pass: chunks of new scopes are added here
        self.timer = timer
        self.degraded = degraded

    @property
    def cutoff(self) -> int:
        """How deep fusion goes for this request: max(k, the intent's cutoff) (as `WeightedRRF.cutoff`)."""
        return max(int(self.pipeline.config.fusion.cutoffs[self.intent.dominant.value]), self.request.k or 0)

    def retrieve(self, query: str, snapshots: Sequence[Snapshot], k: int,
                 paths: Sequence[str] = ()) -> dict[str, RankedList]:
        """Each retriever's list for `query` over `snapshots`, optionally only within `paths`."""
        filters = self.filters
        if paths:
            globs = [p for p in paths if not self.filters.path_globs or any(
                fnmatch.fnmatch(p, g) for g in self.filters.path_globs)]
            if not globs:  # none of them passes the request's own path filter
                return {}
            filters = Filters(path_globs=globs, languages=list(self.filters.languages))
        for snapshot in snapshots:
            self.chunks.update(snapshot.chunk_by_id)
        return self.pipeline._retrieve(query, self.intent, list(snapshots), self.enabled, filters, self.timer,
                                       self.degraded, k=k)

    def rank(self, lists: dict[str, RankedList], depth: int,
             multipliers: dict[str, float] | None) -> list[Hit]:
        """Fuse (with the mode's multipliers) and rerank, as the pipeline's first pass does."""
        meta = {cid: ChunkMeta.from_chunk(self.chunks[cid]) for ranked in lists.values() for cid, _ in ranked
                if cid in self.chunks}
        fused = self.pipeline.fusion.fuse(lists, self.intent, meta, depth, multipliers=multipliers)
        return self.pipeline._rerank(self.request, self.intent, [h for h in fused if h.chunk_id in self.chunks],
                                     self.chunks, self.timer, self.degraded)

    def other_snapshots(self) -> list[Snapshot]:
        """Every indexed repository's default-branch snapshot that can answer (broken ones skipped)."""
        snapshots, _ = self.pipeline.snapshots.resolve(None)
        return [s for s in snapshots if not split_branch_key(s.repo)[1]]
