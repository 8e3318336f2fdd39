"""The built-in rerankers (learning-to-rank, late interaction, cross-encoder): thin stages over the models
that `serving.stages.Stages` owns; each registers itself by name on import."""

from __future__ import annotations

from typing import Any

from semantica.hits import Hit
from serving.rerankers.base import RerankInput
from serving.rerankers.registry import register_reranker


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
