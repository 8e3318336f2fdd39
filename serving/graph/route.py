"""Routes a structural question in `semantica query` to the exact graph ops, and puts that answer first.

The graph answer is exact, so no reranker may reorder it or push a non-neighbour above it: the
merge runs after fusion, late interaction and the cross-encoder, and only appends the reranked
hits (those not already in the answer) after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semantica.config import GraphOpsConfig
from semantica.hits import Hit
from semantica.schema import Chunk
from semantica.snapshot import Snapshot
from serving.graph.ops import GraphAnswer, GraphOps, GraphResult, UnknownNameError
from serving.graph.structural import parse_question

DEFAULT_TIER_SCORES = tuple(GraphOpsConfig().tier_scores)  # conf: graph_ops.tier_scores


@dataclass
class RoutedAnswer:
    """The graph answer to a structural query, and per chunk which answer it cites.

    A routed hit's `graph` object carries `rank` (its 1-based place in the exact answer), `score` (the
    answer's confidence: `graph_ops.tier_scores[tier] / depth`, from how its edge was resolved) and
    `retrieved` (whether retrieval also found the chunk). The hit's own `score` is retrieval's when
    retrieval found it, else that graph score: never 0.0 for an exact answer.
    """

    result: GraphResult
    tier_scores: tuple[float, ...] = DEFAULT_TIER_SCORES
    by_chunk: dict[str, dict[str, Any]] = field(default_factory=dict)

    def score(self, answer: GraphAnswer) -> float:
        tier = min(answer.tier, len(self.tier_scores) - 1)
        return round(self.tier_scores[tier] / max(1, answer.depth), 4)

    def merge(self, hits: list[Hit], chunks: dict[str, Chunk]) -> list[Hit]:
        """Graph answers first (in their exact order), then the reranked hits not already among them."""
        reranked = {h.chunk_id: h for h in hits}
        first: list[Hit] = []
        for rank, answer in enumerate(self.result.answers, 1):
            if not answer.chunk_id or answer.chunk_id in self.by_chunk or answer.chunk_id not in chunks:
                continue
            seen = reranked.get(answer.chunk_id)
            score = self.score(answer)
            self.by_chunk[answer.chunk_id] = {
                "op": self.result.op, "target": answer.target, "node": answer.node, "citation": answer.citation,
                "line": answer.line, "sites": list(answer.sites), "resolution": answer.resolution,
                "depth": answer.depth, "rank": rank, "score": score, "retrieved": seen is not None,
            }
            sites = ", ".join(answer.sites) if len(answer.sites) > 1 else answer.citation
            explanation = (f"graph: {self.result.op} of {answer.target} at {sites} "
                           f"(resolved by {answer.resolution}, depth {answer.depth}, rank {rank} of the exact answer)")
            first.append(Hit(
                chunk_id=answer.chunk_id, score=seen.score if seen else score,
                fused_score=seen.fused_score if seen else 0.0, ranks=dict(seen.ranks) if seen else {},
                rrf_scores=dict(seen.rrf_scores) if seen else {}, features=list(seen.features) if seen else [],
                explanation=explanation, scores=dict(seen.scores) if seen else {},
            ))
        return first + [h for h in hits if h.chunk_id not in self.by_chunk]


class GraphRouter:
    """`answer(query, snapshots)`: the graph answer when the query is a structural question, else None."""

    def __init__(self, ops: GraphOps, depth: int, tier_scores: tuple[float, ...] = DEFAULT_TIER_SCORES) -> None:
        if not tier_scores or any(not 0 < s for s in tier_scores):
            raise ValueError(f"graph_ops.tier_scores must be positive numbers, got {list(tier_scores)}")
        self.ops = ops
        self.depth = depth
        self.tier_scores = tuple(tier_scores)

    def answer(self, query: str, snapshots: list[Snapshot], warnings: list[str]) -> RoutedAnswer | None:
        question = parse_question(query)
        if question is None:
            return None
        try:
            result = self.ops.run(question.op, question.name, snapshots, self.depth)
        except UnknownNameError as exc:  # not an error of the request: the search still answers
            warnings.append(f"structural question, but {exc}; showing search results only")
            return None
        if result.ambiguous:
            warnings.append(result.to_dict()["note"])
        return RoutedAnswer(result, self.tier_scores)
