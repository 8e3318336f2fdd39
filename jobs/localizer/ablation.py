"""The localizer's ablation on a replayed split: fixed fusion, + candidates-first, + learned files (each blended
into today's ranking), and the localizer alone, in one process (candidates are computed once per instance and
shared by every row)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path

from jobs.eval.instances import Instance
from jobs.eval.metrics import evaluate
from jobs.eval.replay import LocalizationReplay
from semantica.config import Config, load_config

FILE_METRICS = ("Acc@1", "Acc@5", "Acc@10", "Recall@50", "MRR")
FUNCTION_METRICS = ("Acc@5", "Acc@10", "Recall@10", "Recall@50", "MRR")
ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("fixed fusion (today)", ("localizer.enabled=false",)),  # the localizer is on by default: today is without it
    ("+ candidates-first", ("localizer.enabled=true", "localizer.learned_files=false")),
    ("+ learned files", ("localizer.enabled=true", "localizer.learned_files=true")),
    ("localizer alone", ("localizer.enabled=true", "localizer.learned_files=true", "localizer.today_weight=0")),
)



def history_rows(model_dir: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Rows with the history votes and priors of each instance's base commit (`localizer.history_features`):
    the vote list in the cheap fusion, and a file model trained with history features (`model_dir`)."""
    with_history = ("localizer.enabled=true", "localizer.history_features=true")
    return (("+ candidates-first, history", (*with_history, "localizer.learned_files=false")),
            ("+ learned files, history", (*with_history, "localizer.learned_files=true",
                                          f"localizer.model_dir={model_dir}")))


def run_ablation(config_file: str | None, overrides: Sequence[str], mined: str, instances: Sequence[Instance],
                 rows: Sequence[tuple[str, tuple[str, ...]]] = ROWS) -> dict:
    results = {}
    replay: LocalizationReplay | None = None
    for name, row in rows:
        config: Config = load_config(config_file, [*overrides, *row])
        if replay is None:
            replay = LocalizationReplay(config, mined)
        else:
            replay.reconfigure(config)
        predictions = {i.instance_id: p for i in instances if (p := replay.predict(i)) is not None}
        results[name] = evaluate(predictions, {i.instance_id: i.gold() for i in instances},
                                 file_metrics=FILE_METRICS, function_metrics=FUNCTION_METRICS)
        results[name]["overrides"] = list(row)
    from jobs.localizer.replay import LearnedReplay

    cost = {}
    for name, seconds in (("candidates", LearnedReplay.seconds), ("models", LearnedReplay.model_seconds)):
        if seconds:
            ordered = sorted(seconds)
            cost[name] = {"p50_ms": round(1000 * statistics.median(ordered), 1),
                          "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1),
                          "queries": len(ordered)}
    if cost:
        results["cost_ms"] = cost
    return results


def table(results: dict, scope: str = "overall") -> str:
    header = ["row"] + [f"file {m}" for m in FILE_METRICS] + [f"func {m}" for m in FUNCTION_METRICS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, result in results.items():
        if name == "cost_ms":
            continue
        scores = result["overall"] if scope == "overall" else result["by_repo"].get(scope)
        if scores is None:
            continue
        lines.append("| " + " | ".join([name] + [f"{100 * scores['file'][m]:.1f}" for m in FILE_METRICS]
                                       + [f"{100 * scores['function'][m]:.1f}" for m in FUNCTION_METRICS]) + " |")
    return "\n".join(lines)


def write(results: dict, out: str | Path) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(results, indent=1, default=str) + "\n")
