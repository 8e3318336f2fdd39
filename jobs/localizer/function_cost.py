"""What a candidate setting costs against another, in one process on one snapshot:
`python -m jobs.localizer.function_cost INSTANCES REPO OUT.json [--old key=value ...] [--set key=value ...]`
(bare clones under $SEMANTICA_MIRRORS): `--old` sets the old setting only, a `--set localizer.*` the new one
only, any other `--set` (paths.cache_dir for the blob cache) both.

The repository's snapshot is built once at its first instance's base commit; then every instance's problem
statement (three passes) is answered with the old and the new setting alternately, after one untimed build each,
so load drifts hit both alike: candidates without feature rows (the candidates-first path), p50 and p99 per query.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from jobs.eval.instances import load_instances, mirror_clone
from jobs.localizer.cost import _pcts
from jobs.localizer.gitread import TreeReader
from semantica.config import load_config
from semantica.localizer.blobcache import open_blob_cache
from semantica.localizer.features import CandidateGenerator
from semantica.localizer.models import candidate_config
from semantica.localizer.snapshot import SnapshotBuilder

REPEATS = 3  # every query this many times per setting: per-query times are a few ms, load noise is not


def main(argv: list[str]) -> int:
    instances_file, repo, out = argv[:3]
    overrides = [a for flag, a in zip(argv[3:], argv[4:]) if flag == "--set"]
    old_only = [a for flag, a in zip(argv[3:], argv[4:]) if flag == "--old"]
    shared = [o for o in overrides if not o.startswith("localizer.")]
    old_config, new_config = load_config(None, [*shared, *old_only]), load_config(None, overrides)
    instances = [i for i in load_instances(instances_file) if i.repo == repo]
    loc = old_config.localizer
    builder = SnapshotBuilder(open_blob_cache(loc.blob_cache_file, old_config.paths.cache_dir))
    snapshot = builder.build(TreeReader(str(mirror_clone(repo)), loc.max_file_bytes).texts(instances[0].base_commit))
    generators = {"old": CandidateGenerator(candidate_config(loc)),
                  "new": CandidateGenerator(candidate_config(new_config.localizer))}
    seconds: dict[str, list[float]] = {name: [] for name in generators}
    for generator in generators.values():  # per-snapshot tables (Snapshot.derived) are built before timing
        generator.build(snapshot, instances[0].problem_statement, features=False)
    for _ in range(REPEATS):
        for inst in instances:
            for name, generator in generators.items():
                start = time.perf_counter()
                generator.build(snapshot, inst.problem_statement, features=False)
                seconds[name].append(time.perf_counter() - start)
    pcts = {name: _pcts(values) for name, values in seconds.items()}
    result = {"repo": repo, "queries": len(instances), "functions": len(snapshot.functions), "old_overrides": old_only,
              "new_overrides": overrides,
              **pcts, "ratio": {k: round(pcts["new"][k] / pcts["old"][k], 3) for k in ("p50_ms", "p99_ms")},
              "load_average": os.getloadavg()[0]}
    print(json.dumps(result))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
