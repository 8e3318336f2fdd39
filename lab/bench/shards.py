"""What shard fan-out costs: the same repository indexed as one shard and as many small ones, the vector
(FAISS per shard, merged) and lexical (Lucene MultiReader over the shards) retrievers timed on the same
queries, and whether the top-k agree.

    python -m lab.bench.shards --repo-path /tmp/requests --name psf/requests --work DIR [--shard-size 100]

The embedding cache is shared by both builds, so the second build only rewrites shards. Query encoding
is done once per query before timing (it is memoised): the figures are search + merge only.
Results: lab/results/shards.json and docs/results.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from jobs.bench.ratios import REQUESTS_QUERIES, SELF_QUERIES, summary
from jobs.bench.stats import report_result
from semantica.config import load_config
from serving.pipeline import SearchPipeline
from serving.retrievers.base import RetrievalQuery

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "shards.json"
REPEATS = 5
K = 100
TOP_COMPARED = 10


def build(work: Path, repo_path: str, name: str, shard_size: int | None) -> SearchPipeline:
    from pipelines.indexer import Indexer

    label = f"shards-{shard_size}" if shard_size else "one-shard"
    overrides = [f"paths.index_root={work / label}", f"paths.cache_dir={work / 'cache'}"]
    if shard_size:
        overrides += [f"faiss.shard_max_vectors={shard_size}", f"lucene.shard_max_docs={shard_size}"]
    config = load_config(None, overrides)
    Indexer(config, progress=False).index(repo_path, name)
    pipeline = SearchPipeline(config)
    pipeline.prefetch([name]).wait()
    return pipeline


def time_retrievers(pipeline: SearchPipeline, name: str, queries: list[str]) -> dict[str, Any]:
    retrievers = pipeline.retrievers(pipeline.snapshots.get(name))
    out: dict[str, Any] = {}
    for strategy in ("vector", "lexical"):
        retriever = retrievers.get(strategy)
        tops = {q: [c for c, _ in retriever.search_scored(RetrievalQuery(q), K)][:TOP_COMPARED] for q in queries}  # warm
        ms = []
        for _ in range(REPEATS):
            for q in queries:
                start = time.perf_counter()
                retriever.search_scored(RetrievalQuery(q), K)
                ms.append((time.perf_counter() - start) * 1000)
        out[strategy] = {**summary(ms), "top": tops}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.bench.shards", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo-path", required=True)
    parser.add_argument("--name", default="psf/requests")
    parser.add_argument("--work", required=True, help="a scratch directory for the two indexes and their cache")
    parser.add_argument("--shard-size", type=int, default=100, help="vectors / documents per shard in the sharded build")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    work = Path(args.work)
    queries = [q for qs in (REQUESTS_QUERIES if args.name == "psf/requests" else SELF_QUERIES).values() for q in qs]
    one = build(work, args.repo_path, args.name, None)
    many = build(work, args.repo_path, args.name, args.shard_size)
    snapshot = many.snapshots.get(args.name)
    a, b = time_retrievers(one, args.name, queries), time_retrievers(many, args.name, queries)
    result: dict[str, Any] = {
        "repo": args.name, "chunks": len(snapshot.chunks), "shard_size": args.shard_size,
        "shards": {"faiss": len(snapshot.shard_paths("faiss")), "lucene": len(snapshot.shard_paths("lucene"))},
        "queries": len(queries), "repeats": REPEATS, "k": K, "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    for strategy in ("vector", "lexical"):
        same = sum(a[strategy]["top"][q] == b[strategy]["top"][q] for q in queries)
        result[strategy] = {"one_shard": {k: v for k, v in a[strategy].items() if k != "top"},
                            "many_shards": {k: v for k, v in b[strategy].items() if k != "top"},
                            "fan_out_cost_p50_ms": round(b[strategy]["p50_ms"] - a[strategy]["p50_ms"], 2),
                            "ratio_p50": round(b[strategy]["p50_ms"] / max(a[strategy]["p50_ms"], 1e-9), 2),
                            f"same_top{TOP_COMPARED}_queries": f"{same}/{len(queries)}"}
    report_result(result, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
