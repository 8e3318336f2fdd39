"""Leave-one-repository-out choice of localization settings over replayed lists.

Settings tuned on the whole dev split do not fully carry over to unseen instances (the
held-out Verified instances scored 5-16 points lower). So each repository's instances are scored
with the grid point that was best on the OTHER repositories (objective: file Acc@5 + function
Acc@10, pooled over their instances; ties go to the earlier grid point, the grid starts at the
current setting). The pooled held-out predictions give the honest number; the point best on all
repositories is what a default would ship.

    python -m lab.eval.localize_cv --instances FILE --mined DIR \\
        --grid query.localize_test_factor=0.25,0.5,1 --grid query.localize_path_boost=1,5
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.eval.instances import Instance, load_instances
from jobs.eval.metrics import FUNCTION_METRICS, Prediction, acc_at_k, evaluate, normalize_function
from jobs.eval.replay import LocalizationReplay
from jobs.eval.tables import level_table
from semantica.config import load_config

OBJECTIVE_FILE_K = 5
OBJECTIVE_FUNCTION_K = 10
CV_FUNCTION_METRICS = (*FUNCTION_METRICS, "Recall@50")
SUMMARY_FILE = ("Acc@1", "Acc@5")
SUMMARY_FUNCTION = ("Acc@5", "Acc@10", "Recall@50")


@dataclass
class GridPoint:
    """One setting of the grid and its per-instance predictions."""

    overrides: dict[str, str]
    predictions: dict[str, Prediction] = field(default_factory=dict)

    def objective(self, instances: Sequence[Instance]) -> float:
        """Mean file Acc@5 + mean function Acc@10 (instances with gold functions) over `instances`."""
        file_scores, function_scores = [], []
        for inst in instances:
            pred = self.predictions.get(inst.instance_id, Prediction([], []))
            file_scores.append(acc_at_k(pred.files, inst.gold_files, OBJECTIVE_FILE_K))
            if inst.gold_functions:
                function_scores.append(acc_at_k([normalize_function(f) for f in pred.functions],
                                                [normalize_function(f) for f in inst.gold_functions],
                                                OBJECTIVE_FUNCTION_K))
        return _mean(file_scores) + _mean(function_scores)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def grid_points(grid: dict[str, list[str]]) -> list[dict[str, str]]:
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def run_cv(base: list[str], grid: dict[str, list[str]], instances: Sequence[Instance], mined: str,
           config_file: str | None = None) -> dict[str, Any]:
    """Replays every grid point, then picks per held-out repository; returns the report."""
    replay = LocalizationReplay(load_config(config_file, base), mined)
    points: list[GridPoint] = []
    for overrides in grid_points(grid):
        replay.reconfigure(load_config(config_file, [*base, *(f"{k}={v}" for k, v in overrides.items())]))
        point = GridPoint(overrides)
        for inst in instances:
            prediction = replay.predict(inst)
            if prediction is not None:
                point.predictions[inst.instance_id] = prediction
        points.append(point)
    gold = {i.instance_id: i.gold() for i in instances}
    repos = sorted({i.repo for i in instances})
    held_out: dict[str, Prediction] = {}
    folds = {}
    for repo in repos:
        train = [i for i in instances if i.repo != repo]
        best = max(points, key=lambda p: (p.objective(train), -points.index(p)))
        folds[repo] = best.overrides
        held_out.update({i.instance_id: best.predictions[i.instance_id]
                         for i in instances if i.repo == repo and i.instance_id in best.predictions})
    overall = max(points, key=lambda p: (p.objective(instances), -points.index(p)))
    every = []
    for point in points:
        scores = evaluate(point.predictions, gold, function_metrics=CV_FUNCTION_METRICS)["overall"]
        every.append({"overrides": point.overrides, "file": {m: scores["file"][m] for m in SUMMARY_FILE},
                      "function": {m: scores["function"][m] for m in SUMMARY_FUNCTION}})
    return {
        "base": base, "grid": grid, "points": len(points),
        "baseline": {"overrides": points[0].overrides,
                     "metrics": evaluate(points[0].predictions, gold, function_metrics=CV_FUNCTION_METRICS)},
        "leave_one_repo_out": {"chosen": folds,
                               "metrics": evaluate(held_out, gold, function_metrics=CV_FUNCTION_METRICS)},
        "best_on_all": {"overrides": overall.overrides,
                        "metrics": evaluate(overall.predictions, gold, function_metrics=CV_FUNCTION_METRICS)},
        "all_points": every,
    }


def _grid_arg(text: str) -> tuple[str, list[str]]:
    key, sep, values = text.partition("=")
    if not sep or not values:
        raise argparse.ArgumentTypeError(f"--grid wants SECTION.FIELD=V1,V2,..., got {text!r}")
    return key, values.split(",")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.eval.localize_cv", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True, metavar="FILE")
    parser.add_argument("--mined", required=True, metavar="DIR")
    parser.add_argument("--grid", type=_grid_arg, action="append", default=[], metavar="SECTION.FIELD=V1,V2")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="fixed overrides for every grid point")
    parser.add_argument("--config", metavar="FILE")
    parser.add_argument("--repo-filter", nargs="+", default=[], metavar="OWNER/NAME", help="only these repositories")
    parser.add_argument("--out", metavar="FILE", help="write the JSON report here too")
    args = parser.parse_args(argv)
    instances = [i for i in load_instances(args.instances) if not args.repo_filter or i.repo in args.repo_filter]
    report = run_cv(args.set, dict(args.grid), instances, args.mined, args.config)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name in ("baseline", "leave_one_repo_out", "best_on_all"):
        section = report[name]
        print(f"## {name}: {section.get('overrides') or section.get('chosen')}")
        print(level_table(section["metrics"], function_metrics=CV_FUNCTION_METRICS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
