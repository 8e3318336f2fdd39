"""Scoring a prediction file and printing the ablation and per-level tables."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from jobs.eval.instances import Instance
from jobs.eval.metrics import FILE_METRICS, FUNCTION_METRICS, evaluate
from jobs.eval.outputs import load_predictions

TABLE_FILE_METRICS = ("Acc@1", "Acc@3", "Acc@5", "Recall@5", "MRR")
TABLE_FUNCTION_METRICS = ("Acc@5", "Acc@10", "Recall@10", "MRR")

def score_predictions(instances: Sequence[Instance], pred_path: str | os.PathLike[str],
                      missing_as_empty: bool = False) -> dict[str, Any]:
    """Metrics of one existing prediction file (`semantica eval score`)."""
    gold = {i.instance_id: i.gold() for i in instances}
    preds = load_predictions(pred_path)
    unknown = sorted(set(preds) - set(gold))
    result = evaluate(preds, gold, missing_as_empty=missing_as_empty)
    result["unknown_ids"] = unknown
    return result


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def ablation_table(report: dict[str, Any], repo: str | None = None) -> str:
    """Markdown table, one row per ablation (percentages; `n` = instances with gold at that level)."""
    header = (["ablation"] + [f"file {m}" for m in TABLE_FILE_METRICS] + ["n"]
              + [f"func {m}" for m in TABLE_FUNCTION_METRICS] + ["n"])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, result in report["ablations"].items():
        scores = result["overall"] if repo is None else result["by_repo"].get(repo)
        if scores is None:
            continue
        lines.append("| " + " | ".join(
            [name] + [_pct(scores["file"][m]) for m in TABLE_FILE_METRICS] + [str(scores["file"]["n"])]
            + [_pct(scores["function"][m]) for m in TABLE_FUNCTION_METRICS] + [str(scores["function"]["n"])]
        ) + " |")
    return "\n".join(lines)


def level_table(result: dict[str, Any], file_metrics: Sequence[str] = FILE_METRICS,
                function_metrics: Sequence[str] = FUNCTION_METRICS) -> str:
    """Markdown table for one prediction file: overall then one row per repository."""
    header = ["scope"] + [f"file {m}" for m in file_metrics] + ["n"] + [f"func {m}" for m in function_metrics] + ["n"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = [("overall", result["overall"])] + list(result["by_repo"].items())
    for scope, scores in rows:
        lines.append("| " + " | ".join(
            [scope] + [_pct(scores["file"][m]) for m in file_metrics] + [str(scores["file"]["n"])]
            + [_pct(scores["function"][m]) for m in function_metrics] + [str(scores["function"]["n"])]
        ) + " |")
    return "\n".join(lines)
