"""Dense similarity as a function channel on a replayed split, one encoder against another, same candidates.

Each instance's default function ranking (the replay of `localizer-ablation`'s default row, which lists its top 50)
is cut at `--depth` (default: the channel's depth, `dense_depth`, so at most those 50);
each function's source at the base commit (`function_text`) and the issue text are encoded by every `--model`
(the product's encoder and runtime; vectors cached per instance under `--cache`), and the cut list is re-ranked
two ways: by cosine alone, and by the query path's fusion (`DenseFusion`) of today's rank and the cosine rank
(`localizer.dense_*` settings, chosen on the corpus by `lab/localizer/function_dense.py`; nothing fitted here).
Read-only: it compares encoders on the same candidates and chooses nothing on dev.

    SEMANTICA_MIRRORS=DIR python -m lab.eval.dense_rerank --instances swebench_lite_dev.jsonl \
        --mined lab/results/ltr/swebench --model minilm= --model tuned=DIR --cache DIR --out OUT.json \
        --set paths.cache_dir=CACHE
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jobs.eval.instances import load_instances, mirror_clone
from jobs.eval.metrics import acc_at_k, normalize_function, reciprocal_rank
from jobs.eval.replay import LocalizationReplay
from jobs.eval.swebench import TOP_N
from lab.localizer.function_dense import SnapshotVectors, StudyEncoders, TextEncoder, snapshot_texts
from semantica.config import load_config
from semantica.stores.localizer.dense import DenseFusion, channel_keys, cosines

KS = (1, 5, 10)
GROUP = "dev"  # the group these texts are recorded and read under (`lab.train.text_vectors`)
ORDERS = ("today", "dense", "fused")


def scores(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    ranked = [normalize_function(k) for k in ranked]
    return {f"acc@{k}": acc_at_k(ranked, gold, k) for k in KS} | {"mrr": reciprocal_rank(ranked, gold)}


def mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {name: round(100 * sum(r[name] for r in rows) / len(rows), 2) for name in rows[0]} | {"n": len(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True)
    parser.add_argument("--mined", required=True)
    parser.add_argument("--model", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--vectors", action="append", default=[], metavar="NAME=FILE",
                        help="vectors encoded elsewhere (`lab.train.text_vectors encode`) (repeatable)")
    parser.add_argument("--record", help="only note every text to encode, in this Parquet file")
    parser.add_argument("--depth", type=int, default=None,
                        help="functions of each default order scored (default: the channel's deepest stage)")
    parser.add_argument("--repo", action="append", default=[], help="only these repositories (repeatable)")
    parser.add_argument("--cache", required=True, help="function vectors per instance and model (npz)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args(argv)
    config = load_config(None, args.set)
    without = dataclasses.replace(config, localizer=dataclasses.replace(config.localizer, dense_model=""))
    replay = LocalizationReplay(without, args.mined)  # the default order before the channel, which this re-ranks
    sources = {name: StudyEncoders(path, None, None) for name, _, path in (s.partition("=") for s in args.model)}
    sources |= {name: StudyEncoders("", None, path) for name, _, path in (s.partition("=") for s in args.vectors)}
    if args.record:
        sources["record"] = StudyEncoders("", args.record, None)
    if not sources:
        parser.error("name at least one --model, --vectors or --record")
    encoders: dict[str, TextEncoder] = {name: source.for_group(GROUP) for name, source in sources.items()}
    loc = config.localizer
    fusion = DenseFusion(loc.dense_depth, loc.dense_rrf_k, loc.dense_weight)
    depth = min(args.depth or fusion.depth, TOP_N)  # the replay's list holds TOP_N
    rows: dict[str, dict[str, list[dict[str, float]]]] = {}
    for inst in load_instances(args.instances):
        gold = [normalize_function(f) for f in inst.gold_functions]
        prediction = replay.predict(inst) if gold and (not args.repo or inst.repo in args.repo) else None
        if prediction is None:
            continue
        today = list(dict.fromkeys(prediction.functions))[:depth]
        texts = snapshot_texts(mirror_clone(inst.repo), inst.base_commit, today, normalize_function)
        today = [key for key in today if key in texts]  # module-level or vanished keys have no source to encode
        if not today:
            continue
        for name, encoder in encoders.items():
            query = encoder.encode([inst.problem_statement], loc.dense_query_max_length)[0]
            store = SnapshotVectors(Path(args.cache) / name / f"{inst.instance_id}.npz" if sources[name].caches
                                    else None)
            store.ensure(encoder, {k: texts[k] for k in today}, loc.dense_max_length)
            if sources[name].recorder is not None:
                continue  # texts noted for the GPU machine; nothing to score
            covered = channel_keys(today)  # as the query path: test code outside the channel
            cosine = cosines(query, covered, np.stack([store.vectors[k] for k in covered])) if covered else {}
            dense = sorted(covered, key=lambda key: -cosine[key]) + [key for key in today if key not in cosine]
            for order, ranked in zip(ORDERS, (today, dense, fusion.fuse(today, cosine))):
                for scope in (inst.repo, "all"):
                    rows.setdefault(f"{name}/{order}", {}).setdefault(scope, []).append(scores(ranked, gold))
        print(inst.instance_id, len(today), file=sys.stderr)
    for source in sources.values():
        source.finish()
    if list(sources) == ["record"]:
        return 0
    report: dict[str, Any] = {"instances": args.instances, "depth": depth, "overrides": args.set,
                              "dense_depth": loc.dense_depth, "query_max_length": loc.dense_query_max_length,
                              "rrf_k": loc.dense_rrf_k, "weight": loc.dense_weight,
                              "rows": {row: {scope: mean(r) for scope, r in sorted(by.items())}
                                       for row, by in rows.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    for row, by in report["rows"].items():
        print(row, json.dumps(by["all"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
