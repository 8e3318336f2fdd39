"""What the dense function channel costs (a benchmark, not a test):

    python -m lab.localizer.dense_cost INSTANCES REPO WORK_DIR OUT.json [--include GLOB ...] [--model DIR]

Indexes REPO (its bare clone under $SEMANTICA_MIRRORS, at its first instance's base commit) three times into
WORK_DIR: without the channel (`localizer.dense_model=`, embedding cache cold), the same again and with the channel
(`--model`; both on the warm embedding cache, so their difference is the function vectors' encoding at index time).
Then, in this one process, each instance's problem statement of REPO `rounds` times through three pipelines, the
query cache off: without the channel, the channel reading the stored function vectors, and the channel on an index
without them (it encodes each head function once per process). Reported: index seconds, the first query's
localizer stage for each channel pipeline, and total query p50/p99 with their ratios to the one without. With
`--baseline-set SECTION.FIELD=VALUE ...` a fourth pipeline reads the stored vectors with those settings too (e.g.
`localizer.dense_depth=30`: a shallower fusion), and each
channel pipeline's ratio to it is reported.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from jobs.eval.instances import load_instances, mirror_clone
from lab.localizer.query_bench import ROUNDS, _config, _first_query_ms, _summary, bench_arguments, include_override
from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from semantica.config import LocalizerConfig
from serving.pipeline import SearchPipeline


def main(argv: list[str]) -> int:
    parser = bench_arguments("python -m lab.localizer.dense_cost")
    parser.add_argument("--model", default=LocalizerConfig.dense_model, help="the channel's model (default: shipped)")
    parser.add_argument("--baseline-set", nargs="*", default=[],
                        help="settings of a fourth pipeline over the stored vectors, the channel's baseline")
    args = parser.parse_args(argv)
    repo, work, include = args.repo, Path(args.work_dir), include_override(args.include)
    dense, off = (f"localizer.dense_model={args.model}",), ("localizer.dense_model=",)
    instances = [i for i in load_instances(args.instances) if i.repo == repo]
    commit, queries = instances[0].base_commit, [i.problem_statement for i in instances]
    clone = str(mirror_clone(repo))
    index_s = {}
    for name, overrides in (("cold", off), ("default", off), ("stored", dense)):
        start = time.perf_counter()
        Indexer(_config(work, name, *include, *overrides), progress=False).index(clone, repo, commit)
        index_s[name] = round(time.perf_counter() - start, 1)
    first = {"stored": _first_query_ms(_config(work, "stored", *dense), repo, queries[0]),
             "unstored": _first_query_ms(_config(work, "default", *dense), repo, queries[0])}
    pipelines = {"default": SearchPipeline(_config(work, "default", *off)),
                 "stored": SearchPipeline(_config(work, "stored", *dense)),
                 "unstored": SearchPipeline(_config(work, "default", *dense))}
    if args.baseline_set:
        baseline = (*dense, *args.baseline_set)
        first["baseline_unstored"] = _first_query_ms(_config(work, "default", *baseline), repo, queries[0])
        pipelines["baseline"] = SearchPipeline(_config(work, "stored", *baseline))
    pipelines["default"].search(SearchRequest(query=queries[0], repos=[repo]))  # warm-up: encoder, retrievers, models
    total: dict[str, list[float]] = {name: [] for name in pipelines}
    for _ in range(ROUNDS):
        for query in queries:
            for name, pipeline in pipelines.items():
                start = time.perf_counter()
                pipeline.search(SearchRequest(query=query, repos=[repo]))
                total[name].append(1000 * (time.perf_counter() - start))
    steady = {name: _summary(values) for name, values in total.items()}
    result = {
        "repo": repo, "commit": commit, "include": args.include, "model": args.model, "queries": len(queries),
        "rounds": ROUNDS, "index_s": index_s,
        "index_function_vectors_s": round(index_s["stored"] - index_s["default"], 1),
        "first_query_localizer_ms": {k: round(v, 1) for k, v in first.items()}, "query_ms": steady,
        "p50_ratio": {k: round(steady[k]["p50_ms"] / steady["default"]["p50_ms"], 3) for k in ("stored", "unstored")},
        "p99_ratio": {k: round(steady[k]["p99_ms"] / steady["default"]["p99_ms"], 3) for k in ("stored", "unstored")},
        "load_average": round(os.getloadavg()[0], 1),
    }
    if args.baseline_set:
        result["baseline_set"] = args.baseline_set
        result["vs_baseline"] = {f"{k}_ratio": round(steady["stored"][f"{k}_ms"] / steady["baseline"][f"{k}_ms"], 3)
                                 for k in ("p50", "p99")}
    print(json.dumps(result, indent=1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
