"""`index-batch`'s Ray Data plan, fused against separate parse and embed operators, in one Ray session.

    python -m lab.bench.ray_overlap --repo CLONE --work DIR [--include 'pipelines/**'] [--rounds 2]

Each variant runs the runner's dataset (`pipelines.ray_job.index_dataset`: parse tasks, the embed actor pool with the
chunk encoder and the dense function channel) over the same files with a fresh cache (every chunk and function
encoded), rounds in alternating order so no variant always runs first. `fused` is the plan one CPU request for
both stages gave (Ray Data fuses the parse into the actor's call); the others keep parse tasks as their own
operator with `embed_tasks_in_flight` batches queued per actor. Prints one JSON object: seconds per run, chunks,
the plan Ray Data ran, and each variant's median over `fused`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import time
from pathlib import Path
from typing import Any

from pipelines.manifest import RepoSpec, open_spec
from pipelines.ray_job import OPTIMIZED_PHYSICAL_PLAN, index_dataset, task_rows
from pipelines.runner import FileTask
from semantica.config import config_from_dict, config_to_dict, load_config
from semantica.runtime.ray_runtime import run_in_fresh_process, start_ray

BASELINE = "fused"
VARIANTS = {  # name -> ray settings
    BASELINE: {"parse_num_cpus": 0.5, "embed_tasks_in_flight": 2},
    "separate": {"parse_num_cpus": 1.0, "embed_tasks_in_flight": 2},
    "separate_inflight1": {"parse_num_cpus": 1.0, "embed_tasks_in_flight": 1},
    "separate_inflight4": {"parse_num_cpus": 1.0, "embed_tasks_in_flight": 4},
}
DRIVER_TIMEOUT_S = 3600.0


def _tasks(repo: str, include: list[str], config: Any) -> list[FileTask]:
    opened = open_spec(RepoSpec(name="bench", path=repo, include=include), config.discover,
                       Path(config.paths.cache_dir), config.ray.clone_timeout_s)
    source = opened.source
    return [FileTask(repo="bench", repo_path=source.repo_path, commit=source.commit or "", include=opened.include,
                     path=e.path, blob_sha=e.blob_sha, size=e.size, language=e.language, key=f"{e.path}:{e.blob_sha}")
            for e in opened.entries]


def _plan_line(dataset: Any) -> str:
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        dataset.explain()
    plan = text.getvalue()[text.getvalue().index(OPTIMIZED_PHYSICAL_PLAN):]
    return " <- ".join(line.strip(" +-") for line in plan.splitlines()[1:] if line.strip())


def driver(config_dict: dict[str, Any], rows: list[dict[str, Any]], work: str, rounds: int,
           names: list[str]) -> list[dict[str, Any]]:
    """Start Ray once, then run every variant `rounds` times in alternating order, each on a fresh cache."""
    import ray

    base = config_from_dict(config_dict)
    start_ray(base.ray, None)
    runs = []
    try:
        for number in range(rounds):
            for name in names if number % 2 == 0 else names[::-1]:
                settings = {**config_dict, "ray": {**config_dict["ray"], **VARIANTS[name]},
                            "paths": {**config_dict["paths"], "cache_dir": f"{work}/cache-{number}-{name}"}}
                config = config_from_dict(settings)
                dataset = index_dataset(ray, config, rows, make_tokens=False)
                plan = _plan_line(dataset)
                start = time.perf_counter()
                out = list(dataset.iter_rows())
                seconds = time.perf_counter() - start
                runs.append({"variant": name, "round": number, "seconds": round(seconds, 2),
                             "chunks": sum(int(r["chunks"]) for r in out),
                             "functions_encoded": sum(int(r["functions_encoded"]) for r in out), "plan": plan,
                             "stats": dataset.stats()})
    finally:
        ray.shutdown()
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="a git repository (its HEAD is read)")
    parser.add_argument("--work", type=Path, required=True, help="a scratch folder for the caches")
    parser.add_argument("--include", action="append", default=[], help="globs of the files to index")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"some of {', '.join(VARIANTS)}")
    args = parser.parse_args(argv)
    config = load_config(None, [f"paths.cache_dir={args.work}/discover", f"paths.index_root={args.work}/index"],
                         environ={})
    names = [BASELINE] + [name for name in args.variants.split(",") if name != BASELINE]
    rows = task_rows(_tasks(args.repo, args.include, config))
    runs = run_in_fresh_process(driver, config_to_dict(config), rows, str(args.work), args.rounds, names,
                                timeout_s=DRIVER_TIMEOUT_S)
    medians = {name: statistics.median(r["seconds"] for r in runs if r["variant"] == name) for name in names}
    for run in runs:  # Ray Data's per-operator times, then the summary
        print(f"== {run['variant']} round {run['round']}\n{run.pop('stats')}")
    print(json.dumps({"files": len(rows), "runs": runs, "median_seconds": medians,
                      "over_fused": {name: round(medians[BASELINE] / m, 3) for name, m in medians.items()}},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
