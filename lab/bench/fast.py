"""Old code vs this code, measured in the same run (a benchmark, not a test): the machine is shared and
noisy, so every figure is a ratio of two runs taken side by side, with the load average beside it.

    python -m lab.bench.fast --baseline DIR [--paths semantica serving | --golden-files] [--runs 3]

`--baseline` is a checkout of the code to compare against (e.g. `git archive <commit> | tar -x -C DIR`
with this venv linked in). Both sides run as subprocesses of their own code (`python -m jobs.cli`)
on one corpus: this repository's HEAD (or `--paths` of it, or with `--golden-files` the files the golden set
labels), with empty caches each. `--runs 0` skips the cold CLI queries.

- indexing: wall seconds and chunks/s of `jobs.cli index` (empty embedding cache);
- cold CLI query with the daemon off (a new process per query), alternating old/new;
- in one process: the first query, then warm p50 over the golden queries;
- the golden set: NDCG@10 (full pipeline, late interaction off) and whether each query's top-10 is the
  same list on both sides, and NDCG@10 with late interaction on and of the vector list alone;
- the heavy modules the cold CLI query imports.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import write_result as save
from lab.bench.golden_variants import GOLDEN_SET, golden_files

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "lab" / "results" / "fast.json"
CORPUS_NAME = "bench/corpus"
HEAVY_MODULES = ("torch", "transformers", "ray", "fastapi", "mcp", "onnxruntime", "jnius", "faiss", "pandas", "networkx")
COLD_QUERY = "publish a snapshot atomically"
TIMEOUT_S = 7200

# run inside each side's code: first query in a fresh process, warm p50, golden NDCG@10 and top-10 lists
IN_PROCESS = r"""
import json, statistics, sys, time
t0 = time.perf_counter()
from jobs.eval.golden import GoldenEval, load_golden_set, score_hits
from semantica.api import SearchRequest
from semantica.config import load_config
from serving.pipeline import SearchPipeline
settings, golden, repo = sys.argv[1:4]
config = load_config(None, json.loads(settings), environ={})
pipeline = SearchPipeline(config)
queries = load_golden_set(golden)
def ask(text, late=False, strategies=()):
    return pipeline.search(SearchRequest(query=text, repos=[repo], k=10, late_interaction=late,
                                         strategies=list(strategies)))
start = time.perf_counter()
ask(queries[0].query)
first_ms = (time.perf_counter() - start) * 1000
out = {"import_and_first_query_ms": round((time.perf_counter() - t0) * 1000, 1), "first_query_ms": round(first_ms, 1)}
warm, tops, ndcg = [], {}, []
for q in queries:
    pipeline._cache.clear() if hasattr(pipeline, "_cache") else None
    start = time.perf_counter()
    response = ask(q.query)
    warm.append((time.perf_counter() - start) * 1000)
    hits = [(h.path, h.symbol) for h in response.hits]
    tops[q.query] = [h.chunk_id for h in response.hits]
    ndcg.append(score_hits(hits, q, 10)["NDCG@10"])
out.update(warm_p50_ms=round(statistics.median(warm), 1), ndcg10=round(statistics.mean(ndcg), 4), top10=tops)
for label, late, strategies in (("ndcg10_late_on", True, ()), ("ndcg10_vector_only", False, ("vector",))):
    scores = []
    for q in queries:
        pipeline._cache.clear() if hasattr(pipeline, "_cache") else None
        scores.append(score_hits([(h.path, h.symbol) for h in ask(q.query, late, strategies).hits], q, 10)["NDCG@10"])
    out[label] = round(statistics.mean(scores), 4)
print("RESULT=" + json.dumps(out))
"""


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def make_corpus(paths: list[str], into: Path) -> Path:
    """This repository's HEAD (or some of its directories) as a fresh one-commit git repository."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", "HEAD", *paths], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    git = ["git", "-C", str(into), "-c", "user.email=bench@example.com", "-c", "user.name=bench"]
    subprocess.run(["git", "init", "-q", str(into)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "corpus"], check=True)
    return into


