"""The localizer stage alone on Multi-SWE-bench dev instances: one model directory against another on the same
candidates, per language (it only measures; nothing is chosen on it).

Each instance's candidates and features are computed at its base commit from its bare clone by the code
`eval replay` runs (jobs/localizer/replay.py: the files the indexer would discover for the instance's language,
history votes and priors as of the base commit); each `--models` directory then ranks them (the stage's learned
order, before the blend with the chunk retrievers and the dense channel). `fusion` is the fixed fusion of the same
lists (`localizer.learned_files=false`). Metrics are `jobs.eval.metrics.evaluate`'s (LocAgent Acc@k, MRR), by
language and overall.

    python -m lab.localizer.mswe_replay --instances mswe_dev.jsonl --repos-dir DIR --cache CACHE \
        --models models/localizer-history --models lab/models/localizer-polyglot --out lab/results/localizer/mswe_replay.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from jobs.commands.eval import apply_eval_defaults
from jobs.eval.instances import load_instances
from jobs.eval.metrics import Prediction, evaluate
from jobs.localizer.replay import LearnedReplay
from semantica.config import load_config
from semantica.languages import LANGUAGES
from serving.localizer.dense import DenseFunctionChannel

FUSION = "fusion"
ALL_FILES = " (files of every language)"
LANGUAGE_GROUPS = {"javascript": "js/ts", "typescript": "js/ts"}
FILE_METRICS = ("Acc@1", "Acc@5", "Acc@10", "MRR")
FUNCTION_METRICS = ("Acc@5", "Acc@10", "MRR")


def replay_config(models: str, cache_dir: str, languages: set[str], extra: list[str] = ()):  # noqa: ANN201 - Config
    overrides = [f"paths.cache_dir={cache_dir}", *extra]
    if models == FUSION:
        overrides.append("localizer.learned_files=false")
    else:
        overrides.append(f"localizer.model_dir={models}")
    return apply_eval_defaults(load_config(None, overrides), set(), languages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True)
    parser.add_argument("--repos-dir", required=True)
    parser.add_argument("--cache", required=True, help="paths.cache_dir (candidates, blobs and history, reused)")
    parser.add_argument("--models", action="append", default=[], help="model directory (repeatable)")
    parser.add_argument("--repo-filter", action="append", default=[])
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="a config override for every row (repeatable)")
    parser.add_argument("--dense-all-files", action="store_true",
                        help="with --dense, also a row whose channel re-ranks the files of every language")
    parser.add_argument("--dense", action="store_true",
                        help="also each model directory with the dense function channel after it (`<models>+dense`), "
                             "as the stage runs it: its function head and files re-ranked by the channel's cosine")
    parser.add_argument("--top", type=int, default=0,
                        help="also keep each instance's first N files and its gold files' ranks per row")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    instances = [i for i in load_instances(args.instances) if not args.repo_filter or i.repo in args.repo_filter]
    languages = {i.language for i in instances}
    gold = {i.instance_id: i.gold() for i in instances}
    groups: dict[str, list[str]] = {}
    for inst in instances:
        groups.setdefault(LANGUAGE_GROUPS.get(inst.language, inst.language), []).append(inst.instance_id)
    report: dict = {"instances": len(instances), "rows": {}}
    parser_rows = ((False, ""), (True, ""), (True, ALL_FILES)) if args.dense_all_files else \
        ((False, ""), (True, "")) if args.dense else ((False, ""),)
    rows = [(FUSION, False, "")] + [(m, dense, variant) for m in args.models for dense, variant in parser_rows]
    channels: dict[str, DenseFunctionChannel] = {}  # one per model directory: its vectors are encoded once
    for models, dense, variant in rows:
        replay = LearnedReplay(replay_config(models, args.cache, languages, args.set), Path(args.repos_dir))
        if not dense:
            replay.dense = None
        elif replay.dense is not None:
            channel = channels.setdefault(models, replay.dense)
            every = sorted({row.name for row in LANGUAGES if row.grammar})
            channel.config = dataclasses.replace(replay.dense.config, dense_file_languages=every) if variant \
                else replay.dense.config
            replay.dense = channel
        name = f"{models}+dense{variant}" if dense else models
        preds: dict[str, Prediction] = {}
        start = time.perf_counter()
        for inst in instances:
            try:
                if dense:
                    preds[inst.instance_id] = Prediction(*replay.blend(inst, [], []))
                    continue
                ranked = replay.rank(inst)
            except Exception as exc:  # noqa: BLE001 - one broken instance is reported, not fatal
                print(f"{inst.instance_id}: FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
            preds[inst.instance_id] = Prediction([k for k, _ in ranked.files], [k for k, _ in ranked.functions])
        row = {"seconds": round(time.perf_counter() - start, 1),
               "all": evaluate(preds, gold, FILE_METRICS, FUNCTION_METRICS)["overall"]}
        for group, ids in sorted(groups.items()):
            row[group] = evaluate({i: preds[i] for i in ids if i in preds}, {i: gold[i] for i in ids}, FILE_METRICS,
                                  FUNCTION_METRICS)["overall"] | {
                "instances": sum(1 for i in ids if i in preds)}
        report["rows"][name] = row
        if args.top:
            report.setdefault("ranked", {})[name] = {
                i: {"gold": {f: (p.files.index(f) + 1 if f in p.files else None) for f in gold[i].files},
                    "top": p.files[:args.top]} for i, p in preds.items()}
        print(f"{name} (file {'/'.join(FILE_METRICS)}): " + "  ".join(
            f"{g} " + "/".join(f"{100 * row[g]['file'][m]:.1f}" for m in FILE_METRICS)
            for g in [*sorted(groups), "all"]) + f"  ({row['seconds']} s)", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
