"""Two `semantica eval swebench` runs of the same instances under two settings (fp32 and int8, say), scored side
by side over the instances both predicted (a benchmark report, not a test).

    python -m lab.bench.variant_replay --instances FILE --run fp32=DIR/pred.jsonl --run int8=DIR/pred.jsonl \
        [--ablation vector full] [--out FILE]

Per ablation and setting: file Acc@5, Acc@10, MRR and NDCG@10, function Acc@5 and Acc@10, and the second
setting's difference from the first in points. Only instances predicted by every run count, so a run cut
short is compared on what it finished.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from jobs.eval.instances import load_instances
from jobs.eval.metrics import Prediction, evaluate
from jobs.eval.outputs import OutputPaths, read_jsonl

FILE_METRICS = ("Acc@5", "Acc@10", "MRR", "NDCG@10")
FUNCTION_METRICS = ("Acc@5", "Acc@10")
POINTS = 100


def predictions(stem: Path, ablation: str) -> dict[str, Prediction]:
    """One run's predictions of one ablation (the last line of an instance wins)."""
    rows = read_jsonl(OutputPaths(stem).predictions(ablation))
    return {r["instance_id"]: Prediction(r.get("files") or [], r.get("functions") or []) for r in rows}


def compare(instances_file: Path, runs: dict[str, Path], ablations: list[str]) -> dict[str, Any]:
    gold = {i.instance_id: i.gold() for i in load_instances(instances_file)}
    out: dict[str, Any] = {"runs": {name: str(path) for name, path in runs.items()}, "ablations": {}}
    names = list(runs)
    for ablation in ablations:
        preds = {name: predictions(stem, ablation) for name, stem in runs.items()}
        common = set.intersection(*(set(p) for p in preds.values())) & set(gold)
        scored = {name: evaluate({i: p[i] for i in common}, {i: gold[i] for i in common}, FILE_METRICS,
                                 FUNCTION_METRICS) for name, p in preds.items()}
        entry: dict[str, Any] = {"instances": sorted(common)}
        for name, result in scored.items():
            entry[name] = {"overall": result["overall"], "by_repo": result["by_repo"]}
        first, *rest = names
        for other in rest:
            entry[f"{other}_minus_{first}_points"] = {
                level: {m: round(POINTS * (scored[other]["overall"][level][m] - scored[first]["overall"][level][m]), 2)
                        for m in scored[first]["overall"][level] if m != "n"}
                for level in ("file", "function")}
        out["ablations"][ablation] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", required=True, type=Path)
    parser.add_argument("--run", action="append", required=True, metavar="NAME=PRED.jsonl",
                        help="a run's --out path (repeatable; the first is the reference)")
    parser.add_argument("--ablation", nargs="+", default=["vector", "full"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    runs = dict(item.split("=", 1) for item in args.run)
    if len(runs) < 2 or any(not path for path in runs.values()):
        parser.error("give at least two --run NAME=PRED.jsonl")
    result = compare(args.instances, {name: Path(path) for name, path in runs.items()}, args.ablation)
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
