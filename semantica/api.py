"""Request and response types of a search, in one place: the CLI, the pipeline, HTTP and MCP share them.

The HTTP body model (`serving.api.http.models.SearchBody`) is generated from `SearchRequest`'s fields and
the response cache key is derived from them too, so a new request field is one line here: it cannot be
forgotten by the API schema or by the cache (a forgotten field once served stale answers).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from semantica.errors import ErrorKind


class QueryError(ValueError):
    """The request itself is wrong (HTTP 400); the message says how to fix it."""

    error_kind = ErrorKind.BAD_REQUEST


class QueryDeadlineExceeded(RuntimeError):
    """The query outlived `query.deadline_s` (HTTP 504): the pipeline stops at the next stage instead of spending
    a core on an answer nobody waits for."""

    error_kind = ErrorKind.DEADLINE_EXCEEDED


def _doc(text: str, **kwargs: Any) -> Any:
    """A dataclass field with its API description (shown in the OpenAPI schema)."""
    return field(metadata={"doc": text}, **kwargs)


@dataclass
class SearchRequest:
    """One search. `repos` empty = every indexed repository; `strategies` empty = all four."""

    query: str = _doc("an identifier, a question, a stack trace ...")
    repos: list[str] = _doc("empty = every repository the caller may read", default_factory=list)
    k: int | None = _doc("number of hits (default query.default_k)", default=None)
    path_globs: list[str] = _doc("only paths matching one of these globs", default_factory=list)
    languages: list[str] = _doc("only these languages", default_factory=list)
    explain: bool = _doc("add each hit's features and explanation", default=False)
    context_budget: int | None = _doc("token budget of the cited context (default context.budget)", default=None)
    strategies: list[str] = _doc("subset of vector, lexical, symbol, graph", default_factory=list)
    late_interaction: bool | None = _doc("rerank with late interaction (default: late_interaction.enabled)",
                                         default=None)
    cross_encoder: bool | None = _doc("rerank with the cross-encoder (default: cross_encoder.enabled)", default=None)
    mode: str | None = _doc("force a search mode: hybrid, vector_heavy, lexical_heavy, mmr_diverse, exact_vector "
                            "(default: the query planner picks one when planning.enabled)", default=None)

    def cache_key(self, snapshot_ids: tuple[str, ...]) -> tuple:
        """Every field (lists as sorted tuples) plus the snapshots answering: derived, never hand-listed."""
        return (snapshot_ids, *(_frozen(getattr(self, f.name)) for f in fields(self)))


def _frozen(value: Any) -> Any:
    return tuple(sorted(map(str, value))) if isinstance(value, list) else value


@dataclass
class HitView:
    """A hit as the API returns it."""

    rank: int
    chunk_id: str
    repo: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    score: float
    fused_score: float
    ranks: dict[str, int]
    citation: str
    content: str
    late_score: float | None = None  # scores["late_interaction"], kept for clients that read it
    cross_score: float | None = None  # scores["cross_encoder"]
    scores: dict[str, float] = field(default_factory=dict)  # each reranker that re-scored the hit: its own score
    features: list[float] | None = None
    explanation: str | None = None
    # the exact graph answer this hit cites (structural questions): {op, target, node, citation, line, sites,
    # resolution, depth, rank (in the exact answer), score (its tier confidence / depth), retrieved}; when
    # retrieval did not find the chunk, `score` above is that graph score (fused_score stays 0.0)
    graph: dict[str, Any] | None = None


CONTENT_TRUST = "untrusted"
"""`content_trust` of every search and context answer: what it quotes is untrusted text (never act on it)."""


@dataclass
class SearchResponse:
    """What a search returns (the `--json` and HTTP schema)."""

    query: str
    intent: dict[str, Any]
    hits: list[HitView]
    files: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    context: dict[str, Any]
    degraded: list[dict[str, str]]
    warnings: list[str]
    timings_ms: dict[str, float]
    snapshots: dict[str, str]
    cached: bool = False
    graph: dict[str, Any] | None = None  # structural question: {op, name, candidates, ambiguous, note, answers}
    freshness: dict[str, dict[str, Any]] = field(default_factory=dict)  # repo -> semantica.ondisk.freshness.Freshness
    # what the query planner decided: {mode, k, mmr, sub_queries, ...}; None when it is off
    plan: dict[str, Any] | None = None
    # every text this answer retrieved (code, comments, docs, commit messages, knowledge entries) is data from
    # the repositories and their writers, not instructions: one field, the same on every front
    content_trust: str = CONTENT_TRUST

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
