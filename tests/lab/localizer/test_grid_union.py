"""Two dense-channel studies as one grid: each repository is scored with the build and channel setting best on
the others, and studies of different samples are refused."""

from __future__ import annotations

import pytest

from lab.localizer.grid_union import union

REPOS = ["acme/a", "acme/b", "acme/c"]


def metrics(acc10: float, recall50: float) -> dict[str, float]:
    return {"Acc@1": 0.0, "Acc@5": 0.0, "Acc@10": acc10, "NDCG@10": 0.0, "Recall@50": recall50, "MRR": 0.0,
            "queries": 10}


def study(per_setting: dict[str, dict[str, tuple[float, float]]], repos=REPOS) -> dict:
    grid = {}
    for key, by_repo in per_setting.items():
        per_repo = {r: metrics(*by_repo[r]) for r in repos}
        grid[key] = {"per_repo": per_repo, "overall": metrics(sum(v[0] for v in by_repo.values()) / len(repos),
                                                              sum(v[1] for v in by_repo.values()) / len(repos))}
    return {"repos": repos, "queries": 30, "criterion": "(Acc@10 + Recall@50) / 2", "grid": grid, "loro": {}}


OFF, ON = "off/0/0.0/0.0", "dense/200/10.0/0.5"


def test_each_repository_takes_the_build_best_on_the_others():
    name = study({OFF: {r: (40.0, 70.0) for r in REPOS}, ON: {r: (50.0, 80.0) for r in REPOS}})
    body = study({OFF: {r: (41.0, 71.0) for r in REPOS},
                  ON: {"acme/a": (20.0, 50.0), "acme/b": (52.0, 82.0), "acme/c": (52.0, 82.0)}})
    result = union({"name": name, "body": body})
    assert result["picks"]["acme/a"] == f"body:{ON}"  # chosen on b and c, where body's channel wins ...
    assert result["picks"]["acme/b"] == result["picks"]["acme/c"] == f"name:{ON}"  # a's loss outweighs the gain
    assert result["loro"]["chosen"]["Acc@10"] == pytest.approx((20.0 + 50.0 + 50.0) / 3)  # ... each scored held out
    assert result["folds_choosing"] == {"name": 2, "body": 1}


def test_studies_of_different_samples_are_refused():
    name = study({OFF: {r: (40.0, 70.0) for r in REPOS}})
    other = study({OFF: {r: (40.0, 70.0) for r in REPOS[:2]}}, repos=REPOS[:2])
    with pytest.raises(ValueError, match="another sample"):
        union({"name": name, "body": other})
