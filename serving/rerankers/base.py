"""What a reranker is: the protocol every registered reranker implements and the input it may read.

A reranker reorders the fused hits of one request and owns its model: it builds it on first use (or in
`warm_up`, which a Serve replica calls before taking traffic) from the `serving.stages.Stages` it was built
with, and records its own score in `Hit.scores[name]`. An optional reranker that fails degrades the answer
(listed in `degraded`); a mandatory one fails it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from semantica.api import SearchRequest
from semantica.hits import Hit
from semantica.schema import Chunk
from serving.core.intent import IntentResult

WARM_UP_TEXT = "warm up"
"""What a reranker encodes in `warm_up` so the first real request does not pay for the model's first pass."""


@dataclass
class RerankInput:
    """What every reranker may read besides the hits."""

    request: SearchRequest
    intent: IntentResult
    chunks: dict[str, Chunk]

    def for_hits(self, hits: list[Hit]) -> RerankInput:
        """The same input with only the chunks of `hits` (what a remote reranker is sent)."""
        wanted = {h.chunk_id for h in hits}
        return RerankInput(self.request, self.intent, {cid: c for cid, c in self.chunks.items() if cid in wanted})


class Reranker(Protocol):
    name: str
    optional: bool  # True: a failure degrades the answer; False: it fails the request
    deployed: ClassVar[bool]  # True: the Serve graph runs it in its own deployment (a model worth replicas)

    def warm_up(self) -> None:
        """Load the model now when conf enables the stage (a no-op otherwise)."""
        ...

    def wanted(self, given: RerankInput) -> bool:
        """Whether to run for this request (request flag, else conf, else the reranker's own rule); never
        loads the model (the Serve ingress asks before calling the deployment)."""
        ...

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        ...


RerankerFactory = Callable[[Any], Reranker]
"""Called with the `serving.stages.Stages` of the pipeline: conf, snapshots, the encoder factory, the query encoder."""


def flag(request_value: bool | None, configured: bool) -> bool:
    """A request's on/off toggle for a stage, else conf."""
    return configured if request_value is None else request_value


def rescored(hit: Hit, stage: str, value: float | None, **changes: Any) -> Hit:
    """A copy of `hit` with `changes` and `stage`'s own score in `scores` (none recorded for None)."""
    scores = dict(hit.scores) if value is None else {**hit.scores, stage: float(value)}
    return dataclasses.replace(hit, scores=scores, **changes)
