"""`make bench`: indexing throughput per stage and query latency per stage (a benchmark, not a test).

Indexes this repository (and sympy/sympy at a fixed commit when a clone is present) into a fresh
temporary index with an empty embedding cache, then runs a fixed query set in-process and reports
p50/p99 per stage. Results go to `bench/results/*.json` and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, RESULTS_DIR, machine, percentile
from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from semantica.config import Config, load_config
from serving.pipeline import SearchPipeline

REPO_ROOT = Path(__file__).resolve().parents[2]
MIRRORS = Path(os.environ.get("SEMANTICA_MIRRORS", ".semantica/mirrors"))  # bare clones; absent ones are skipped
SYMPY_COMMIT = "d3b4158dea271485e3daa11bf82e69b8dab348ce"  # a SWE-bench Lite dev base commit
SYMPY_CLONE = MIRRORS / "sympy+sympy" / "repo"
# the SWE-bench Lite instances whose sympy issues are the long queries; absent: the sympy query set is empty
BENCH_INSTANCES = Path(os.environ.get("SEMANTICA_BENCH_INSTANCES", "swebench_lite_dev.jsonl"))
SELF_QUERIES = (
    "WeightedRRF", "who calls _coerce", "how are vectors cached by content sha", "load_config",
    "np.load(segment, allow_pickle=False)", "publish a snapshot atomically", "callers of shared_encoder",
    "MaxSim late interaction reranking", "SymbolRetriever prefix search", "git cat-file batch reader",
)
QUERY_REPEATS = 3
STRUCTURAL_REPEATS = 20
RICH_CLONE = MIRRORS / "Textualize+rich" / "repo"  # pytest-sized (213 Python files); the flow set's commit
FLOW_SETS = REPO_ROOT / "conf" / "golden"


def bench_index(config: Config, repo: Path, name: str, commit: str | None) -> dict[str, Any]:
    summary = Indexer(config, progress=True).index(str(repo), name, commit)
    seconds = summary.seconds
    total = sum(seconds.values())
    return {
        "repo": name, "commit": summary.commit, "files": summary.files, "chunks": summary.chunks,
        "symbols": summary.symbols, "edges": summary.edges, "seconds": seconds, "total_s": round(total, 2),
        "files_per_s": {s: round(summary.files / t, 1) for s, t in seconds.items() if t > 0},
        "chunks_per_s": {s: round(summary.chunks / t, 1) for s, t in seconds.items() if t > 0},
        "end_to_end_chunks_per_s": round(summary.chunks / total, 1) if total else 0.0,
        "peak_rss_mb": summary.peak_rss_mb,
    }


def bench_queries(config: Config, repo: str, queries: list[str]) -> dict[str, Any]:
    pipeline = SearchPipeline(config)
    pipeline.search(SearchRequest(queries[0], repos=[repo], k=10))  # warm-up: JVM, model, shards
    per_stage: dict[str, list[float]] = {}
    totals: list[float] = []
    for _ in range(QUERY_REPEATS):
        for query in queries:
            pipeline._cache.clear()  # measure the work, not the LRU
            start = time.perf_counter()
            response = pipeline.search(SearchRequest(query, repos=[repo], k=10))
            totals.append((time.perf_counter() - start) * 1000)
            for stage, ms in response.timings_ms.items():
                per_stage.setdefault(stage, []).append(ms)
    stages = {s: {"p50_ms": round(statistics.median(v), 2), "p99_ms": round(percentile(v, PERCENTILE_99), 2)}
              for s, v in per_stage.items()}
    return {"repo": repo, "queries": len(queries), "repeats": QUERY_REPEATS, "stages": stages,
            "total": {"p50_ms": round(statistics.median(totals), 2), "p99_ms": round(percentile(totals, PERCENTILE_99), 2)}}


def bench_structural(repo: Path, name: str, commit: str | None, questions: list[str]) -> dict[str, Any]:
    """Structural questions in process: parse -> graph ops (what `semantica query` runs first), p50/p99."""
    from jobs.eval.flow import graph_at
    from serving.graph.ops import GraphOps, UnknownNameError
    from serving.graph.structural import parse_question

    config = load_config(None, [])
    start = time.perf_counter()
    graph = graph_at(repo, name, commit or "HEAD", config)
    build_s = time.perf_counter() - start
    ops, times = GraphOps(), []
    for _ in range(STRUCTURAL_REPEATS):
        for question in questions:
            start = time.perf_counter()
            parsed = parse_question(question)
            try:
                ops.run_graphs(parsed.op, parsed.name, [graph], 1) if parsed else None
            except UnknownNameError:
                pass
            times.append((time.perf_counter() - start) * 1000)
    return {"repo": name, "questions": len(questions), "repeats": STRUCTURAL_REPEATS,
            "symbols": len(graph.symbols), "graph_build_s": round(build_s, 2),
            "p50_ms": round(statistics.median(times), 4), "p99_ms": round(percentile(times, PERCENTILE_99), 4)}


def flow_questions(repo: str) -> tuple[str, list[str]]:
    rows = [json.loads(line) for path in sorted(FLOW_SETS.glob("flow-*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]
    mine = [r for r in rows if r["repo"] == repo]
    return (mine[0]["commit"] if mine else ""), [r["question"] for r in mine]


def sympy_queries(limit: int) -> list[str]:
    if not BENCH_INSTANCES.exists():
        return []
    rows = [json.loads(line) for line in BENCH_INSTANCES.read_text().splitlines() if line.strip()]
    return [r["problem_statement"] for r in rows if r["repo"] == "sympy/sympy"][:limit]


REQUESTS_CLONE = MIRRORS / "psf+requests" / "repo"


def bench_repo(config: Config, repo_path: Path | None, name: str, commit: str | None) -> dict[str, Any]:
    """Index (unless `repo_path` is None: already indexed under config), then every ratio of jobs.bench.ratios."""
    from jobs.bench import ratios as bench_fast

    out: dict[str, Any] = {"repo": name}
    if repo_path is not None:
        out["indexing"] = bench_index(config, repo_path, name, commit)
    snapshot = SearchPipeline(config).snapshots.get(name)
    texts = [c.embedding_text() for c in snapshot.chunks]
    out["encoder_floor"] = bench_fast.encoder_floor(config, texts)
    if "indexing" in out:
        floor = out["encoder_floor"]["chunks_per_s"]
        out["indexing"]["ratio_to_encoder_floor"] = {
            "end_to_end": round(out["indexing"]["end_to_end_chunks_per_s"] / floor, 2),
            "embed_stage": round(out["indexing"]["chunks_per_s"].get("embed", 0.0) / floor, 2)}
    out["storage"] = bench_fast.disk_and_ram(config, name)
    classes = bench_fast.query_classes(name, BENCH_INSTANCES)
    out["latency"] = bench_fast.bench_latency(config, name, classes)
    out["late_top_n"] = bench_fast.bench_late_top_n(config, name, classes["identifier"] + classes["natural_language"])
    out["cold_cli"] = bench_fast.cold_cli(config, name, classes["identifier"][0])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="semantica-bench", description=__doc__)
    parser.add_argument("--skip-sympy", action="store_true", help="only this repository (fast)")
    parser.add_argument("--sympy-queries", type=int, default=20, help="SWE-bench sympy problem statements to time")
    parser.add_argument("--sympy-index-root", metavar="DIR",
                        help="time queries over the sympy snapshot already published under DIR (e.g. the eval's "
                             ".semantica/eval/index) instead of indexing sympy from scratch (~1 h on 2 cores)")
    parser.add_argument("--ratios-only", action="store_true",
                        help="only the ratio figures (jobs.bench.ratios) for this repository and requests")
    parser.add_argument("--self-index-root", metavar="DIR",
                        help="use semantica/self already indexed under DIR (its cache beside it) instead of indexing")
    parser.add_argument("--skip-requests", action="store_true", help="do not index and time psf/requests")
    parser.add_argument("--out", default=str(RESULTS_DIR / "bench.json"), metavar="FILE", help="results JSON")
    parser.add_argument("--structural-only", action="store_true",
                        help="only the structural-question benchmark (no embedding index): bench/results/structural.json")
    args = parser.parse_args(argv)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    if args.structural_only:
        return run_structural()
    results: dict[str, Any] = {"machine": machine(), "indexing": [], "querying": [], "ratios": []}
    with tempfile.TemporaryDirectory(prefix="semantica-bench-") as tmp:
        config = load_config(None, [f"paths.index_root={tmp}/index", f"paths.cache_dir={tmp}/cache"])
        if args.self_index_root:
            reuse = load_config(None, [f"paths.index_root={args.self_index_root}",
                                       f"paths.cache_dir={Path(args.self_index_root).parent / 'cache'}"])
            results["ratios"].append(bench_repo(reuse, None, "semantica/self", None))
        else:
            results["ratios"].append(bench_repo(config, REPO_ROOT, "semantica/self", None))
        if not args.skip_requests and (REQUESTS_CLONE / "HEAD").exists():
            results["ratios"].append(bench_repo(config, REQUESTS_CLONE, "psf/requests", None))
        if not args.ratios_only:
            results["querying"].append(bench_queries(config if not args.self_index_root else reuse,
                                                     "semantica/self", list(SELF_QUERIES)))
        if args.ratios_only:
            pass
        elif args.sympy_index_root:
            existing = load_config(None, [f"paths.index_root={args.sympy_index_root}",
                                          f"paths.cache_dir={Path(args.sympy_index_root).parent / 'cache'}"])
            results["querying"].append(bench_queries(existing, "sympy/sympy", sympy_queries(args.sympy_queries)))
        elif not args.skip_sympy and (SYMPY_CLONE / "HEAD").exists():
            results["indexing"].append(bench_index(config, SYMPY_CLONE, "sympy/sympy", SYMPY_COMMIT))
            results["querying"].append(bench_queries(config, "sympy/sympy", sympy_queries(args.sympy_queries)))
        elif not args.skip_sympy:
            print(f"sympy clone not found at {SYMPY_CLONE}: sympy benchmark skipped", file=sys.stderr)
    results["indexing"] += [r["indexing"] for r in results["ratios"] if "indexing" in r]
    out = Path(args.out)
    out.write_text(json.dumps(results, indent=2))
    print_tables(results)
    print(f"\nwritten: {out}")
    return 0


def run_structural() -> int:
    results: dict[str, Any] = {"machine": machine(), "structural": []}
    self_questions = [q for q in SELF_QUERIES if q.startswith(("who calls", "callers of"))] + [
        "what does SearchPipeline.search call", "where is load_config defined", "subclasses of BaseRetriever"]
    results["structural"].append(bench_structural(REPO_ROOT, "semantica/self", None, self_questions))
    commit, questions = flow_questions("Textualize/rich")
    if (RICH_CLONE / "HEAD").exists() and questions:
        results["structural"].append(bench_structural(RICH_CLONE, "Textualize/rich", commit, questions))
    else:
        print(f"rich clone not found at {RICH_CLONE}: only this repository benchmarked", file=sys.stderr)
    out = RESULTS_DIR / "structural.json"
    out.write_text(json.dumps(results, indent=2))
    print("| repo | symbols | questions x repeats | graph build s | p50 ms | p99 ms |\n|---|---|---|---|---|---|")
    for r in results["structural"]:
        print(f"| {r['repo']} | {r['symbols']} | {r['questions']} x {r['repeats']} | {r['graph_build_s']} | "
              f"{r['p50_ms']} | {r['p99_ms']} |")
    print(f"\nwritten: {out}")
    return 0


def print_tables(results: dict[str, Any]) -> None:
    for r in results.get("ratios", []):
        print(f"\n{r['repo']}: encoder floor {r['encoder_floor']['chunks_per_s']} chunks/s; "
              f"indexing ratio {r.get('indexing', {}).get('ratio_to_encoder_floor', 'n/a')}; "
              f"{r['storage']['bytes_per_chunk']} B/chunk on disk {r['storage']['bytes_per_chunk_by_part']}; "
              f"RAM {r['storage']['ram_mb_loaded_snapshot']} MB loaded; cold CLI p50 {r['cold_cli']['p50_ms']} ms")
        print("| class | pipeline p50 | p99 | encode floor p50 | ratio | late p50 |\n|---|---|---|---|---|---|")
        for name, c in r["latency"]["classes"].items():
            print(f"| {name} | {c['pipeline']['p50_ms']} | {c['pipeline']['p99_ms']} | {c['floor_encode']['p50_ms']} "
                  f"| {c['ratio_p50']} | {c['late_interaction']['p50_ms']} |")
        print("late interaction stage: " + ", ".join(f"{k} p50 {v['p50_ms']} ms p99 {v['p99_ms']} ms"
                                                      for k, v in r["late_top_n"].items()))
    print("\n| repo | files | chunks | discover | parse | resolve | embed | write | total s | chunks/s (embed) | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results["indexing"]:
        s = r["seconds"]
        print(f"| {r['repo']} | {r['files']} | {r['chunks']} | " + " | ".join(
            f"{s.get(k, 0):.1f}" for k in ("discover", "parse", "resolve", "embed", "write"))
              + f" | {r['total_s']} | {r['chunks_per_s'].get('embed', 0)} | {r['peak_rss_mb']:.0f} |")
    for q in results["querying"]:
        print(f"\nquery latency, {q['repo']} ({q['queries']} queries x {q['repeats']}): "
              f"total p50 {q['total']['p50_ms']} ms, p99 {q['total']['p99_ms']} ms")
        print("| stage | p50 ms | p99 ms |\n|---|---|---|")
        for stage, v in q["stages"].items():
            print(f"| {stage} | {v['p50_ms']} | {v['p99_ms']} |")


# `python -m jobs.bench NAME ...`: the product's other benchmarks, one entry point for all of them
SUBCOMMANDS = {"http": "jobs.bench.http", "load": "jobs.bench.load", "watch": "jobs.bench.watch",
               "scale": "jobs.bench.scale", "grep": "jobs.bench.grep", "cold-query": "jobs.bench.cold_query",
               "short-query": "jobs.bench.short_query"}


def dispatch(argv: list[str]) -> int:
    """The named benchmark's `main` with the rest of the arguments; no name: the indexing and latency bench."""
    if argv and argv[0] in SUBCOMMANDS:
        import importlib

        return importlib.import_module(SUBCOMMANDS[argv[0]]).main(argv[1:])
    return main(argv)


if __name__ == "__main__":
    sys.exit(dispatch(sys.argv[1:]))
