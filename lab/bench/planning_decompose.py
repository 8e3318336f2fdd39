"""Query planning measured: decomposition on vs off (a benchmark, not a test).

1. **Localization** on the SWE-bench dev split, replayed over mined lists (`eval swebench --mine DIR`
   with planning on stores the main query's lists and every sub-query list): `planning.decompose.enabled`
   off and on, overall and per repository (the frames are the one kind the product keeps: the other kinds'
   ablations and routes ran on the commits before they left, lab/README.md "Query planning").
2. **Latency** of the in-process query (response cache off), the default config against
   `planning.enabled=false`, over the
   current snapshot of each benchmark repository in `--index-root`, with each repository's own issue
   texts as queries, alternating the two configs query by query so machine load hits both alike.

    python -m lab.bench.planning_decompose --instances swebench_lite_dev.jsonl --mined DIR \
        --index-root DIR [--set ...] [--latency-repeats 2] --out lab/results/planning/dev.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import write_result
from jobs.eval.instances import load_instances
from jobs.eval.replay import LocalizationReplay
from semantica.config import Config, load_config

COMBINATIONS = {"no planning": "false", "decomposition": "true"}
FILE_KEYS = ("Acc@1", "Acc@3", "Acc@5")
FUNCTION_KEYS = ("Acc@5", "Acc@10")
P99 = 0.99


def _config(base: list[str], decompose: str) -> Config:
    return load_config(None, [*base, f"planning.decompose.enabled={decompose}"])


def localization(instances: list[Any], mined: str, base: list[str]) -> dict[str, Any]:
    replay: LocalizationReplay | None = None
    out: dict[str, Any] = {}
    for name, decompose in COMBINATIONS.items():
        config = _config(base, decompose)
        if replay is None:
            replay = LocalizationReplay(config, mined)
        else:
            replay.reconfigure(config)
        out[name] = replay.run(instances)
    return out


def latency(instances: list[Any], base: list[str], index_root: str, repeats: int) -> dict[str, Any]:
    """p50/p99 seconds per config; queries run on each repository's current snapshot."""
    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    extra = ("query.query_cache_items=0", "late_interaction.enabled=false", f"paths.index_root={index_root}")
    # planning as a whole: the default config against planning.enabled=false
    pipelines = {"off": SearchPipeline(load_config(None, [*base, *extra, "planning.enabled=false"])),
                 "on": SearchPipeline(load_config(None, [*base, *extra]))}
    repos = set(pipelines["off"].snapshots.repos()) & {i.repo for i in instances}
    queries = [(i.repo, i.problem_statement) for i in instances if i.repo in repos]
    for pipeline in pipelines.values():  # warm: encoder, JVM, tables, graphs
        for repo in sorted(repos):
            pipeline.search(SearchRequest(query=next(q for r, q in queries if r == repo), repos=[repo], k=10))
    seconds: dict[str, list[float]] = {name: [] for name in pipelines}
    for _ in range(repeats):
        for repo, query in queries:
            for name, pipeline in pipelines.items():
                started = time.perf_counter()
                pipeline.search(SearchRequest(query=query, repos=[repo], k=10))
                seconds[name].append(time.perf_counter() - started)
    out: dict[str, Any] = {"queries": len(queries), "repeats": repeats, "repos": sorted(repos),
                           "late_interaction": False}
    for name, values in seconds.items():
        ordered = sorted(values)
        out[name] = {"p50_s": round(statistics.median(ordered), 4),
                     "p99_s": round(ordered[min(len(ordered) - 1, int(P99 * len(ordered)))], 4)}
    out["p50_ratio"] = round(out["on"]["p50_s"] / out["off"]["p50_s"], 2)
    return out


def table(results: dict[str, Any]) -> str:
    lines = ["| scope | config | n | file Acc@1 | Acc@3 | Acc@5 | func Acc@5 | Acc@10 |", "|---|---|---|---|---|---|---|---|"]
    scopes = ["overall", *sorted(next(iter(results.values()))["by_repo"])]
    for scope in scopes:
        for name, metrics in results.items():
            m = metrics["overall"] if scope == "overall" else metrics["by_repo"][scope]
            f, g = m["file"], m["function"]
            lines.append(f"| {scope} | {name} | {f.get('n', '')} | " + " | ".join(f"{100 * f[k]:.1f}" for k in FILE_KEYS)
                         + " | " + " | ".join(f"{100 * g[k]:.1f}" for k in FUNCTION_KEYS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", required=True)
    parser.add_argument("--mined", required=True)
    parser.add_argument("--repo-filter", nargs="+", default=None)
    parser.add_argument("--index-root", default="", help="measure latency over the snapshots here ('' = skip)")
    parser.add_argument("--latency-repeats", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    instances = load_instances(args.instances)
    if args.repo_filter:
        instances = [i for i in instances if i.repo in set(args.repo_filter)]
    results: dict[str, Any] = {"localization": localization(instances, args.mined, args.overrides)}
    print(table(results["localization"]))
    if args.index_root:
        results["latency"] = latency(instances, args.overrides, args.index_root, args.latency_repeats)
        print(json.dumps(results["latency"]))
    out = Path(args.out)
    write_result(results, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
