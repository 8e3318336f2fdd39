"""The history signal on the SWE-bench dev split, by replay (no code indexing): one JSON report and tables.

    python -m lab.eval.history_report --instances FILE --mined DIR --history DIR --out FILE.json
        [--file-weight W] [--function-weight W] [--prior-weight P]

Rows: today's default (history off); history alone (its own votes, no code index at all); default + the
history lists at the given weights; default + history + priors. Then a weight sweep and leave-one-repository-out
over the split's repositories (each held-out repository scored with the weights best on the other four): a
check of the given weights, which are not chosen here (docs/history.md says where they come from).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from jobs.eval.history_lists import MinedHistory
from jobs.eval.instances import load_instances
from jobs.eval.metrics import Prediction, evaluate
from jobs.eval.replay import LocalizationReplay
from jobs.eval.tables import level_table
from lab.eval.history_tune import predict, score
from semantica.config import Config, load_config

SWEEP_WEIGHTS = (0.25, 0.5, 1.0, 2.0)
SWEEP_PRIORS = (0.0, 0.1, 0.25, 0.5)


def with_history(config: Config, **fields: Any) -> Config:
    return dataclasses.replace(config, history=dataclasses.replace(config.history, **fields))


def replay_predictions(replay: LocalizationReplay, config: Config, instances: list) -> dict[str, Prediction]:
    replay.reconfigure(config)
    out = {}
    for inst in instances:
        prediction = replay.predict(inst)
        if prediction is not None:
            out[inst.instance_id] = prediction
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True)
    parser.add_argument("--mined", required=True)
    parser.add_argument("--history", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--file-weight", type=float, default=None)
    parser.add_argument("--function-weight", type=float, default=None)
    parser.add_argument("--prior-weight", type=float, default=None)
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args(argv)
    base = load_config(None, args.set)
    h = base.history
    file_weight = h.file_weight if args.file_weight is None else args.file_weight
    function_weight = h.function_weight if args.function_weight is None else args.function_weight
    prior_weight = h.prior_weight if args.prior_weight is None else args.prior_weight
    instances = load_instances(args.instances)
    gold = {i.instance_id: i.gold() for i in instances}
    replay = LocalizationReplay(base, args.mined, history_dir=args.history)
    mined = {i.instance_id: m for i in instances if (m := MinedHistory(args.history, i.instance_id)).available}
    report: dict[str, Any] = {"weights": {"file_weight": file_weight, "function_weight": function_weight,
                                          "prior_weight": prior_weight},
                              "history_setting": {k: getattr(h, k) for k in ("top_commits", "similarity_power",
                                                                             "half_life_days", "share_exponent")}}
    rows = {
        "default": with_history(base, enabled=False),
        "default + history": with_history(base, enabled=True, file_weight=file_weight,
                                          function_weight=function_weight, prior_weight=0.0),
        "default + history + priors": with_history(base, enabled=True, file_weight=file_weight,
                                                   function_weight=function_weight, prior_weight=prior_weight),
    }
    predictions = {name: replay_predictions(replay, config, instances) for name, config in rows.items()}
    predictions["history alone"] = predict(mined, h)
    report["rows"] = {name: evaluate(p, {k: gold[k] for k in p}) for name, p in predictions.items()}
    sweep: dict[str, dict[str, Prediction]] = {}
    for weight in SWEEP_WEIGHTS:
        for prior in SWEEP_PRIORS:
            config = with_history(base, enabled=True, file_weight=weight, function_weight=weight, prior_weight=prior)
            sweep[f"w={weight} p={prior}"] = replay_predictions(replay, config, instances)
    report["sweep"] = {name: score(p, instances)["overall"] for name, p in sweep.items()}
    repos = sorted({i.repo for i in instances})
    pooled: dict[str, Prediction] = {}
    chosen = {}
    candidates = {"default": predictions["default"], **sweep}
    for repo in repos:
        train = [i for i in instances if i.repo != repo]
        best = max(candidates, key=lambda n: (score(candidates[n], train)["overall"]["file"]["Acc@5"]
                                              + score(candidates[n], train)["overall"]["function"]["Acc@10"]))
        chosen[repo] = best
        pooled.update({i.instance_id: candidates[best][i.instance_id] for i in instances if i.repo == repo})
    report["loro"] = {"chosen_per_heldout_repo": chosen, "result": score(pooled, instances)}
    Path(args.out).write_text(json.dumps(report, indent=1))
    for name, result in report["rows"].items():
        print(f"\n## {name}\n{level_table(result)}")
    print("\n## leave-one-repository-out over the sweep (objective file Acc@5 + function Acc@10)")
    print(json.dumps(chosen, indent=1))
    print(level_table(report["loro"]["result"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
