"""The eval report figure without Jupyter: `semantica eval report --metrics FILE --png OUT`.

Reads `<stem>.metrics.json` (written by `semantica eval swebench`) and draws, in one PNG, the
ablation table (overall file and function metrics) above one bar chart per repository of file Acc@5
by ablation. `notebooks/eval_report.ipynb` calls the same functions, so the notebook and this script
make the same picture.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jobs.eval.tables import TABLE_FILE_METRICS, TABLE_FUNCTION_METRICS, ablation_table

BAR_METRIC = "Acc@5"


class ReportError(RuntimeError):
    """The metrics file is missing or malformed, or matplotlib is not installed."""


def load_metrics(path: str | os.PathLike[str]) -> dict[str, Any]:
    file = Path(path)
    if not file.is_file():
        raise ReportError(f"metrics file {file} does not exist; run `semantica eval swebench` first")
    try:
        report = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportError(f"{file}: not valid JSON ({exc.msg})") from None
    if not isinstance(report, dict) or not report.get("ablations"):
        raise ReportError(f"{file}: no `ablations` in it; is it a `<stem>.metrics.json` from `semantica eval swebench`?")
    return report


def table_rows(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the overall ablation table (percentages)."""
    header = (["ablation"] + [f"file {m}" for m in TABLE_FILE_METRICS]
              + [f"func {m}" for m in TABLE_FUNCTION_METRICS])
    rows = []
    for name, result in report["ablations"].items():
        o = result["overall"]
        rows.append([name] + [f"{100 * o['file'][m]:.1f}" for m in TABLE_FILE_METRICS]
                    + [f"{100 * o['function'][m]:.1f}" for m in TABLE_FUNCTION_METRICS])
    return header, rows


def repo_bars(report: dict[str, Any], metric: str = BAR_METRIC) -> tuple[list[str], list[str], dict[str, list[float]]]:
    """(ablations, repositories, {repository: [file metric per ablation, in %]})."""
    ablations = list(report["ablations"])
    repos = sorted({repo for r in report["ablations"].values() for repo in r["by_repo"]})
    values = {repo: [100 * report["ablations"][a]["by_repo"].get(repo, {}).get("file", {}).get(metric, 0.0)
                     for a in ablations] for repo in repos}
    return ablations, repos, values


def make_figure(report: dict[str, Any], metric: str = BAR_METRIC) -> Any:
    """A matplotlib Figure: the ablation table, then one bar chart per repository."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ReportError("matplotlib is not installed: `pip install matplotlib` to draw the report") from exc
    header, rows = table_rows(report)
    ablations, repos, values = repo_bars(report, metric)
    ncols = max(1, min(3, len(repos)))
    nrows = (len(repos) + ncols - 1) // ncols
    fig = plt.figure(figsize=(5 * ncols + 1, 1.2 + 0.35 * len(rows) + 3.6 * nrows), constrained_layout=True)
    grid = fig.add_gridspec(nrows + 1, ncols, height_ratios=[0.6 + 0.3 * len(rows)] + [3.2] * nrows)
    ax_table = fig.add_subplot(grid[0, :])
    ax_table.axis("off")
    n = report.get("instances", "?")
    ax_table.set_title(f"SWE-bench Lite localization, {n} instances (%)", fontsize=11)
    table = ax_table.table(cellText=rows, colLabels=header, loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1, 1.25)
    colors = plt.get_cmap("tab10").colors
    for i, repo in enumerate(repos):
        ax = fig.add_subplot(grid[1 + i // ncols, i % ncols])
        bars = ax.bar(range(len(ablations)), values[repo], color=[colors[j % 10] for j in range(len(ablations))])
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
        count = next((r["by_repo"][repo]["file"]["n"] for r in report["ablations"].values() if repo in r["by_repo"]), 0)
        ax.set_title(f"{repo} (n={count}): file {metric}", fontsize=10)
        ax.set_xticks(range(len(ablations)), ablations, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel("%")
    return fig


def write_png(metrics_path: str | os.PathLike[str], png_path: str | os.PathLike[str], metric: str = BAR_METRIC) -> Path:
    """Draw the report of `metrics_path` into `png_path`; returns the PNG path."""
    report = load_metrics(metrics_path)
    fig = make_figure(report, metric)
    out = Path(png_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def markdown(report: dict[str, Any]) -> str:
    """The overall ablation table as markdown (what `semantica eval swebench` prints)."""
    return ablation_table(report)
