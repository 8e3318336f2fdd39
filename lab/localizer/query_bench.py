"""Query latency with the localizer off and on, and the first query of a snapshot before and after the
localizer snapshot is stored at index time (a benchmark, not a test):

    python -m lab.localizer.query_bench INSTANCES REPO WORK_DIR OUT.json [--include GLOB ...] [--on OVERRIDE ...]

Indexes REPO (its bare clone under $SEMANTICA_MIRRORS) at its first instance's base commit (or `--commit`) twice into
WORK_DIR (the second index reuses the first one's embedding cache): once with the `localizer` index kind
written, once without. Then, in this one process:
- first query: the localizer stage's time on the first query of a freshly opened snapshot, for the index
  without a stored snapshot (blob cache cold, then warm) and with one;
- steady state: every instance's problem statement of REPO, `rounds` times, alternating the pipeline with
  the `--off` overrides (default: the localizer off) and the `--on` ones (default: the localizer's defaults),
  the query cache off; p50/p99 of each and their ratio.
`--include` restricts what is indexed (`discover.include_globs`): embedding a whole repository on 2 shared
cores takes longer than the rest of the benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from jobs.bench.stats import PERCENTILE_99, percentile
from jobs.eval.instances import load_instances, mirror_clone
from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from semantica.config import Config, load_config
from serving.pipeline import SearchPipeline

ON = ("localizer.enabled=true",)
OFF = ("localizer.enabled=false",)
ROUNDS = 3
STAGE = "localizer"


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values), 1), "p99_ms": round(percentile(values, PERCENTILE_99), 1),
            "n": len(values)}


def _config(work: Path, name: str, *overrides: str) -> Config:
    return load_config(None, [f"paths.index_root={work / name}", f"paths.cache_dir={work / 'cache'}",
                              "query.query_cache_items=0", *overrides])


def _first_query_ms(config: Config, repo: str, query: str) -> float:
    """The localizer stage's milliseconds on the first query a fresh pipeline answers (snapshot just opened)."""
    response = SearchPipeline(config).search(SearchRequest(query=query, repos=[repo]))
    if any(STAGE in str(d) for d in response.degraded):
        raise RuntimeError(f"the localizer stage degraded: {response.degraded}")
    return float(response.timings_ms[STAGE])


def bench_arguments(prog: str) -> argparse.ArgumentParser:
    """The arguments every localizer query benchmark takes: INSTANCES REPO WORK_DIR OUT [--include GLOB ...]."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("instances")
    parser.add_argument("repo")
    parser.add_argument("work_dir")
    parser.add_argument("out")
    parser.add_argument("--include", action="append", default=[], metavar="GLOB")
    return parser


def include_override(globs: list[str]) -> tuple[str, ...]:
    """`discover.include_globs` for `--include` (nothing when none was given)."""
    return (f"discover.include_globs={json.dumps(globs)}",) if globs else ()


def main(argv: list[str]) -> int:
    parser = bench_arguments("python -m lab.localizer.query_bench")
    parser.add_argument("--commit", default="", help="index this commit (default: the first instance's base commit)")
    parser.add_argument("--on", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    parser.add_argument("--off", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="the pipeline `--on` is compared with (default: localizer.enabled=false)")
    args = parser.parse_args(argv)
    repo, work, out, on = args.repo, Path(args.work_dir), args.out, tuple(args.on) or ON
    include = include_override(args.include)
    instances = [i for i in load_instances(args.instances) if i.repo == repo]
    commit, queries = args.commit or instances[0].base_commit, [i.problem_statement for i in instances]
    clone = str(mirror_clone(repo))
    index_s = {}
    for name, enabled in (("stored", "true"), ("unstored", "false")):
        start = time.perf_counter()
        Indexer(_config(work, name, *include, f"localizer.enabled={enabled}"), progress=False).index(clone, repo, commit)
        index_s[name] = round(time.perf_counter() - start, 1)

    cold_cache = work / "cold-blobs.sqlite"
    cold_cache.unlink(missing_ok=True)
    first = {  # blob cache: a fresh file (cold), then the same file again (warm); the stored snapshot needs none
        "unstored_cold_blob_cache": _first_query_ms(_config(work, "unstored", *on,
                                                            f"localizer.blob_cache_file={cold_cache}"), repo, queries[0]),
        "unstored_warm_blob_cache": _first_query_ms(_config(work, "unstored", *on,
                                                            f"localizer.blob_cache_file={cold_cache}"), repo, queries[0]),
        "stored": _first_query_ms(_config(work, "stored", *on), repo, queries[0]),
    }
    off = tuple(args.off) or OFF
    pipelines = {"off": SearchPipeline(_config(work, "stored", *off)),
                 "on": SearchPipeline(_config(work, "stored", *on))}
    for pipeline in pipelines.values():  # warm-up: encoder, retrievers, models and the localizer snapshot
        pipeline.search(SearchRequest(query=queries[0], repos=[repo]))
    total: dict[str, list[float]] = {name: [] for name in pipelines}
    stage: list[float] = []
    for _ in range(ROUNDS):
        for query in queries:
            for name, pipeline in pipelines.items():
                start = time.perf_counter()
                response = pipeline.search(SearchRequest(query=query, repos=[repo]))
                total[name].append(1000 * (time.perf_counter() - start))
                if name == "on":
                    stage.append(float(response.timings_ms[STAGE]))
    steady = {name: _summary(values) for name, values in total.items()}
    result = {
        "repo": repo, "commit": commit, "include": args.include, "queries": len(queries), "rounds": ROUNDS,
        "on": list(on), "off": list(off),
        "index_s": index_s, "first_query_localizer_ms": {k: round(v, 1) for k, v in first.items()},
        "query_ms": steady, "localizer_stage_ms": _summary(stage),
        "p50_ratio_on_off": round(steady["on"]["p50_ms"] / steady["off"]["p50_ms"], 3),
        "p99_ratio_on_off": round(steady["on"]["p99_ms"] / steady["off"]["p99_ms"], 3),
        "load_average": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(result, indent=1))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