class Side:
    """One code base (old or new) with its own index root and cache."""

    def __init__(self, name: str, code: Path, work: Path, overrides: tuple[str, ...] = ()) -> None:
        self.name, self.code, self.overrides = name, code, overrides
        self.root, self.cache = work / name / "index", work / name / "cache"

    def settings(self) -> list[str]:
        return [f"paths.index_root={self.root}", f"paths.cache_dir={self.cache}", *self.overrides]

    def cli(self, *args: str, importtime: bool = False) -> tuple[float, subprocess.CompletedProcess[str]]:
        env = {**os.environ, "SEMANTICA__DAEMON__ENABLED": "false", "PYTHONPATH": str(self.code)}
        command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "jobs.cli", *args,
                   *[part for setting in self.settings() for part in ("--set", setting)]]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=self.code, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: {' '.join(args[:2])} failed: {done.stderr[-2000:]}")
        return time.perf_counter() - start, done

    def chunks(self) -> int:
        from semantica.layout import IndexLayout

        return int(IndexLayout(str(self.root)).current(CORPUS_NAME).read_manifest().counts["chunks"])

    def in_process(self) -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": str(self.code)}
        done = subprocess.run([sys.executable, "-c", IN_PROCESS, json.dumps(self.settings()),
                               str(GOLDEN_SET), CORPUS_NAME],
                              cwd=self.code, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: in-process run failed: {done.stderr[-2000:]}")
        return json.loads(done.stdout.rsplit("RESULT=", 1)[1])


def heavy_imports(side: Side) -> list[str]:
    _, done = side.cli("query", COLD_QUERY, "--repo", CORPUS_NAME, importtime=True)
    loaded = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return sorted(m for m in HEAVY_MODULES if m in loaded)


def cold_queries(sides: list[Side], runs: int, out: dict[str, Any]) -> None:
    """Cold CLI queries (a new process each, daemon off), old and new alternating, and their heavy imports."""
    cold: dict[str, list[float]] = {"old": [], "new": []}
    loads = []
    for _ in range(runs):
        for side in sides:
            loads.append(load_average())
            cold[side.name].append(side.cli("query", COLD_QUERY, "--repo", CORPUS_NAME)[0])
    out["cold_cli_query_s"] = {name: {"median": round(statistics.median(v), 2), "runs": [round(x, 2) for x in v]}
                               for name, v in cold.items()}
    out["cold_cli_query_s"]["ratio_new_over_old"] = round(statistics.median(cold["new"]) / statistics.median(cold["old"]), 2)
    out["cold_cli_query_s"]["load"] = loads
    out["heavy_imports_cold_query"] = {side.name: heavy_imports(side) for side in sides}


def run(baseline: Path, paths: list[str], runs: int, work: Path, out_path: Path,
        index_only: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """Index the corpus with each side (old, new, the `index_only` variants of new: one after the other), then
    the cold and in-process queries and the golden set on each side's own index."""
    corpus = make_corpus(paths, work / "corpus")
    sides = [Side("old", baseline, work), Side("new", REPO_ROOT, work)]
    queried = sides
    variants = [Side(name, REPO_ROOT, work, settings) for name, settings in (index_only or {}).items()]
    builds = [*sides, *variants]  # a variant of new right after new: the nearest load
    out: dict[str, Any] = {"corpus": {"repo_head": subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                                                                   capture_output=True, text=True).stdout.strip(),
                                      "paths": paths or ["(whole repository)"]},
                           "baseline": str(baseline), "cpus": os.cpu_count(),
                           "command": "python -m lab.bench.fast " + " ".join(sys.argv[1:])}
    index: dict[str, Any] = {}
    for side in builds:
        load = load_average()
        seconds, _ = side.cli("index", "--repo", str(corpus), "--name", CORPUS_NAME)
        index[side.name] = {"seconds": round(seconds, 1), "chunks": side.chunks(),
                            "chunks_per_s": round(side.chunks() / seconds, 2), "load_before": load,
                            "load_after": load_average()}
    for side in builds[1:]:
        index[f"ratio_{side.name}_over_old_chunks_per_s"] = round(index[side.name]["chunks_per_s"]
                                                                  / index["old"]["chunks_per_s"], 2)
    out["index_empty_cache"] = index
    save(out, out_path)
    if runs > 0:
        cold_queries(sides, runs, out)
        save(out, out_path)
    process = {}
    for side in queried:
        load = load_average()
        process[side.name] = {**side.in_process(), "load_before": load}
    tops = {name: result.pop("top10") for name, result in process.items()}
    same = [q for q in tops["old"] if tops["old"][q] == tops["new"].get(q)]
    out["in_process"] = process
    out["in_process"]["ratio_first_query"] = round(process["new"]["first_query_ms"] / process["old"]["first_query_ms"], 2)
    out["in_process"]["ratio_warm_p50"] = round(process["new"]["warm_p50_ms"] / process["old"]["warm_p50_ms"], 2)
    out["golden"] = {"ndcg10_old": process["old"]["ndcg10"], "ndcg10_new": process["new"]["ndcg10"],
                     "ndcg10_delta_points": round(100 * (process["new"]["ndcg10"] - process["old"]["ndcg10"]), 2),
                     "identical_top10": f"{len(same)}/{len(tops['old'])}",
                     "differing_queries": [q for q in tops["old"] if q not in same]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, type=Path, help="a checkout of the old code")
    parser.add_argument("--paths", nargs="*", default=[], help="directories of this repository to index (default: all)")
    parser.add_argument("--golden-files", action="store_true", help="index the files the golden set labels (not --paths)")
    parser.add_argument("--runs", type=int, default=3, help="cold CLI queries per side")
    parser.add_argument("--index-only", action="append", default=[], metavar="NAME=section.field=value,...",
                        help="also index with the new code under these settings (timed, not queried; repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    index_only = {name: tuple(o for o in rest.split(",") if o)
                  for name, _, rest in (item.partition("=") for item in args.index_only)}
    work = Path(tempfile.mkdtemp(prefix="semantica-bench-fast-"))
    try:
        paths = golden_files(GOLDEN_SET) if args.golden_files else args.paths
        result = run(args.baseline.resolve(), paths, args.runs, work, args.out, index_only)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    save(result, args.out)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
