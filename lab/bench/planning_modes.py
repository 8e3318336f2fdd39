"""Query planning, piece by piece, on the golden set over this repository (a benchmark, not a test).

`python -m lab.bench.planning_modes --index-root DIR [--repo semantica/self]` runs the golden queries through
the pipeline once per variant (planning off; each piece alone; everything), with one warm-up pass,
and reports P@5 / R@10 / MRR / NDCG@10 plus p50 / p99 query latency. Requests carry no k, so the
dynamic-K variants return what they choose (the metrics stay @10: a smaller K can only lose there).
Results: lab/results/planning_modes.json and a markdown table.

With `--other-repo NAME` it measures what a second repository costs instead: the same golden queries asked of
[repo, NAME] (a second indexed repository competing for the same K) against `repo` alone; the other
repository's hits are never relevant. Results: lab/results/planning_second_repo.json (budgets across
repositories were measured the same way before they left the product: planning_budgets.json, lab/README.md).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, RESULTS_DIR, percentile
from jobs.eval.golden import GOLDEN_K, _mean, load_golden_set, score_hits
from semantica.api import SearchRequest
from semantica.config import load_config
from serving.pipeline import SearchPipeline

GOLDEN_SET = Path(__file__).resolve().parents[2] / "conf" / "golden" / "semantica.jsonl"
UNIT = "{vector: 1.0, lexical: 1.0, symbol: 1.0, graph: 1.0}"
ALL_OFF = ["planning.analyzer.enabled=false"]
VARIANTS: dict[str, list[str]] = {  # MMR: `--mode mmr_diverse` (only a forced mode gets it)
    "planning off": ["planning.enabled=false"],
    "mode weights only": ["planning.enabled=true", *ALL_OFF, "planning.analyzer.enabled=true"],
    "default (mode weights)": [],
}
BUDGET_VARIANTS: dict[str, list[str]] = {  # --other-repo: [repo, other]
    "both repositories": [],
}


def run_variant(name: str, overrides: list[str], base: list[str], repo: str, queries: list,
                mode: str | None = None, other: str | None = None) -> dict[str, Any]:
    config = load_config(None, [*base, *overrides])
    pipeline = SearchPipeline(config)
    repos = [repo, other] if other else [repo]
    for q in queries[:3]:  # warm-up: encoder, JVM, FAISS, tables
        pipeline.search(SearchRequest(query=q.query, repos=repos))
    rows, latencies, planning_ms, modes, retried, primary_hits = [], [], [], {}, 0, 0
    for q in queries:
        pipeline._cache.clear()  # every query answered, not served from the response cache
        start = time.perf_counter()
        response = pipeline.search(SearchRequest(query=q.query, repos=repos, mode=mode))
        latencies.append((time.perf_counter() - start) * 1000)
        planning_ms.append(response.timings_ms.get("planning", 0.0))  # the planner's own stages
        primary_hits += sum(h.repo == repo for h in response.hits[:GOLDEN_K])
        rows.append(score_hits([(h.path if h.repo == repo else f"{h.repo}:{h.path}", h.symbol)  # other: never relevant
                                for h in response.hits], q, GOLDEN_K))
        if response.plan:
            modes[response.plan["mode"]] = modes.get(response.plan["mode"], 0) + 1
            retried += bool(response.plan.get("retries"))  # retry left the product: 0
    return {"variant": name + (f", every query forced to {mode}" if mode else ""), "overrides": overrides,
            **_mean(rows), "p50_ms": round(percentile(latencies, 0.5), 1),
            "p99_ms": round(percentile(latencies, PERCENTILE_99), 1),
            "planning_p50_ms": round(percentile(planning_ms, 0.5), 2),
            "planning_p99_ms": round(percentile(planning_ms, PERCENTILE_99), 2), "modes": modes, "retried": retried,
            "primary_share_at_10": round(primary_hits / max(1, GOLDEN_K * len(queries)), 3), "repos": repos,
            "queries": len(queries)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", required=True)
    parser.add_argument("--repo", default="semantica/self")
    parser.add_argument("--set", action="append", default=[], help="extra config overrides for every variant")
    parser.add_argument("--variant", action="append", default=[], choices=list(VARIANTS))
    parser.add_argument("--mode", help="force this search mode on every query (SearchRequest.mode)")
    parser.add_argument("--other-repo", help="measure a second repository: ask [repo, OTHER]")
    parser.add_argument("--out")
    args = parser.parse_args()
    queries = load_golden_set(GOLDEN_SET)
    base = [f"paths.index_root={args.index_root}", "freshness.enabled=false", *args.set]
    if args.other_repo:
        results = [run_variant(f"{args.repo} alone", [], base, args.repo, queries)]
        results += [run_variant(n, o, base, args.repo, queries, other=args.other_repo) for n, o in BUDGET_VARIANTS.items()]
    else:
        results = [run_variant(n, VARIANTS[n], base, args.repo, queries, args.mode) for n in (args.variant or VARIANTS)]
    out = Path(args.out or RESULTS_DIR / ("planning_second_repo.json" if args.other_repo else "planning_modes.json"))
    out.write_text(json.dumps({"repo": args.repo, "other_repo": args.other_repo, "golden_set": str(GOLDEN_SET.name),
                               "results": results}, indent=2) + "\n")
    print("| variant | P@5 | R@10 | MRR | NDCG@10 | primary share @10 | p50 ms | p99 ms | planner p50 / p99 ms | retried |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['variant']} | {r['P@5']:.3f} | {r['R@10']:.3f} | {r['MRR']:.3f} | {r['NDCG@10']:.3f} | "
              f"{r['primary_share_at_10']} | {r['p50_ms']} | {r['p99_ms']} | "
              f"{r['planning_p50_ms']} / {r['planning_p99_ms']} | {r['retried']}/{r['queries']} |")


if __name__ == "__main__":
    main()
