"""Pooling per-repository-group reports gives back the overall numbers of one run over every repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.eval.history_adapt_combine import combine

REPORT = Path(__file__).resolve().parents[3] / "lab/results/history/dev_report.json"


def _part(report: dict, repos: set[str]) -> dict:
    return {"rows": {name: {"by_repo": {r: v for r, v in row["by_repo"].items() if r in repos}}
                     for name, row in report["rows"].items()}}


def test_split_reports_pool_back_to_the_whole_run():
    report = json.loads(REPORT.read_text())
    repos = sorted(report["rows"]["default"]["by_repo"])
    pooled = combine([_part(report, {"sympy/sympy"}), _part(report, set(repos) - {"sympy/sympy"})])
    for name, row in report["rows"].items():
        for level, metric in (("file", "Acc@5"), ("file", "Acc@1"), ("function", "Acc@10")):
            assert pooled["rows"][name]["overall"][level][metric] == pytest.approx(row["overall"][level][metric], abs=1e-5)
            assert pooled["rows"][name]["overall"][level]["n"] == row["overall"][level]["n"]
