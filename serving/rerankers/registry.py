"""Rerankers: one protocol, a registry keyed by name, and the order from conf (`rerank.order`).

A reranker reorders the fused hits of one request. `SearchPipeline` runs the configured ones in order
and knows nothing else about them: adding one is a class here (or in its own module) registered with
`@register_reranker("name")`, plus its name in `rerank.order` (docs/extending.md).
An optional reranker that fails degrades the answer (listed in `degraded`); a mandatory one fails it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from semantica.api import SearchRequest
from semantica.config import ConfigError
from semantica.hits import Hit
from semantica.schema import Chunk
from serving.core.intent import IntentResult


@dataclass
class RerankInput:
    """What every reranker may read besides the hits."""

    request: SearchRequest
    intent: IntentResult
    chunks: dict[str, Chunk]


class Reranker(Protocol):
    name: str
    optional: bool  # True: a failure degrades the answer; False: it fails the request

    def wanted(self, given: RerankInput) -> bool:
        """Whether to run for this request (request flag, else conf, else the reranker's own rule)."""
        ...

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        ...


RerankerFactory = Callable[[Any], Reranker]  # called with the `serving.stages.Stages` that own the models
RERANKERS: dict[str, RerankerFactory] = {}


def register_reranker(name: str) -> Callable[[RerankerFactory], RerankerFactory]:
    def add(factory: RerankerFactory) -> RerankerFactory:
        RERANKERS[name] = factory
        return factory

    return add


def build_rerankers(order: list[str], pipeline: Any) -> list[Reranker]:
    """The configured rerankers, in order; an unknown name is a clear error listing the known ones."""
    unknown = [n for n in order if n not in RERANKERS]
    if unknown:
        raise ConfigError(f"rerank.order: unknown reranker(s) {unknown}; registered: {sorted(RERANKERS)}")
    return [RERANKERS[name](pipeline) for name in order]


def _flag(request_value: bool | None, configured: bool) -> bool:
    return configured if request_value is None else request_value


@register_reranker("ltr")
class LtrStage:
    """LightGBM LambdaRank over the fused hits' features (off until a model is trained)."""

    name, optional = "ltr", True

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def wanted(self, given: RerankInput) -> bool:
        return _flag(given.request.ltr, self.pipeline.config.ltr.enabled)

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        return self.pipeline.ltr.rerank(hits, given.chunks, given.request.query, given.intent)


@register_reranker("late_interaction")
class LateInteractionStage:
    """MaxSim over stored token vectors; conf may limit it to the intents where it measurably helps."""

    name, optional = "late_interaction", True

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def wanted(self, given: RerankInput) -> bool:
        config = self.pipeline.config.late_interaction
        if given.request.late_interaction is not None:
            return given.request.late_interaction
        return config.enabled and (not config.intents or given.intent.dominant.value in config.intents)

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        return self.pipeline.late.rerank(given.request.query, hits, given.chunks)


@register_reranker("cross_encoder")
class CrossEncoderStage:
    """The conditional cross-encoder; when configured and asked for, a failure fails the request."""

    name, optional = "cross_encoder", False

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def wanted(self, given: RerankInput) -> bool:
        return (_flag(given.request.cross_encoder, self.pipeline.config.cross_encoder.enabled)
                and self.pipeline.cross.should_run(given.request.query, given.intent))

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        return self.pipeline.cross.rerank(given.request.query, hits, given.chunks)


# Query-planning stages live in their own modules and register themselves on import.
from serving.planning import final_order, repo_map  # noqa: E402,F401  (registers final_order, repo_scope)
