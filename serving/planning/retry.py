"""Graduated retry: a rule-based judge of the hits, rule-based query rewrites, adjacent scope, list merging.

The planner (planner.py) climbs the levels of `RetryLevel` while the judge calls the answer weak and
`planning.max_retry_level` allows; this module holds the pieces each level needs.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from semantica import linear_regex
from semantica.config import ConfigError, PlanningRetryConfig
from semantica.hits import Hit, RankedList
from semantica.schema import Chunk, EdgeType
from semantica.snapshot import Snapshot
from serving.planning.analyzer import QueryFeatures, is_identifier

FILE_NODE_PREFIX = "file:"
# Stays on `re`: RE2 has no look-around, and these are fixed-width with no quantifier (constant work a step).
_SPLIT_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = linear_regex.compile(r"[_.:]+")
_WORDS = linear_regex.compile(r"[A-Za-z0-9_]+")


@dataclass
class Verdict:
    """Is the answer weak, and why (each reason names the rule and the value that tripped it)."""

    weak: bool
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ResultEvaluator:
    """Weak when at least `min_reasons` hold: a low top fused score, no consensus among the first hits,
    or a query identifier that no early hit holds in its symbol or content."""

    def __init__(self, config: PlanningRetryConfig) -> None:
        self.config = config

    def judge(self, hits: Sequence[Hit], chunks: Mapping[str, Chunk], features: QueryFeatures) -> Verdict:
        c = self.config
        reasons: list[str] = []
        if not hits:
            return Verdict(True, ["no hits"])
        top = max(h.fused_score for h in hits[: c.consensus_top_n])
        if top < c.min_top_fused:
            reasons.append(f"low top score: best fused {top:.4f} < {c.min_top_fused}")
        if not any(len(h.ranks) >= c.consensus_min_strategies for h in hits[: c.consensus_top_n]):
            reasons.append(f"no consensus: no hit of the first {c.consensus_top_n} found by "
                           f">= {c.consensus_min_strategies} retrievers")
        texts = [(chunks[h.chunk_id].symbol + "\n" + chunks[h.chunk_id].content).lower()
                 for h in hits[: c.identifier_top_n] if h.chunk_id in chunks]
        for name in features.identifiers[: c.max_identifiers]:
            tail = re.split(r"\.|::", name)[-1].lower()
            if not any(tail in text for text in texts):
                reasons.append(f"identifier {name!r} in no hit of the first {c.identifier_top_n}")
        return Verdict(len(reasons) >= c.min_reasons, reasons)


def split_identifier(name: str) -> list[str]:
    """`JSONDecoder.raw_decode` -> [json, decoder, raw, decode]."""
    parts: list[str] = []
    for piece in _SEPARATORS.split(name):
        parts.extend(p.lower() for p in _SPLIT_CAMEL.split(piece) if p)
    return parts


class QueryRewriter:
    """Rule-based rewrites (identifiers split into words; stop words dropped; the identifiers alone), plus an
    LLM endpoint's rewrites only when `llm_rewrites` is on (a hook: on without `llm_url` is a ConfigError)."""

    def __init__(self, config: PlanningRetryConfig, stop_words: Iterable[str]) -> None:
        if config.llm_rewrites and not config.llm_url.strip():
            raise ConfigError("planning.retry.llm_rewrites is on but planning.retry.llm_url is empty: set the "
                              "endpoint URL (POST {query, n} -> {rewrites: [...]}) or turn llm_rewrites off")
        self.config = config
        self.stop_words = frozenset(w.lower() for w in stop_words)

    def rewrites(self, query: str, features: QueryFeatures) -> list[str]:
        words = _WORDS.findall(query)
        split = " ".join(" ".join(split_identifier(w)) if is_identifier(w) else w for w in words)
        content = " ".join(w for w in words if w.lower() not in self.stop_words)
        candidates = [split, content, " ".join(features.identifiers)]
        if self.config.llm_rewrites:
            candidates.extend(self._llm(query))
        seen = {query.strip().lower()}
        out: list[str] = []
        for text in candidates:
            text = " ".join(text.split())
            if text and text.lower() not in seen:
                seen.add(text.lower())
                out.append(text)
        return out[: self.config.max_rewrites]

    def _llm(self, query: str) -> list[str]:
        body = json.dumps({"query": query, "n": self.config.max_rewrites}).encode()
        request = urllib.request.Request(self.config.llm_url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=self.config.llm_timeout_s) as answer:  # noqa: S310 (configured)
            rewrites = json.loads(answer.read()).get("rewrites", [])
        return [r for r in rewrites if isinstance(r, str)]


def import_neighbours(snapshot: Snapshot, paths: Iterable[str]) -> list[str]:
    """Files of `snapshot` that import, or are imported by, any of `paths` (resolved IMPORTS edges)."""
    wanted = set(paths)
    found: dict[str, None] = {}
    for edge in snapshot.edges:
        if edge.type != EdgeType.IMPORTS.value or not edge.resolved:
            continue
        src, dst = _file_of(edge.src), _file_of(edge.dst)
        if src in wanted and dst and dst not in wanted:
            found[dst] = None
        if dst in wanted and src and src not in wanted:
            found[src] = None
    return list(found)


def _file_of(node: str) -> str:
    return node.removeprefix(FILE_NODE_PREFIX).split("::", 1)[0] if node else ""


def merge_ranked(many: Sequence[Mapping[str, RankedList]], rrf_k: float) -> dict[str, RankedList]:
    """One ranked list per strategy from several passes (queries, scopes): reciprocal-rank merge."""
    scores: dict[str, dict[str, float]] = {}
    for lists in many:
        for strategy, ranked in lists.items():
            table = scores.setdefault(strategy, {})
            for chunk_id, rank in ranked:
                table[chunk_id] = table.get(chunk_id, 0.0) + 1.0 / (rrf_k + rank)
    return {s: [(c, r) for r, (c, _) in enumerate(sorted(t.items(), key=lambda i: (-i[1], i[0])), 1)]
            for s, t in scores.items()}
