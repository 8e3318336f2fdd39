"""What history costs, old and new side by side in one run: indexing time and snapshot size with
`history.index` false and true; then query latency with and without history over the same snapshot, queries
alternating between the pipelines.

    python -m lab.eval.history_cost --repo GIT_DIR --name OWNER/NAME --out FILE.json [--queries FILE.jsonl]
        [--compare-defaults]
        [--rounds N] [--limit N] [--set key=value ...]

`--runs LABELS --append-to REPORT` adds (or redoes) some index runs of
`PLAN` to an earlier report, keeping its other runs and its query latencies.

Every index run gets its own index root; the first run (history off) also warms the shared embedding and
parse caches, so the history runs are compared with a second, warm run without history. The history runs
read git cold (a private history cache), as a repository's first index does, except `history-again`: a
re-index of the same commit over `history`'s cache, as a repository's next index does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from semantica.config import load_config


def _bytes(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def index_run(repo: str, name: str, work: Path, label: str, overrides: list[str], history_cache: str) -> dict[str, Any]:
    """One index of `repo` under its own index root; `history_cache` names the run whose history cache it uses."""
    from pipelines.indexer import Indexer
    from semantica.layout import IndexLayout

    config = load_config(None, [f"paths.index_root={work / label / 'index'}", f"paths.cache_dir={work / 'cache'}",
                                f"history.cache_file={work / history_cache / 'history.sqlite'}", *overrides],
                         environ={})
    start = time.perf_counter()
    summary = Indexer(config, progress=False).index(repo, name)
    wall = time.perf_counter() - start
    paths = IndexLayout(config.paths.index_root).current(name)
    history = paths.history
    return {"label": label, "wall_s": round(wall, 2), "stages_s": {k: round(v, 2) for k, v in summary.seconds.items()},
            "snapshot_bytes": _bytes(paths.root), "history_bytes": _bytes(history) if history.is_dir() else 0,
            "index_root": str(config.paths.index_root), "overrides": overrides}


def query_runs(index_root: str, cache: Path, queries: list[str], rounds: int, variants: dict[str, list[str]],
               base: list[str]) -> dict[str, Any]:
    from serving.pipeline import SearchPipeline, SearchRequest

    fresh = "query.query_cache_items=0"  # every round searches: a cached answer would time the cache
    pipelines = {label: SearchPipeline(load_config(None, [f"paths.index_root={index_root}", f"paths.cache_dir={cache}",
                                                          fresh, *base, *extra], environ={}))
                 for label, extra in variants.items()}
    for pipeline in pipelines.values():  # warm-up: snapshot open, models and BM25 loaded
        pipeline.search(SearchRequest(query=queries[0], k=10))
    times: dict[str, list[float]] = {label: [] for label in pipelines}
    stage_ms: dict[str, dict[str, list[float]]] = {label: {} for label in pipelines}
    for _ in range(rounds):
        for query in queries:
            for label, pipeline in pipelines.items():  # alternating: load drifts hit every variant alike
                start = time.perf_counter()
                response = pipeline.search(SearchRequest(query=query, k=10))
                times[label].append(1000 * (time.perf_counter() - start))
                for stage in ("history", "localizer"):
                    if stage in response.timings_ms:
                        stage_ms[label].setdefault(stage, []).append(response.timings_ms[stage])
    out: dict[str, Any] = {"queries": len(queries), "rounds": rounds}
    for label, values in times.items():
        v = np.array(values)
        out[label] = {"n": len(v), "p50_ms": round(float(np.percentile(v, 50)), 1),
                      "p99_ms": round(float(np.percentile(v, 99)), 1),
                      "stage_p50_ms": {s: round(float(np.median(x)), 1) for s, x in stage_ms[label].items()}}
    first = next(iter(pipelines))
    for label in pipelines:
        out[label]["p50_ratio"] = round(out[label]["p50_ms"] / out[first]["p50_ms"], 3)
        out[label]["p99_ratio"] = round(out[label]["p99_ms"] / out[first]["p99_ms"], 3)
    return out


# the defaults before history was on (`--compare-defaults`): candidates-first, no history features
OLD_DEFAULTS = ["localizer.learned_files=false", "localizer.history_features=false",
                "localizer.model_dir=models/localizer"]

PLAN = [("off-cold", ["history.index=false"], "off-cold"), ("off", ["history.index=false"], "off"),
        ("history", ["history.index=true"], "history"),
        ("history-again", ["history.index=true"], "history")]  # a re-index: the history cache is warm
"""(label, overrides, the run whose history cache it reads); the first run warms the embedding cache."""


def summarize_index(report: dict[str, Any]) -> None:
    """Ratios of the index runs: each run against its own wall time less its history stages (`stage_ratio`),
    against the warm run without history (`index_ratio`), and a first index (cold embeddings, cold history)
    as the cold run plus the cold history read (`first_index_ratio`)."""
    commits = report["first_parent_commits"]
    runs = report["index"]
    by = {r["label"]: r for r in runs}
    for run in runs:
        stages = run["stages_s"]
        extra = stages.get("history", 0.0)
        run["stage_ratio"] = round(run["wall_s"] / max(1e-9, run["wall_s"] - extra), 3)
        run["history_s_per_1000_commits"] = round(1000 * stages.get("history", 0.0) / commits, 1)
        run["history_bytes_per_1000_commits"] = round(1000 * run["history_bytes"] / commits)
    if "off" in by:
        off = by["off"]
        report["index_ratio"] = {label: round(by[label]["wall_s"] / off["wall_s"], 3) for label in by}
        report["per_1000_commits"] = {label: {"extra_s": round(1000 * (by[label]["wall_s"] - off["wall_s"]) / commits, 1),
                                              "history_s": by[label]["history_s_per_1000_commits"],
                                              "history_bytes": round(1000 * by[label]["history_bytes"] / commits)}
                                      for label in ("history", "history-again") if label in by}
    if "off-cold" in by and "history" in by:
        cold = by["off-cold"]["wall_s"]
        report["first_index_ratio"] = round((cold + by["history"]["stages_s"].get("history", 0.0)) / cold, 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--queries", default="")
    parser.add_argument("--repo-filter", default="")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the queries (the history retriever "
                        "keeps a few recent queries' votes: more than 1 times that cache)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many queries (0: all)")
    parser.add_argument("--skip-index-cost", action="store_true")
    parser.add_argument("--runs", default="", help="only these index runs (comma-separated labels of PLAN; 'none')")
    parser.add_argument("--append-to", default="", help="a report of an earlier run: its runs and queries are kept")
    parser.add_argument("--compare-defaults", action="store_true", help="query variants: the old defaults "
                        "(OLD_DEFAULTS) against today's, over the snapshot indexed with history")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args(argv)
    work = Path(args.work)
    commits = int(subprocess.run(["git", "-C", args.repo, "rev-list", "--first-parent", "--count", "HEAD"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    report: dict[str, Any] = {"repo": args.name, "first_parent_commits": commits, "set": args.set,
                              "load_average": list(__import__("os").getloadavg())}
    previous = json.loads(Path(args.append_to).read_text()) if args.append_to else {}
    if previous:  # a completed report: this run adds or replaces index runs, its load is recorded beside
        report["load_average"], report["appended_load_average"] = previous["load_average"], report["load_average"]
    runs = list(previous.get("index", []))
    plan = [(label, overrides, cache) for label, overrides, cache in PLAN
            if not args.runs or label in args.runs.split(",")]
    if args.skip_index_cost:  # one run: the history stages' share of it is the ratio (`stage_ratio`)
        plan = [plan[-1]]
    for label, overrides, cache in plan:
        run = index_run(args.repo, args.name, work, label, [*args.set, *overrides], cache)
        print(json.dumps(run), flush=True)
        runs = [r for r in runs if r["label"] != label] + [run]
    report["index"] = runs
    summarize_index(report)
    if "query" in previous:
        report["query"] = previous["query"]
    if args.queries:
        queries = [json.loads(line)["problem_statement"] for line in Path(args.queries).read_text().splitlines()
                   if line.strip() and (not args.repo_filter or json.loads(line)["repo"] == args.repo_filter)]
        variants = {"+ localizer": ["localizer.enabled=true"],
                    "+ localizer with history features": ["localizer.enabled=true", "localizer.history_features=true"]}
        if args.compare_defaults:
            variants = {"old defaults": OLD_DEFAULTS, "new defaults": []}
        queries = queries[: args.limit or None]
        served = next(r for r in runs if r["history_bytes"])
        report["query"] = query_runs(served["index_root"], work / "cache", queries, args.rounds, variants, args.set)
        print(json.dumps(report["query"], indent=1))
    report["load_average_end"] = list(__import__("os").getloadavg())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
