"""Short queries in process on a real index: whole-query p50/p99 and each stage's p50, with the load average (a
benchmark, not a test).

    python -m jobs.bench short-query --index-root DIR --cache-dir DIR --repo NAME [--queries 40] [--rounds 3] \\
        [--phrase TEXT ...] [--set section.field=value] [--out FILE]

Two classes of query, each asked new every time (answer cache and query-embedding memory cleared, so the work is
measured, not the LRU): `identifier`, symbol names of the snapshot (seeded draw), and `words`, 2-4 word queries
(the `--phrase`s given, else the words of other drawn names: `pytest_collection_modifyitems` asks "pytest
collection modifyitems"). One warm-up query of each class loads everything first (an identifier lookup skips the
learned localizer and history, which a words query loads). Each query's answer (hits, files, functions, context) is
recorded as a digest, so two checkouts' runs over one index show the same answers or not (`--compare FILE`). The
load average is recorded before and after: on a shared machine read the figures beside it, and compare code only in
one run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, percentile, report_result
from semantica.api import SearchRequest, SearchResponse
from semantica.config import load_config
from semantica.ondisk.layout_errors import LayoutError
from semantica.ondisk.repo_names import RepoNameError
from serving.pipeline import SearchPipeline

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED = 13
MIN_NAME_CHARS = 4
WORDS = (2, 4)  # a `words` query has this many words at least and at most
DEFAULT_QUERIES = 40
DEFAULT_ROUNDS = 3
ANSWER_FIELDS = ("hits", "files", "functions", "context", "degraded", "graph")  # what a speed change must keep
DIGEST_CHARS = 16


def draw_queries(names: list[str], count: int, phrases: list[str]) -> dict[str, list[str]]:
    """`count` identifiers and `count` 2-4 word queries (the phrases, else other names' words)."""
    rng = random.Random(SEED)
    pool = sorted({n for n in names if len(n) >= MIN_NAME_CHARS})
    identifiers = rng.sample(pool, min(count, len(pool)))
    words = list(phrases)
    for name in rng.sample(pool, len(pool)):
        if len(words) >= count:
            break
        parts = [p.lower() for p in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)]
        if WORDS[0] <= len(parts) <= WORDS[1]:
            words.append(" ".join(parts))
    return {"identifier": identifiers, "words": words[:count] if not phrases else words}


def timed(pipeline: SearchPipeline, repo: str, query: str) -> tuple[float, SearchResponse]:
    pipeline._cache.clear()  # a new query: the work, not the answer cache
    pipeline.query_encoder._memory.clear()  # and the query-embedding memory: encoding included
    start = time.perf_counter()
    response = pipeline.search(SearchRequest(query, repos=[repo], k=10))
    return (time.perf_counter() - start) * 1000, response


def answer_digest(response: SearchResponse) -> str:
    """The answer without its timings and freshness, hashed: equal digests, equal answers."""
    fields = {name: getattr(response, name) for name in ANSWER_FIELDS}
    text = json.dumps(fields, sort_keys=True, default=lambda value: getattr(value, "__dict__", str(value)))
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def differing(answers: dict[str, str], baseline: Path) -> list[str]:
    """The queries whose answer differs from (or is missing in) another run's result file."""
    theirs = json.loads(baseline.read_text()).get("answers", {})
    return sorted(query for query, digest in answers.items() if theirs.get(query) != digest)


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values), 2), "p99_ms": round(percentile(values, PERCENTILE_99), 2),
            "n": len(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES, help="per class")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--phrase", action="append", default=[], help="a 2-4 word query (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    parser.add_argument("--compare", type=Path, help="another run's result file: list the queries answered otherwise")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results" / "short_query.json")
    args = parser.parse_args(argv)
    if args.compare and not args.compare.is_file():  # checked before the minutes of queries it would end
        parser.error(f"--compare {args.compare}: no such result file")
    config = load_config(None, [f"paths.index_root={args.index_root}", f"paths.cache_dir={args.cache_dir}", *args.set])
    pipeline = SearchPipeline(config)
    try:
        snapshot = pipeline.snapshots.get(args.repo)
    except (LayoutError, RepoNameError) as exc:  # a name not indexed under --index-root, or unreadable there
        parser.error(f"--repo {args.repo}: {exc}")
    classes = draw_queries([s.name for s in snapshot.symbols], args.queries, args.phrase)
    load_before = os.getloadavg()
    for queries in classes.values():  # warm-up: loads what each class reads
        pipeline.search(SearchRequest(queries[0], repos=[args.repo], k=10))
    totals: dict[str, list[float]] = {name: [] for name in classes}
    stages: dict[str, list[float]] = {}
    answers: dict[str, str] = {}
    for _ in range(args.rounds):
        for name, queries in classes.items():
            for query in queries:
                ms, response = timed(pipeline, args.repo, query)
                totals[name].append(ms)
                answers[query] = answer_digest(response)
                for stage, stage_ms in response.timings_ms.items():
                    stages.setdefault(stage, []).append(stage_ms)
    every = [ms for values in totals.values() for ms in values]
    result: dict[str, Any] = {
        "repo": args.repo, "snapshot": snapshot.snapshot_id, "rounds": args.rounds, "overrides": args.set,
        "load_average": {"before": [round(v, 2) for v in load_before], "after": [round(v, 2) for v in os.getloadavg()]},
        "all": summary(every), "classes": {name: summary(values) for name, values in totals.items()},
        "stages_p50_ms": {s: round(statistics.median(v), 2) for s, v in sorted(stages.items())},
        "queries": classes, "answers": answers,
    }
    if args.compare:
        result["differing_answers"] = differing(answers, args.compare)
    report_result(result, args.out)
    return 0

