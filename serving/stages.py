"""Every query stage, built in one place: `build_stages(config)`.

`Stages` holds the collaborators (intent, fusion, retrievers, rerankers, planner, knowledge, ...) and the
declared list of query stages over them (`query_stages`, from `serving.query.registry`), which
`SearchPipeline._search` runs in order. The Ray Serve ingress builds the same `Stages` with its remote
handles in place of the local collaborators (`serving.ray.remote.remote_stages`): the handles satisfy the
same protocols (classify, fuse, build, rerank, search_scored), so there is one orchestration and no
pipeline subclass. Rerankers own their models (`serving/rerankers/`); graph tables load on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property
from typing import Any

from semantica.config import Config
from semantica.runtime.encoder import Encoder, query_encoder_config, shared_encoder
from semantica.runtime.token_count import TokenCounter
from semantica.snapshot import Snapshot, SnapshotSet
from serving.core.context import ContextBuilder
from serving.core.fusion import WeightedRRF
from serving.core.intent import IntentClassifier
from serving.core.localization import LocalizationTail
from serving.core.localize import Localizer
from serving.core.query_encoding import QueryEncoder
from serving.graph.ops import GraphOps
from serving.graph.route import GraphRouter
from serving.knowledge.inject import KnowledgeInjector
from serving.localizer.stage import LearnedStage
from serving.planning.planner import QueryPlanner
from serving.query.base import QueryStage
from serving.query.registry import query_stage_factories
from serving.query.rerank import Reranking
from serving.query.retrieve import Retrieval
from serving.rerankers.registry import Reranker, build_rerankers
from serving.retrievers.registry import RetrieverSpec, conf_retriever_names, enabled_specs
from serving.retrievers.repo import RepoRetrievers

QUERY_ENCODING_ITEMS = 64

RetrieverSource = Callable[[Snapshot], Any]
"""Snapshot -> its retrievers by name (`RepoRetrievers`, or the Serve proxies with the same `get`)."""
RerankerProxy = Callable[[Reranker], Reranker]
"""A deployed reranker -> the object that answers for it (the Serve ingress: a proxy to its deployment)."""


class Stages:
    """The stage objects one pipeline orchestrates. Pass a stage to use it instead of the local one
    (the Serve ingress passes handles); leave it None to build the local stage from conf."""

    def __init__(self, config: Config, snapshots: SnapshotSet | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None, *, intent: Any = None, fusion: Any = None,
                 context: Any = None, retrievers: RetrieverSource | None = None,
                 reranker_proxy: RerankerProxy | None = None) -> None:
        self.config = config
        self.snapshots = snapshots or SnapshotSet(config)
        query_encoder = query_encoder_config(config.encoder)  # one thread per query pass
        self.encoder_factory = encoder_factory or (lambda: shared_encoder(query_encoder))
        self.retriever_specs: list[RetrieverSpec] = enabled_specs(config.retrieval.retrievers)
        self.query_encoder = QueryEncoder(self.encoder_factory, QUERY_ENCODING_ITEMS)  # one encoder pass per query
        self.intent = intent or IntentClassifier(config.intent)
        local_fusion = WeightedRRF(config.fusion)
        self.fusion = fusion or local_fusion
        voters = conf_retriever_names(config.query.localize_strategies, "query.localize_strategies")
        self.localizer = Localizer(config.query, local_fusion, voters)  # cheap: always in the caller
        self.localization = LocalizationTail(config, self.localizer)  # fixed fusion, learned blend
        self.learned_localizer = LearnedStage(config.localizer, config.paths.cache_dir, query_encoder)  # models: first use
        self.context_builder = context or ContextBuilder(config.context, TokenCounter(config.encoder.model_path).count)
        self.planner = QueryPlanner(config)  # mode and MMR (serving/planning/)
        self._reranker_proxy = reranker_proxy
        self._remote_retrievers = retrievers
        self._local_retrievers: dict[str, RepoRetrievers] = {}
        self._lock = threading.Lock()
        self.rerankers = self._rerankers()  # built now (no model loads): a bad rerank conf fails here
        self.knowledge = KnowledgeInjector(config, snapshots=self.snapshots)  # serving/knowledge/
        self.retrieval = Retrieval(config, self.retrievers, len(self.retriever_specs))
        self.reranking = Reranking(self.rerankers)
        self.query_stages: list[QueryStage] = [factory(self) for _, factory in query_stage_factories()]

    # -- retrievers ----------------------------------------------------------------------------

    @property
    def retrieves_locally(self) -> bool:
        """Whether the retrievers run in this process (not behind the Serve replicas' handles)."""
        return self._remote_retrievers is None

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
    def graph_ops(self) -> GraphOps:
        return GraphOps()

    @cached_property
    def graph_router(self) -> GraphRouter:
        return GraphRouter(self.graph_ops, self.config.graph_ops.route_depth,
                           tuple(self.config.graph_ops.tier_scores))  # routed answers' scores

    @cached_property
    def expansion(self) -> Any:  # decomposition (serving/planning/)
        from serving.planning.expand import QueryExpansion

        return QueryExpansion(self.config.planning, self.graph_ops.graph)

    @cached_property
    def ranking_hooks(self) -> Any:  # feedback-learned weights and the final file order
        from serving.planning.hooks import RankingHooks

        return RankingHooks(self.config)

    def _rerankers(self) -> list[Reranker]:
        """The registered rerankers in `rerank.order`, each owning its model; a deployed one is answered by
        `reranker_proxy` when one was given (the Serve ingress)."""
        built = build_rerankers(self.config.rerank.order, self)
        proxy = self._reranker_proxy
        return [proxy(r) if proxy is not None and r.deployed else r for r in built]

    def reranker(self, name: str) -> Reranker:
        """The configured reranker `name` (KeyError when `rerank.order` does not name it)."""
        for stage in self.rerankers:
            if stage.name == name:
                return stage
        raise KeyError(f"reranker {name!r} is not in rerank.order {self.config.rerank.order}")


def build_stages(config: Config, snapshots: SnapshotSet | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None, **given: Any) -> Stages:
    """The one place query stages are built; `given` replaces named stages (intent, fusion, context,
    retrievers, reranker_proxy) with objects that satisfy the same protocol."""
    return Stages(config, snapshots, encoder_factory, **given)
