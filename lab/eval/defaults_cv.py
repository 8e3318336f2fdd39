"""Re-validating the on-by-default query settings by leave-one-repository-out over replayed lists.

Each setting is a small set of alternatives (the first is the simpler one: off, or the neutral value);
every alternative is replayed over the mined lists with all other settings at the configured defaults.
For each held-out repository the alternative best on the OTHER repositories is taken (objective: file
Acc@5 + function Acc@10, as `lab.eval.localize_cv`; a tie goes to the simpler alternative, so a setting
that does not pay is turned off), and its held-out predictions are pooled. A setting is kept on only
where the pooled held-out number says so; `agreement` is the share of folds that chose what the
best-on-all choice is (how stable the choice is).

    python -m lab.eval.defaults_cv --instances lab/results/defaults/corpus_instances.jsonl \\
        --mined lab/results/defaults/corpus --out lab/results/defaults/corpus_loro.json
    python -m lab.eval.defaults_cv --instances swebench_lite_dev.jsonl \\
        --mined lab/results/planning/mined --out lab/results/defaults/dev_loro.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.eval.instances import Instance, load_instances
from jobs.eval.metrics import evaluate
from jobs.eval.replay import LocalizationReplay
from lab.eval.localize_cv import CV_FUNCTION_METRICS, GridPoint
from semantica.config import load_config

CV_FILE_METRICS = ("Acc@1", "Acc@5", "Acc@10")
SUMMARY_FUNCTION = ("Acc@5", "Acc@10", "Recall@50")
TOUCH_DEPTH = 10


@dataclass(frozen=True)
class Setting:
    """One on-by-default setting and its alternatives: (label, overrides), the simpler one first."""

    name: str
    alternatives: tuple[tuple[str, tuple[str, ...]], ...]


SETTINGS: tuple[Setting, ...] = (
    Setting("planning.enabled", (("off", ("planning.enabled=false",)), ("on", ("planning.enabled=true",)))),
    Setting("decompose frame weight", (("0", ("planning.decompose.frame_weight=0.0",)),
                                       ("1.0", ("planning.decompose.frame_weight=1.0",)),
                                       ("2.0", ("planning.decompose.frame_weight=2.0",)))),
    Setting("test-file damping", (("1.0 (none)", ("query.localize_test_factor=1.0",)),
                                  ("0.5", ("query.localize_test_factor=0.5",)))),
    Setting("path boost", (("0", ("query.localize_path_boost=0.0",)), ("5.0", ("query.localize_path_boost=5.0",)))),
    Setting("localize strategies", (("vector+lexical", ("query.localize_strategies=[vector,lexical]",)),
                                    ("all four", ("query.localize_strategies=[vector,lexical,symbol,graph]",)))),
)


def touched(points: Sequence[GridPoint], depth: int = TOUCH_DEPTH) -> int:
    """Instances whose top-`depth` files or functions differ between any two alternatives (how much data
    actually speaks to the setting: a switch that changes no ranking cannot be chosen by it)."""
    ids = set().union(*(p.predictions for p in points))
    return sum(1 for i in ids if len({(tuple(p.predictions[i].files[:depth]), tuple(p.predictions[i].functions[:depth]))
                                      for p in points if i in p.predictions}) > 1)


def _summary(predictions: dict, gold: dict) -> dict[str, Any]:
    scores = evaluate(predictions, gold, file_metrics=CV_FILE_METRICS, function_metrics=CV_FUNCTION_METRICS)
    return {"file": scores["overall"]["file"],
            "function": {m: scores["overall"]["function"][m] for m in ("n", *SUMMARY_FUNCTION)},
            "by_repo": {repo: {"file": s["file"], "function": {m: s["function"][m] for m in ("n", *SUMMARY_FUNCTION)}}
                        for repo, s in scores["by_repo"].items()}}


def loro(points: Sequence[GridPoint], labels: Sequence[str], instances: Sequence[Instance]) -> dict[str, Any]:
    """Leave-one-repository-out choice among `points` (ties: the earlier, simpler point) over the instances
    that were mined (a repository without lists is no fold)."""
    instances = [i for i in instances if i.instance_id in points[0].predictions]
    gold = {i.instance_id: i.gold() for i in instances}
    repos = sorted({i.repo for i in instances})
    chosen: dict[str, str] = {}
    held_out: dict = {}
    for repo in repos:
        train = [i for i in instances if i.repo != repo]
        best = max(range(len(points)), key=lambda j: (round(points[j].objective(train), 9), -j))
        chosen[repo] = labels[best]
        held_out.update({i.instance_id: points[best].predictions[i.instance_id]
                         for i in instances if i.repo == repo and i.instance_id in points[best].predictions})
    overall = max(range(len(points)), key=lambda j: (round(points[j].objective(instances), 9), -j))
    return {"chosen_per_fold": chosen, "best_on_all": labels[overall],
            "agreement": round(sum(1 for c in chosen.values() if c == labels[overall]) / len(repos), 3),
            "held_out": _summary(held_out, gold),
            "objective": {label: round(p.objective(instances), 4) for label, p in zip(labels, points)}}


def run(instances: Sequence[Instance], mined: str, settings: Sequence[Setting] = SETTINGS,
        base: Sequence[str] = (), config_file: str | None = None, repos_dir: str | None = None) -> dict[str, Any]:
    """Every setting's alternatives replayed and chosen by leave-one-repository-out; returns the report.
    `repos_dir` holds the bare clones the learned localizer reads (else $SEMANTICA_MIRRORS)."""
    replay = LocalizationReplay(load_config(config_file, list(base)), mined, repos_dir)
    gold = {i.instance_id: i.gold() for i in instances}
    report: dict[str, Any] = {"instances": len(instances), "repos": sorted({i.repo for i in instances}),
                              "base": list(base), "settings": {}}
    for setting in settings:
        points, labels = [], []
        for label, overrides in setting.alternatives:
            replay.reconfigure(load_config(config_file, [*base, *overrides]))
            point = GridPoint(dict(o.split("=", 1) for o in overrides))
            for inst in instances:
                prediction = replay.predict(inst)
                if prediction is not None:
                    point.predictions[inst.instance_id] = prediction
            points.append(point)
            labels.append(label)
        report["settings"][setting.name] = {
            "alternatives": {label: {"overrides": list(o), **_summary(p.predictions, gold)}
                             for (label, o), p in zip(setting.alternatives, points)},
            "loro": loro(points, labels, instances), "touched": touched(points)}
    return report


def table(report: dict[str, Any]) -> str:
    """One markdown row per alternative and one per setting's held-out choice (percentages)."""
    head = ["setting", "alternative", "file Acc@1", "file Acc@5", "file Acc@10", "func Acc@5", "func Acc@10",
            "func Recall@50"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cells(s: dict) -> list[str]:
        return ([f"{100 * s['file'][m]:.1f}" for m in CV_FILE_METRICS]
                + [f"{100 * s['function'][m]:.1f}" for m in SUMMARY_FUNCTION])

    for name, section in report["settings"].items():
        for label, scores in section["alternatives"].items():
            lines.append("| " + " | ".join([name, label, *cells(scores)]) + " |")
        cv = section["loro"]
        lines.append("| " + " | ".join([name, f"**LORO** (best on all: {cv['best_on_all']}, agreement "
                                              f"{100 * cv['agreement']:.0f}%, {section['touched']} touched)",
                                        *cells(cv["held_out"])]) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.eval.defaults_cv", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", required=True, metavar="FILE")
    parser.add_argument("--mined", required=True, metavar="DIR")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="fixed overrides under every alternative")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME", help="only these settings")
    parser.add_argument("--compare", nargs="+", metavar="SECTION.FIELD=VALUE",
                        help="instead of the settings: the configured defaults against these overrides together")
    parser.add_argument("--config", metavar="FILE")
    parser.add_argument("--repos-dir", metavar="DIR", help="bare clones (default: $SEMANTICA_MIRRORS)")
    parser.add_argument("--repo-filter", nargs="+", default=[], metavar="OWNER/NAME")
    parser.add_argument("--out", metavar="FILE", help="write the JSON report here too")
    args = parser.parse_args(argv)
    instances = [i for i in load_instances(args.instances) if not args.repo_filter or i.repo in args.repo_filter]
    settings = [s for s in SETTINGS if not args.setting or s.name in args.setting]
    if args.compare:
        settings = [Setting("defaults", (("current", ()), ("proposed", tuple(args.compare))))]
    report = run(instances, args.mined, settings, args.set, args.config, args.repos_dir)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(table(report))
    for name, section in report["settings"].items():
        print(f"{name}: per fold {section['loro']['chosen_per_fold']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
