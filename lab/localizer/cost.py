"""Query-time cost of the localizer: `python -m lab.localizer.cost INSTANCES REPO MODEL_DIR [OUT.json]`.

Builds the repository's snapshot once at its first instance's base commit (the build is once per
snapshot at query time too), then times candidates + features and the two models for every instance's
problem statement of that repository: p50 and p99 per query.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

from jobs.eval.instances import load_instances, mirror_clone
from jobs.localizer.gitread import TreeReader
from semantica.config import load_config
from semantica.stores.localizer.blobcache import open_blob_cache
from semantica.stores.localizer.table import LocalizerTableBuilder
from serving.localizer.stage import LearnedLocalizer, LocalizerModels


def _pcts(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(1000 * statistics.median(ordered), 1),
            "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)}


def main(argv: list[str]) -> int:
    instances_file, repo, model_dir = argv[:3]
    full = load_config(None, [f"localizer.model_dir={model_dir}"])
    config = full.localizer
    instances = [i for i in load_instances(instances_file) if i.repo == repo]
    git_dir = mirror_clone(repo)
    start = time.perf_counter()
    builder = LocalizerTableBuilder(open_blob_cache(config.blob_cache_file, full.paths.cache_dir))
    snapshot = builder.build(TreeReader(str(git_dir), config.max_file_bytes).texts(instances[0].base_commit))
    build = time.perf_counter() - start
    localizer = LearnedLocalizer(config, LocalizerModels(model_dir))
    cands_s, model_s = [], []
    for inst in instances:
        t0 = time.perf_counter()
        cands = localizer.generator.build(snapshot, inst.problem_statement)
        t1 = time.perf_counter()
        localizer.rank_candidates(cands)
        model_s.append(time.perf_counter() - t1)
        cands_s.append(t1 - t0)
    result = {"repo": repo, "queries": len(instances), "files": len(snapshot.files), "functions": len(snapshot.functions),
              "snapshot_build_s": round(build, 2), "candidates": _pcts(cands_s), "models": _pcts(model_s),
              "load_average": os.getloadavg()[0]}
    print(json.dumps(result))
    if len(argv) > 3:
        Path(argv[3]).parent.mkdir(parents=True, exist_ok=True)
        Path(argv[3]).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
