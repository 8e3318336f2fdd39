"""Identifier queries with and without the vector retriever: time and the defining file (a benchmark).

    python -m lab.bench.identifier_vector --index-root DIR --cache-dir DIR --repo NAME [--queries 40] [--rounds 2]

The question: would skipping dense retrieval for a query that is one identifier (as late interaction is skipped)
bring short-query p50 under 20 ms without losing the answer? The same seeded symbol names as
`lab.bench.short_query`, each asked uncached with every retriever and without `vector`, sides alternating per
round; quality is whether a file defining the name is the first file, in the top 5 files, and the first hit's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from typing import Any

from jobs.bench.stats import PERCENTILE_99, percentile

SEED = 13
MIN_NAME_CHARS = 4
SIDES = ("default", "no_vector")


def main(argv: list[str] | None = None) -> int:
    from semantica.api import SearchRequest
    from semantica.config import load_config
    from semantica.layout import IndexLayout
    from semantica.snapshot import Snapshot
    from serving.pipeline import SearchPipeline

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-root", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    config = load_config(None, [f"paths.index_root={args.index_root}", f"paths.cache_dir={args.cache_dir}"], environ={})
    snapshot = Snapshot.open(IndexLayout(args.index_root).current(args.repo), config)
    definers: dict[str, set[str]] = {}
    for symbol in snapshot.symbols:
        definers.setdefault(symbol.name, set()).add(symbol.path)
    names = sorted(n for n in definers if len(n) >= MIN_NAME_CHARS)
    queries = random.Random(SEED).sample(names, min(args.queries, len(names)))
    pipeline = SearchPipeline(config)
    pipeline.search(SearchRequest(query="warm up", repos=[args.repo], k=10))
    strategies = {"default": [], "no_vector": [s.name for s in pipeline.stages.retriever_specs if s.name != "vector"]}
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    found: dict[str, list[int]] = {side: [0, 0, 0] for side in SIDES}
    load_before = os.getloadavg()
    for round_ in range(args.rounds):
        for query in queries:
            for side in SIDES if round_ % 2 == 0 else SIDES[::-1]:
                pipeline._cache.clear()
                pipeline.query_encoder._memory.clear()
                start = time.perf_counter()
                response = pipeline.search(SearchRequest(query=query, repos=[args.repo], k=10, strategies=strategies[side]))
                times[side].append((time.perf_counter() - start) * 1000)
                if round_ == 0:
                    files = [f["path"] for f in response.files]
                    found[side][0] += bool(files[:1]) and files[0] in definers[query]
                    found[side][1] += bool(set(files[:5]) & definers[query])
                    found[side][2] += bool(response.hits) and response.hits[0].path in definers[query]
    out: dict[str, Any] = {"repo": args.repo, "queries": len(queries), "rounds": args.rounds,
                           "load_average": {"before": load_before, "after": os.getloadavg()}}
    for side in SIDES:
        out[side] = {"p50_ms": round(statistics.median(times[side]), 1),
                     "p99_ms": round(percentile(times[side], PERCENTILE_99), 1),
                     "defining_file_at_1": found[side][0], "defining_file_in_top_5": found[side][1],
                     "first_hit_defines": found[side][2]}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
