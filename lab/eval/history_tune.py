"""Choosing the history vote parameters by leave-one-repository-out over stored similar commits (`python -m lab.eval.history_lists`).

The votes are a pure function of the stored commits (`semantica.stores.history.index.vote`), so a grid over
`top_commits`, `similarity_power`, `half_life_days` and `share_exponent` costs no git and no index. For each
held-out repository the setting with the best file Acc@5 on the other repositories is scored on it; the pooled
held-out scores estimate what the chosen setting gives on a repository it never saw.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

from jobs.eval.instances import Instance
from jobs.eval.metrics import Prediction, evaluate
from lab.eval.history_lists import MinedHistory
from semantica.config import HistoryConfig

GRID: dict[str, Sequence[Any]] = {
    "top_commits": (10, 30, 60, 100),
    "similarity_power": (0.5, 1.0, 2.0),
    "half_life_days": (0.0, 180.0, 730.0, 1825.0),
    "share_exponent": (0.0, 0.5, 1.0),
}
OBJECTIVE = ("file", "Acc@5")
TOP_N = 50


def settings(grid: dict[str, Sequence[Any]] = GRID) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def predict(mined: dict[str, MinedHistory], config: HistoryConfig) -> dict[str, Prediction]:
    out = {}
    for instance_id, history in mined.items():
        votes = history.votes(config)
        out[instance_id] = Prediction([v.key for v in votes.files][:TOP_N], [])
    return out


def score(predictions: dict[str, Prediction], instances: Sequence[Instance]) -> dict[str, Any]:
    chosen = [i for i in instances if i.instance_id in predictions]
    return evaluate({i.instance_id: predictions[i.instance_id] for i in chosen}, {i.instance_id: i.gold() for i in chosen})


def objective(result: dict[str, Any]) -> float:
    level, metric = OBJECTIVE
    return float(result["overall"][level][metric])


def leave_one_repo_out(instances: Sequence[Instance], mined: dict[str, MinedHistory], base: HistoryConfig,
                       grid: dict[str, Sequence[Any]] = GRID) -> dict[str, Any]:
    """Per held-out repository: the setting chosen on the others and its held-out predictions; pooled metrics."""
    instances = [i for i in instances if i.instance_id in mined]
    candidates = settings(grid)
    predictions = [predict(mined, dataclasses.replace(base, **s)) for s in candidates]
    repos = sorted({i.repo for i in instances})
    pooled: dict[str, Prediction] = {}
    chosen: dict[str, dict[str, Any]] = {}
    for repo in repos:
        train = [i for i in instances if i.repo != repo]
        best = max(range(len(candidates)), key=lambda n: (objective(score(predictions[n], train)), -n))
        chosen[repo] = candidates[best]
        pooled.update({i.instance_id: predictions[best][i.instance_id] for i in instances if i.repo == repo})
    everything = max(range(len(candidates)), key=lambda n: (objective(score(predictions[n], instances)), -n))
    default = predict(mined, base)
    return {"loro": score(pooled, instances), "chosen_per_heldout_repo": chosen,
            "chosen_on_all": candidates[everything], "chosen_on_all_in_sample": score(predictions[everything], instances),
            "default": score(default, instances), "default_setting": {k: getattr(base, k) for k in grid},
            "instances": len(instances), "repos": len(repos)}
