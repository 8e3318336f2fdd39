"""What a reranker is: the protocol every registered reranker implements and the input it may read.

A reranker reorders the fused hits of one request. An optional reranker that fails degrades the answer
(listed in `degraded`); a mandatory one fails it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from semantica.api import SearchRequest
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
