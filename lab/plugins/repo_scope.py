"""Scope selection (the `repo_scope` reranker): for a broad query over a large repository, the repository map's
top files boost the hits in them, or the hits are narrowed to them (never below k). Measured on the golden set
with both thresholds forced to 1: boost cost 0.011 NDCG@10 and narrow 0.077 (lab/README.md), so the product
ships without it. Import this module and put `repo_scope` (boost) or `repo_scope_narrow` in `rerank.order`;
`RepoScope.settings` holds the thresholds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from semantica.hits import Hit
from semantica.schema import ParsableEnum
from serving.planning.repo_map import RepoMapper
from serving.rerankers.base import RerankInput
from serving.rerankers.registry import register_reranker

NAME = "repo_scope"
NARROW_NAME = "repo_scope_narrow"


class ScopeMode(ParsableEnum):
    """How the repository map scopes a broad query's hits: a boost, or a filter."""

    BOOST = "boost"
    NARROW = "narrow"


@dataclass(frozen=True)
class ScopeSettings:
    """When the scope applies (a query of `min_query_words`+ words over `min_files`+ files) and how much."""

    min_files: int = 300
    min_query_words: int = 12
    top_files: int = 30
    boost: float = 0.3  # boost mode: a hit in the map's top files gets score * (1 + boost)


@register_reranker(NAME)
class RepoScope:
    """The boost reranker; `settings` is the study's choice (a class attribute: the registry builds it from a
    pipeline)."""

    name, optional, deployed = NAME, True, False
    mode = ScopeMode.BOOST
    settings = ScopeSettings()

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline
        hooks = getattr(pipeline, "ranking_hooks", None)
        self.mapper = hooks.mapper if hooks is not None else RepoMapper(pipeline.config.repo_map)

    def warm_up(self) -> None:  # no model: what it reads is per snapshot, loaded on first use
        pass

    def wanted(self, given: RerankInput) -> bool:
        return len(given.request.query.split()) >= self.settings.min_query_words

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        settings, top = self.settings, {}
        for repo in dict.fromkeys(c.repo for c in given.chunks.values()):
            snapshot = self.pipeline.snapshots.get(repo)
            if len(self.mapper.file_graph(snapshot).paths) < settings.min_files:
                continue
            order, _, _ = self.mapper.rank(snapshot, given.request.query)
            top.update({(repo, p): r for r, (p, _) in enumerate(order[: settings.top_files], 1)})
        if not top:
            return hits
        inside, outside = [], []
        for hit in hits:
            chunk = given.chunks[hit.chunk_id]
            rank = top.get((chunk.repo, chunk.path))
            if rank is None:
                outside.append(hit)
                continue
            if self.mode is ScopeMode.BOOST:
                hit.score *= 1.0 + settings.boost
            hit.explanation = f"{hit.explanation}; repo map: file rank {rank}".lstrip("; ")
            inside.append(hit)
        if self.mode is ScopeMode.NARROW:
            return (inside + outside)[: max(given.request.k or 0, len(inside))]
        return sorted(hits, key=lambda h: -h.score)


@register_reranker(NARROW_NAME)
class NarrowRepoScope(RepoScope):
    """The narrow reranker: the hits outside the map's top files go (never below k)."""

    name = NARROW_NAME
    mode = ScopeMode.NARROW
