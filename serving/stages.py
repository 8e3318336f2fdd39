"""Every query stage, built in one place: `build_stages(config)`.

`SearchPipeline(stages)` only orchestrates. The Ray Serve ingress builds the same `Stages` with its
remote handles in place of the local stage objects (`serving.ray.remote.remote_stages`): the handles satisfy
the same protocols (classify, fuse, build, rerank, search_scored), so there is one orchestration and no
pipeline subclass. Models (late interaction, cross-encoder, LTR) and graph tables load on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from semantica.config import Config
from semantica.encoder import Encoder, safe_name, shared_encoder
from semantica.snapshot import Snapshot, SnapshotSet
from semantica.token_vectors import StoredTokenVectors
from serving.core.context import ContextBuilder
from serving.core.fusion import WeightedRRF
from serving.core.intent import Intent, IntentClassifier
from serving.core.localization import LocalizationTail
from serving.core.localize import Localizer
from serving.core.localizer.stage import LearnedStage
from serving.core.query_encoding import QueryEncoder
from serving.graph.ops import GraphOps
from serving.graph.route import GraphRouter
from serving.planning.planner import QueryPlanner
from serving.rerankers.cross_encoder import CrossEncoderReranker
from serving.rerankers.late_interaction import LateInteractionReranker, TokenEmbeddingCache
from serving.rerankers.ltr import LtrReranker
from serving.rerankers.registry import Reranker, build_rerankers
from serving.retrievers.registry import RetrieverSpec, enabled_specs
from serving.retrievers.repo import RepoRetrievers

LATE_CACHE_DIR = "late_tokens"
QUERY_ENCODING_ITEMS = 64

RetrieverSource = Callable[[Snapshot], Any]
"""Snapshot -> its retrievers by name (`RepoRetrievers`, or the Serve proxies with the same `get`)."""


class Stages:
    """The stage objects one pipeline orchestrates. Pass a stage to use it instead of the local one
    (the Serve ingress passes handles); leave it None to build the local stage from conf."""

    def __init__(self, config: Config, snapshots: SnapshotSet | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None, *, intent: Any = None, fusion: Any = None,
                 context: Any = None, late: Any = None, cross: Any = None,
                 retrievers: RetrieverSource | None = None) -> None:
        self.config = config
        self.snapshots = snapshots or SnapshotSet(config)
        self.encoder_factory = encoder_factory or (lambda: shared_encoder(config.encoder))
        for name in config.late_interaction.intents:  # late_interaction.intents: a typo fails here, not silently
            Intent.parse(name)
        self.retriever_specs: list[RetrieverSpec] = enabled_specs(config.retrieval.retrievers)
        self.query_encoder = QueryEncoder(self.encoder_factory, QUERY_ENCODING_ITEMS)  # one encoder pass per query
        self.intent = intent or IntentClassifier(config.intent)
        local_fusion = WeightedRRF(config.fusion)
        self.fusion = fusion or local_fusion
        self.localizer = Localizer(config.query, local_fusion, config.granular, config.history)  # cheap: always in the caller
        self.localization = LocalizationTail(config, self.localizer)  # fixed fusion, file order, learned blend
        self.learned_localizer = LearnedStage(config.localizer, config.paths.cache_dir)  # models load on first use
        self.context_builder = context or ContextBuilder(config.context)
        self.planner = QueryPlanner(config)  # mode, dynamic K, budgets, retry (serving/planning/)
        self._late, self._cross = late, cross
        self._remote_retrievers = retrievers
        self._local_retrievers: dict[str, RepoRetrievers] = {}
        self._lock = threading.Lock()

    # -- retrievers ----------------------------------------------------------------------------

    def retrievers(self, snapshot: Snapshot) -> Any:
        """The retrievers over `snapshot` by name, built once per snapshot (a new snapshot gets new ones)."""
        if self._remote_retrievers is not None:
            return self._remote_retrievers(snapshot)
        with self._lock:
            current = self._local_retrievers.get(snapshot.repo)
            if current is None or current.snapshot is not snapshot:
                current = self._local_retrievers[snapshot.repo] = RepoRetrievers(
                    snapshot, self.encoder_factory, self.query_encoder.vector)
            return current

    # -- lazily built optional stages ----------------------------------------------------------

    @cached_property
    def late(self) -> Any:
        if self._late is not None:
            return self._late
        li = self.config.late_interaction
        encoder = self.encoder_factory()
        # one token cache per model and truncation length: vectors never mix
        model_dir = f"{safe_name(li.model_path or encoder.model_id)}-len{li.doc_max_length}"
        cache = TokenEmbeddingCache(Path(self.config.paths.cache_dir) / LATE_CACHE_DIR / model_dir,
                                    li.memory_cache_items, li.dtype)
        return LateInteractionReranker(li, encoder, cache, stored=self._stored_tokens,
                                       query_tokens=self.query_encoder.tokens)

    def _stored_tokens(self, repo: str) -> tuple[StoredTokenVectors, dict[str, int]] | None:
        snapshot = self.snapshots.get(repo)
        store = snapshot.token_vectors
        return (store, snapshot.chunk_row) if store is not None else None

    @cached_property
    def cross(self) -> Any:
        return self._cross if self._cross is not None else CrossEncoderReranker.from_config(self.config.cross_encoder)

    @cached_property
    def ltr(self) -> LtrReranker:
        """Runs where the pipeline runs (also in the Serve ingress): a few trees over <= top_n rows."""
        return LtrReranker.from_config(self.config.ltr)

    @cached_property
    def graph_ops(self) -> GraphOps:
        return GraphOps()

    @cached_property
    def graph_router(self) -> GraphRouter:
        return GraphRouter(self.graph_ops, self.config.graph_ops.route_depth,
                           tuple(self.config.graph_ops.tier_scores))  # routed answers' scores

    @cached_property
    def expansion(self) -> Any:  # decomposition + multi-hop (serving/planning/)
        from serving.planning.expand import QueryExpansion

        return QueryExpansion(self.config.planning, self.intent.classify, self.graph_ops.graph)

    @cached_property
    def ranking_hooks(self) -> Any:  # feedback-learned weights and the final file order
        from serving.planning.hooks import RankingHooks

        return RankingHooks(self.config)

    @cached_property
    def rerankers(self) -> list[Reranker]:
        """The registered rerankers in `rerank.order` (they read late, cross and ltr from here)."""
        return build_rerankers(self.config.rerank.order, self)


def build_stages(config: Config, snapshots: SnapshotSet | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None, **given: Any) -> Stages:
    """The one place query stages are built; `given` replaces named stages (intent, fusion, context,
    late, cross, retrievers) with objects that satisfy the same protocol."""
    return Stages(config, snapshots, encoder_factory, **given)
