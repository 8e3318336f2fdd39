"""Short identifier queries on a real index: per-stage times, old code vs new code in one run, interleaved.

    python -m lab.bench.short_query --index-root DIR --cache-dir DIR --repo NAME \\
        [--baseline CHECKOUT] [--rounds 4] [--queries 40] [--set section.field=value] [--out FILE]

Each round runs one fresh worker process per side (`--baseline` checkout first, then this one; sides
alternate which goes first), each over the same index and the same identifier queries (symbol names drawn
from the snapshot, seeded). A worker loads everything with one warm-up query, then times every query
uncached (result cache and query-embedding memory cleared: a new query, encoding included) and again
cached (the same request a second time). Reported per side: whole-query p50/p99, each stage's p50 from
`SearchResponse.timings_ms`, and new/old ratios; the load average is recorded beside every round because
the machine may be shared. `--set` overrides apply to the new side only (A/B of a switch on one code base
is `--baseline .` with the switch set).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, percentile
from jobs.bench.stats import write_result as save

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "fast" / "short_query.json"
SEED = 13
MIN_NAME_CHARS = 4

# Runs with the side's checkout as the working directory: only APIs both sides have.
WORKER = r"""
import json, random, sys, time
from semantica.config import load_config
from semantica.api import SearchRequest
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from serving.pipeline import SearchPipeline
spec = json.loads(sys.argv[1])
config = load_config(None, [f"paths.index_root={spec['root']}", f"paths.cache_dir={spec['cache']}", *spec["set"]],
                     environ={})
snapshot = Snapshot.open(IndexLayout(spec["root"]).current(spec["repo"]), config)
names = sorted({s.name for s in snapshot.symbols if len(s.name) >= spec["min_chars"]})
queries = random.Random(spec["seed"]).sample(names, min(spec["queries"], len(names)))
pipeline = SearchPipeline(config)
pipeline.search(SearchRequest(query="warm up", repos=[spec["repo"]], k=10))
rows = []
for query in queries:
    pipeline._cache.clear()
    pipeline.query_encoder._memory.clear()
    start = time.perf_counter()
    response = pipeline.search(SearchRequest(query=query, repos=[spec["repo"]], k=10))
    ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    again = pipeline.search(SearchRequest(query=query, repos=[spec["repo"]], k=10))
    cached_ms = (time.perf_counter() - start) * 1000
    rows.append({"query": query, "ms": ms, "cached_ms": cached_ms, "stages": response.timings_ms,
                 "top": [h.chunk_id for h in response.hits], "intent": response.intent["dominant"],
                 "cache_hit": bool(again.cached)})
print("RESULT " + json.dumps(rows))
"""


def load() -> float:
    return round(os.getloadavg()[0], 2)


def run_worker(side: Path, spec: dict[str, Any]) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(side), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, "-c", WORKER, json.dumps(spec)], cwd=side, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"worker in {side} failed: {done.stderr[-2000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def side_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ms = [r["ms"] for r in rows]
    cached = [r["cached_ms"] for r in rows]
    stages: dict[str, list[float]] = {}
    for row in rows:
        for stage, value in row["stages"].items():
            stages.setdefault(stage, []).append(value)
    return {"n": len(ms), "p50_ms": round(percentile(ms, 0.5), 1), "p99_ms": round(percentile(ms, PERCENTILE_99), 1),
            "cached_p50_ms": round(percentile(cached, 0.5), 2), "cached_p99_ms": round(percentile(cached, PERCENTILE_99), 2),
            "cache_hits": sum(r["cache_hit"] for r in rows),
            "stage_p50_ms": {k: round(statistics.median(v), 2) for k, v in sorted(stages.items())},
            "stage_mean_ms": {k: round(statistics.fmean(v), 2) for k, v in sorted(stages.items())}}


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, float]:
    """new / old per figure (below 1: the new code is faster)."""
    out = {key: round(new[key] / max(old[key], 1e-9), 3) for key in ("p50_ms", "p99_ms", "cached_p50_ms")}
    for stage, value in new["stage_p50_ms"].items():
        if stage in old["stage_p50_ms"]:
            out[f"stage:{stage}"] = round(value / max(old["stage_p50_ms"][stage], 1e-9), 3)
    return out


def same_answers(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> float:
    """Share of queries whose top-10 chunk list is identical on both sides."""
    by_query = {r["query"]: r["top"] for r in old}
    return round(sum(by_query.get(r["query"]) == r["top"] for r in new) / max(len(new), 1), 3)


def run(args: argparse.Namespace) -> dict[str, Any]:
    spec = {"root": str(args.index_root), "cache": str(args.cache_dir), "repo": args.repo, "queries": args.queries,
            "seed": SEED, "min_chars": MIN_NAME_CHARS}
    sides = {"old": (args.baseline.resolve(), []), "new": (REPO_ROOT, args.set)}
    out: dict[str, Any] = {"command": "python -m lab.bench.short_query " + " ".join(args.argv), "cpus": os.cpu_count(),
                           "baseline": str(sides["old"][0]), "rounds": []}
    rows: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for number in range(args.rounds):
        order = ["old", "new"] if number % 2 == 0 else ["new", "old"]
        entry: dict[str, Any] = {"order": order}
        for name in order:
            root, overrides = sides[name]
            before = load()
            got = run_worker(root, {**spec, "set": overrides})
            rows[name].extend(got)
            entry[name] = {"load_before": before, "load_after": load(), **side_summary(got)}
        out["rounds"].append(entry)
        save(out, args.out)
    out["old"], out["new"] = side_summary(rows["old"]), side_summary(rows["new"])
    out["new_over_old"] = compare(out["old"], out["new"])
    out["identical_top10"] = same_answers(rows["old"], rows["new"])
    save(out, args.out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--repo", required=True, help="the indexed repository's name")
    parser.add_argument("--baseline", type=Path, default=REPO_ROOT, help="checkout of the old code (default: this one)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--set", action="append", default=[], help="section.field=value, new side only")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    started = time.perf_counter()
    result = run(args)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    save(result, args.out)
    print(json.dumps({k: result[k] for k in ("old", "new", "new_over_old", "identical_top10")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
