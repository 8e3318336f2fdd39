"""What a candidate setting costs against another, in one process on one snapshot:
`python -m lab.localizer.function_cost INSTANCES REPO OUT.json [--old key=value ...] [--set key=value ...] [--learned]`
(bare clones under $SEMANTICA_MIRRORS): `--old` sets the old setting only, a `--set localizer.*` the new one
only, any other `--set` (paths.cache_dir for the blob cache) both.

The repository's snapshot is built once at its first instance's base commit; then every instance's problem
statement (three passes) is answered with the old and the new setting alternately, after one untimed build each,
so load drifts hit both alike: candidates without feature rows (the candidates-first path), p50 and p99 per query.
With `--learned` each setting runs the learned file ranker's path instead (feature rows, the file model of its
`localizer.model_dir`, and the functions after it; no history, as the cost of the votes does not change).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from jobs.eval.instances import load_instances, mirror_clone
from jobs.localizer.gitread import TreeReader
from lab.localizer.cost import _pcts
from semantica.config import Config, load_config
from semantica.stores.localizer.blobcache import open_blob_cache
from semantica.stores.localizer.features import CandidateGenerator
from semantica.stores.localizer.models import candidate_config
from semantica.stores.localizer.table import LocalizerTable, LocalizerTableBuilder
from serving.localizer.stage import LearnedLocalizer, LocalizerModels

REPEATS = 3  # every query this many times per setting: per-query times are a few ms, load noise is not


def answerer(config: Config, learned: bool) -> Callable[[LocalizerTable, str], object]:
    """One setting's query: the candidates alone, or the learned file ranker's path (`--learned`)."""
    if not learned:
        generator = CandidateGenerator(candidate_config(config.localizer))
        return lambda snapshot, query: generator.build(snapshot, query, features=False)
    localizer = LearnedLocalizer(config.localizer, LocalizerModels(config.localizer.model_dir))
    return lambda snapshot, query: localizer.rank(snapshot, query, None, learned_files=True)


def main(argv: list[str]) -> int:
    learned = "--learned" in argv
    argv = [a for a in argv if a != "--learned"]
    instances_file, repo, out = argv[:3]
    overrides = [a for flag, a in zip(argv[3:], argv[4:]) if flag == "--set"]
    old_only = [a for flag, a in zip(argv[3:], argv[4:]) if flag == "--old"]
    shared = [o for o in overrides if not o.startswith("localizer.")]
    old_config, new_config = load_config(None, [*shared, *old_only]), load_config(None, overrides)
    instances = [i for i in load_instances(instances_file) if i.repo == repo]
    loc = old_config.localizer
    builder = LocalizerTableBuilder(open_blob_cache(loc.blob_cache_file, old_config.paths.cache_dir))
    snapshot = builder.build(TreeReader(str(mirror_clone(repo)), loc.max_file_bytes).texts(instances[0].base_commit))
    answerers = {"old": answerer(old_config, learned), "new": answerer(new_config, learned)}
    seconds: dict[str, list[float]] = {name: [] for name in answerers}
    for answer in answerers.values():  # per-snapshot tables (LocalizerTable.derived) are built before timing
        answer(snapshot, instances[0].problem_statement)
    for _ in range(REPEATS):
        for inst in instances:
            for name, answer in answerers.items():
                start = time.perf_counter()
                answer(snapshot, inst.problem_statement)
                seconds[name].append(time.perf_counter() - start)
    pcts = {name: _pcts(values) for name, values in seconds.items()}
    result = {"repo": repo, "queries": len(instances), "functions": len(snapshot.functions), "learned": learned,
              "old_overrides": old_only,
              "new_overrides": overrides,
              **pcts, "ratio": {k: round(pcts["new"][k] / pcts["old"][k], 3) for k in ("p50_ms", "p99_ms")},
              "load_average": os.getloadavg()[0]}
    print(json.dumps(result))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
