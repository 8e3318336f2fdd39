"""Golden query sets: hand-labelled queries over one indexed repository, scored on the search hits.

Format, one JSON object per line (blank lines and lines starting with `//` are ignored):

    {"query": "who calls _coerce",
     "relevant_paths": ["semantica/config/loader.py"],
     "relevant_symbols": ["semantica/config/loader.py::_build"],
     "intent": "flow"}                      # optional: symbol | flow | concept | code | balanced

A hit (a chunk) is relevant when its path is in `relevant_paths` or its `path::symbol` is in
`relevant_symbols`. The relevant *items* of a query are its paths and symbols; a hit covers the
items it matches. Per query:

- Precision@5: relevant hits among the top 5, divided by 5;
- Recall@10: share of the relevant items covered by the top 10 hits;
- MRR: 1 / rank of the first relevant hit;
- NDCG@10: binary gain for a hit that covers an item no earlier hit covered, normalised by the ideal
  (every item covered by one hit each, first), so a file's tenth chunk does not count as new.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INTENTS = ("symbol", "flow", "concept", "code", "balanced")
GOLDEN_METRICS = ("P@5", "R@10", "MRR", "NDCG@10")
GOLDEN_K = 10


class GoldenSetError(ValueError):
    """The golden set file is malformed; the message names the line."""


@dataclass
class GoldenQuery:
    """One labelled query."""

    query: str
    relevant_paths: list[str] = field(default_factory=list)
    relevant_symbols: list[str] = field(default_factory=list)
    intent: str = ""

    def items(self) -> set[str]:
        return set(self.relevant_paths) | set(self.relevant_symbols)


def load_golden_set(path: str | os.PathLike[str]) -> list[GoldenQuery]:
    """Parse and validate a golden-set JSONL file."""
    file = Path(path)
    if not file.is_file():
        raise GoldenSetError(f"golden set {file} does not exist")
    queries: list[GoldenQuery] = []
    for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("//"):
            continue
        where = f"{file}:{lineno}"
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GoldenSetError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(raw, dict):
            raise GoldenSetError(f"{where}: expected an object")
        unknown = sorted(set(raw) - {"query", "relevant_paths", "relevant_symbols", "intent"})
        if unknown:
            raise GoldenSetError(f"{where}: unknown key(s) {unknown}")
        query = raw.get("query")
        if not isinstance(query, str) or not query.strip():
            raise GoldenSetError(f"{where}: `query` must be a non-empty string")
        paths, symbols = raw.get("relevant_paths") or [], raw.get("relevant_symbols") or []
        if not all(isinstance(p, str) and p for p in [*paths, *symbols]):
            raise GoldenSetError(f"{where}: relevant_paths / relevant_symbols must be lists of strings")
        if not paths and not symbols:
            raise GoldenSetError(f"{where}: give at least one relevant path or symbol")
        bad = [s for s in symbols if "::" not in s]
        if bad:
            raise GoldenSetError(f"{where}: symbols must be spelled `path::Qualified.name`, got {bad}")
        intent = raw.get("intent") or ""
        if intent and intent not in INTENTS:
            raise GoldenSetError(f"{where}: intent {intent!r} is not one of {list(INTENTS)}")
        queries.append(GoldenQuery(query, list(paths), list(symbols), intent))
    if not queries:
        raise GoldenSetError(f"golden set {file} holds no query")
    return queries


def hit_matches(path: str, symbol: str, query: GoldenQuery) -> set[str]:
    """The relevant items a hit at (`path`, `symbol`) covers."""
    matched = {path} & set(query.relevant_paths)
    if symbol:
        key = f"{path}::{symbol}"
        if key in query.relevant_symbols:
            matched.add(key)
    return matched


def score_hits(hits: Sequence[tuple[str, str]], query: GoldenQuery, k: int = GOLDEN_K) -> dict[str, float]:
    """P@5, R@10, MRR and NDCG@10 of ranked (path, symbol) hits."""
    items = query.items()
    matches = [hit_matches(path, symbol, query) for path, symbol in hits]
    relevant = [1 if m else 0 for m in matches]
    covered: set[str] = set()
    gains: list[int] = []
    for m in matches[:k]:
        new = m - covered
        gains.append(1 if new else 0)
        covered |= m
    first = next((rank for rank, rel in enumerate(relevant, 1) if rel), 0)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(items), k)))
    return {
        "P@5": sum(relevant[:5]) / 5,
        "R@10": len(covered) / len(items) if items else 0.0,
        "MRR": 1.0 / first if first else 0.0,
        "NDCG@10": dcg / ideal if ideal else 0.0,
    }


def _mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else 0.0 for m in GOLDEN_METRICS}


@dataclass
class GoldenReport:
    """Mean metrics overall and per intent, plus each query's scores and top hits."""

    overall: dict[str, float]
    by_intent: dict[str, dict[str, Any]]
    queries: list[dict[str, Any]]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"overall": self.overall, "by_intent": self.by_intent, "queries": self.queries,
                "seconds": self.seconds}

    def table(self) -> str:
        header = ["scope", "n", *GOLDEN_METRICS]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        scopes = [("overall", {"n": len(self.queries), **self.overall}), *self.by_intent.items()]
        for scope, scores in scopes:
            lines.append("| " + " | ".join([scope, str(scores["n"])] + [f"{scores[m]:.3f}" for m in GOLDEN_METRICS]) + " |")
        return "\n".join(lines)


class GoldenEval:
    """Runs a golden set through a search pipeline (injected: anything with `search(SearchRequest)`)."""

    def __init__(self, pipeline: Any, repo: str, k: int = GOLDEN_K, strategies: Sequence[str] = (),
                 late_interaction: bool | None = None) -> None:
        self.pipeline = pipeline
        self.repo = repo
        self.k = k
        self.strategies = list(strategies)
        self.late_interaction = late_interaction

    def run(self, queries: Sequence[GoldenQuery]) -> GoldenReport:
        from semantica.api import SearchRequest

        start = time.perf_counter()
        rows: list[dict[str, Any]] = []
        for q in queries:
            response = self.pipeline.search(SearchRequest(
                query=q.query, repos=[self.repo], k=self.k, strategies=list(self.strategies),
                late_interaction=self.late_interaction))
            hits = [(h.path, h.symbol) for h in response.hits]
            scores = score_hits(hits, q, self.k)
            rows.append({"query": q.query, "intent": q.intent, "predicted_intent": response.intent["dominant"],
                         **scores, "top": [f"{p}::{s}" if s else p for p, s in hits[:5]],
                         "degraded": response.degraded})
        by_intent: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_intent[row["intent"] or "unlabelled"].append(row)
        return GoldenReport(
            overall=_mean(rows),
            by_intent={i: {"n": len(r), **_mean(r)} for i, r in sorted(by_intent.items())},
            queries=rows, seconds=round(time.perf_counter() - start, 2),
        )
