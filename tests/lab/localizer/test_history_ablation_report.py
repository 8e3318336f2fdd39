"""The history ablation summary (lab/localizer/history_ablation.py) over the committed train-localizer
reports: deltas are with-history minus without, per level and repository, and reports trained on other
folds or labelled commits are refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lab.localizer.history_ablation import METRICS, AblationError, main, summarize

ABLATION = Path(__file__).resolve().parents[3] / "lab" / "results" / "localizer" / "history_ablation.json"


@pytest.fixture(scope="module")
def reports() -> tuple[dict, dict]:
    stored = json.loads(ABLATION.read_text())
    return stored["with"], stored["without"]


def test_deltas_are_with_minus_without_per_level_and_repository(reports):
    with_history, without = reports
    summary = summarize(with_history, without)
    assert summary["repositories"] == len(with_history["corpus"]["repositories"])
    for level, rows in summary["levels"].items():
        for metric in METRICS:
            learned = with_history["levels"][level]["learned"][metric] - without["levels"][level]["learned"][metric]
            assert rows["delta"][metric] == pytest.approx(learned, abs=0.01)
        repo = next(iter(with_history["levels"][level]["per_repo"]))
        per_repo = (with_history["levels"][level]["per_repo"][repo]["learned"]["Acc@5"]
                    - without["levels"][level]["per_repo"][repo]["learned"]["Acc@5"])
        assert rows["per_repo_delta"][repo]["Acc@5"] == pytest.approx(per_repo, abs=0.01)
        assert rows["repositories_better_at_5"] + rows["repositories_worse_at_5"] <= summary["repositories"]


def test_reports_of_other_folds_or_queries_are_refused(reports, tmp_path):
    with_history, without = reports
    other_folds = copy.deepcopy(without)
    other_folds["folds"] = [sorted(r for fold in without["folds"] for r in fold)]
    with pytest.raises(AblationError, match="folds"):
        summarize(with_history, other_folds)
    fewer = copy.deepcopy(without)
    first = next(iter(fewer["corpus"]["repositories"]))
    fewer["corpus"]["repositories"][first] -= 1
    with pytest.raises(AblationError, match="labelled commits"):
        summarize(with_history, fewer)
    paths = [tmp_path / "with.json", tmp_path / "without.json"]
    for path, report in zip(paths, (with_history, other_folds)):
        path.write_text(json.dumps(report))
    with pytest.raises(SystemExit) as exit_info:  # the command: one-line error, exit status 2
        main(["--with", str(paths[0]), "--without", str(paths[1]), "--out", str(tmp_path / "out.json")])
    assert exit_info.value.code == 2 and not (tmp_path / "out.json").exists()
