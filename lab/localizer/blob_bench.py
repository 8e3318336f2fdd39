"""The blob cache's effect on a snapshot build: `python -m lab.localizer.blob_bench REPO INSTANCES CACHE_DIR`.

Takes the two base commits of REPO's instances that are closest on the first-parent line, builds the first
with an empty cache (cold), then the second with a new builder on that cache (warm from a neighbour), then
the second again; one process, one JSON line (seconds, files parsed, the ratio and the load average).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from jobs.eval.instances import load_instances, mirror_clone
from jobs.localizer.gitread import TreeReader
from jobs.train.pairs_source import git
from semantica.stores.localizer.blobcache import CACHE_FILE, BlobCache
from semantica.stores.localizer.table import LocalizerTableBuilder


def main(argv: list[str]) -> int:
    repo, instances_file, cache_dir = argv[:3]
    git_dir = str(mirror_clone(repo))
    shas = sorted({i.base_commit for i in load_instances(instances_file) if i.repo == repo})
    depth = {s: int(git(git_dir, "rev-list", "--first-parent", "--count", s)) for s in shas}
    order = sorted(shas, key=depth.__getitem__)
    a, b = min(zip(order, order[1:]), key=lambda p: depth[p[1]] - depth[p[0]] or 10 ** 9)
    reader = TreeReader(git_dir, 1_000_000)
    first, second = reader.texts(a), reader.texts(b)
    cache_file = Path(cache_dir) / CACHE_FILE
    cache_file.unlink(missing_ok=True)
    timings = {}
    for name, texts in (("cold_s", first), ("warm_neighbour_s", second), ("warm_same_s", second)):
        builder = LocalizerTableBuilder(BlobCache(cache_file))
        start = time.perf_counter()
        builder.build(texts)
        timings[name] = round(time.perf_counter() - start, 2)
        timings[name.replace("_s", "_parsed")] = builder.parsed_here
    result = {"repo": repo, "commits": [a[:10], b[:10]], "apart": depth[b] - depth[a], "files": [len(first), len(second)],
              "shared_blobs": sum(1 for p in second if first.get(p) == second[p]), **timings,
              "cold_over_warm": round(timings["cold_s"] / timings["warm_neighbour_s"], 1),
              "cache_mb": round(cache_file.stat().st_size / 1e6, 1), "load_average": os.getloadavg()[0]}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
