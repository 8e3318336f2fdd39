"""The history cost harness's ratios (lab/eval/history_cost.py `summarize_index`) over the committed pytest
report: a first index is the cold run plus the cold history read; each run's own ratio leaves its history
stage out; the warm ratios are against the run without history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.eval.history_cost import summarize_index

RESULTS = Path(__file__).resolve().parents[3] / "lab" / "results" / "history"


@pytest.mark.parametrize("name", ["cost_pytest.json", "cost_pytest_reindex.json"])
def test_ratios_follow_from_the_runs(name):
    stored = json.loads((RESULTS / name).read_text())
    report = {"first_parent_commits": stored["first_parent_commits"],
              "index": [{k: v for k, v in run.items() if k in ("label", "wall_s", "stages_s", "history_bytes")}
                        for run in stored["index"]]}
    summarize_index(report)
    by = {run["label"]: run for run in report["index"]}
    off = by["off"]["wall_s"]
    for label, run in by.items():
        history = run["stages_s"].get("history", 0.0)
        assert run["stage_ratio"] == pytest.approx(run["wall_s"] / (run["wall_s"] - history), abs=1e-3)
        assert report["index_ratio"][label] == pytest.approx(run["wall_s"] / off, abs=1e-3)
        if history:
            assert report["per_1000_commits"][label]["history_s"] == pytest.approx(
                1000 * history / report["first_parent_commits"], abs=0.05)
    if "off-cold" in by:
        cold = by["off-cold"]["wall_s"]
        assert report["first_index_ratio"] == pytest.approx((cold + by["history"]["stages_s"]["history"]) / cold, abs=1e-3)
    else:
        assert "first_index_ratio" not in report
