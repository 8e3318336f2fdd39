"""The query planner's ranking pieces against the pipeline without them: `python -m lab.bench.planning`.

1. golden: the golden set over an indexed repository, every variant per query back to back (so machine load
   hits them alike), NDCG@10 / MRR / R@10 and the query's wall time p50/p99; plus the repository map's time.
2. localize: the SWE-bench dev split replayed (`eval localize` machinery) at the defaults.
3. feedback: the A/B gate of the learned weights, with each dev instance as one feedback record whose
   selected chunks are the mined candidates inside its gold functions (files when it has none).
Results: lab/results/planning.json and markdown on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from jobs.bench.stats import PERCENTILE_99, RESULTS_DIR, percentile
from jobs.eval.golden import GOLDEN_K, load_golden_set, score_hits
from jobs.eval.instances import load_instances
from jobs.eval.replay import LocalizationReplay
from lab.plugins.repo_scope import NAME as BOOST
from lab.plugins.repo_scope import NARROW_NAME as NARROW
from lab.plugins.repo_scope import RepoScope, ScopeSettings
from semantica.api import SearchRequest
from semantica.config import Config, load_config
from serving.pipeline import SearchPipeline
from serving.planning.feedback_weights import AbGate, FeedbackSample, ReplayedSample
from serving.planning.repo_map import RepoMapService

FORCED_SCOPE = ScopeSettings(min_files=1, min_query_words=1)  # the golden queries are short, the repository small
GOLDEN_VARIANTS: dict[str, list[str]] = {
    "baseline (planning ranking off)": [],
    "scope boost 0.3 (forced on)": [f"rerank.order=[late_interaction, cross_encoder, {BOOST}]"],
    "scope narrow (forced on)": [f"rerank.order=[late_interaction, cross_encoder, {NARROW}]"],
}
LOCALIZE_VARIANTS: dict[str, list[str]] = {
    "baseline": [],
}
PLANNING_STAGES = (BOOST, NARROW)
LOCALIZE_KEYS = ("file Acc@1", "file Acc@3", "file Acc@5", "func Acc@10")


def _config(base: list[str], extra: list[str]) -> Config:
    return load_config(None, [*base, "query.query_cache_items=0", *extra])


def golden(base: list[str], golden_set: str, repo: str, repeats: int) -> dict[str, Any]:
    queries = load_golden_set(golden_set)
    RepoScope.settings = FORCED_SCOPE
    pipelines = {name: SearchPipeline(_config(base, extra)) for name, extra in GOLDEN_VARIANTS.items()}
    scores: dict[str, list[dict[str, float]]] = {name: [] for name in pipelines}
    times: dict[str, list[float]] = {name: [] for name in pipelines}
    stage_ms: dict[str, list[float]] = {name: [] for name in pipelines}  # repo_scope, as timed inside
    for pipeline in pipelines.values():  # warm: models, shards, file graphs, file ages
        pipeline.search(SearchRequest(query=queries[0].query, repos=[repo], k=GOLDEN_K))
    names = list(pipelines)
    for rep in range(repeats):
        for n, q in enumerate(queries):
            for name in names[n % len(names):] + names[: n % len(names)]:  # rotated: no variant always runs first
                pipeline = pipelines[name]
                start = time.perf_counter()
                response = pipeline.search(SearchRequest(query=q.query, repos=[repo], k=GOLDEN_K))
                times[name].append((time.perf_counter() - start) * 1000)
                stage_ms[name].append(sum(response.timings_ms.get(s, 0.0) for s in PLANNING_STAGES))
                if rep == 0:
                    scores[name].append(score_hits([(h.path, h.symbol) for h in response.hits], q, GOLDEN_K))
    mapper = RepoMapService(_config(base, []))
    map_ms = []
    for q in queries:
        start = time.perf_counter()
        mapper.run(repo, q.query)
        map_ms.append((time.perf_counter() - start) * 1000)
    rows = {name: {**{m: round(statistics.fmean(s[m] for s in scores[name]), 4) for m in ("NDCG@10", "MRR", "R@10")},
                   "p50_ms": round(percentile(times[name], 0.5), 1),
                   "p99_ms": round(percentile(times[name], PERCENTILE_99), 1),
                   "stage_p50_ms": round(percentile(stage_ms[name], 0.5), 2),
                   "stage_p99_ms": round(percentile(stage_ms[name], PERCENTILE_99), 2)} for name in pipelines}
    return {"queries": len(queries), "repeats": repeats, "variants": rows,
            "repo_map_ms": {"p50": round(percentile(map_ms[1:], 0.5), 1),
                            "p99": round(percentile(map_ms[1:], PERCENTILE_99), 1), "first": round(map_ms[0], 1)}}


def localize(base: list[str], instances_file: str, mined: str) -> dict[str, Any]:
    instances = load_instances(instances_file)
    replay = LocalizationReplay(_config(base, []), mined)
    out = {}
    for name, extra in LOCALIZE_VARIANTS.items():
        replay.reconfigure(_config(base, extra))
        start = time.perf_counter()
        metrics = replay.run(instances)
        out[name] = {**{k: _metric(metrics["overall"], k) for k in LOCALIZE_KEYS}, "seconds": round(time.perf_counter() - start, 1)}
    return out


def _metric(overall: dict[str, Any], key: str) -> float:
    level, name = key.split(" ")
    return round(100 * float(overall["function" if level == "func" else level][name]), 1)


def feedback(base: list[str], instances_file: str, mined: str) -> dict[str, Any]:
    config = _config(base, [])
    replay = LocalizationReplay(config, mined)
    by_repo: dict[str, list[ReplayedSample]] = {}
    for inst in load_instances(instances_file):
        loaded = replay._load(inst)
        if loaded is None:
            continue
        lists, chunks, intent = loaded
        gold_functions = set(inst.gold_functions)
        picked = [cid for cid, c in chunks.items() if f"{c.path}::{c.symbol}" in gold_functions] or \
                 [cid for cid, c in chunks.items() if c.path in set(inst.gold_files)]
        if picked:
            sample = FeedbackSample(inst.instance_id, inst.problem_statement, inst.repo, picked)
            by_repo.setdefault(inst.repo, []).append(ReplayedSample(sample, intent.dominant, lists))
    gate = AbGate(config)
    out = {}
    for repo, samples in sorted(by_repo.items()):
        state = gate.run(repo, samples)
        learned = {intent: {"count": row.count, "multipliers": {k: round(v, 3) for k, v in
                                                                 gate.learner.multipliers(state, intent).items()}}
                   for intent, row in state.intents.items()}
        out[repo] = {**state.ab, "learned": learned}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index-root", required=True, help="index holding the golden repository")
    parser.add_argument("--cache-dir", default=".semantica/cache")
    parser.add_argument("--golden", default="conf/golden/semantica.jsonl")
    parser.add_argument("--repo", default="semantica/self")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--instances", required=True, metavar="FILE", help="SWE-bench instances JSONL")
    parser.add_argument("--mined", default="lab/results/ltr/swebench")
    parser.add_argument("--parts", default="golden,localize,feedback")
    parser.add_argument("--out", default=str(RESULTS_DIR / "planning.json"))
    args = parser.parse_args(argv)
    base = [f"paths.index_root={args.index_root}", f"paths.cache_dir={args.cache_dir}"]
    parts = set(args.parts.split(","))
    out = Path(args.out)
    result: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}  # a part run updates its key
    if "localize" in parts:
        result["localize"] = localize(base, args.instances, args.mined)
    if "feedback" in parts:
        result["feedback"] = feedback(base, args.instances, args.mined)
    if "golden" in parts:
        result["golden"] = golden(base, args.golden, args.repo, args.repeats)
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
