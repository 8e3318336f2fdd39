"""The function order's settings, chosen on the corpus by leave-one-repository-out:
`python -m lab.localizer.function_order FEATURES OUT.json [--file-weights 1,2] [--file-ks 60,5] [--name-boosts 0,1]`.

Every (`function_file_weight`, `function_file_rrf_k`, `function_name_boost`) setting of the grid re-scores the mined function candidates
with `FunctionScore` (the query path's formula) from their feature columns. For each repository the setting with
the best query-weighted (Acc@10 + Recall@50) / 2 on the OTHER repositories ranks it; the held-out numbers are
summed over repositories and set against the shipped setting's. The setting chosen on every repository is the
one to ship. The candidates are the mined ones (their cut at `max_function_candidates` came from the mined setting), so
a new setting is confirmed by mining again with it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

from jobs.localizer.train import load_features, ranking_metrics
from semantica.config import load_config
from semantica.stores.localizer.features import RRF_K, FunctionScore

CRITERION = ("Acc@10", "Recall@50")
REPORTED = ("Acc@1", "Acc@5", "Acc@10", "NDCG@10", "Recall@50", "MRR")


def columns(frame: pl.DataFrame) -> dict[str, np.ndarray]:
    """The parts of `FunctionScore` a mined function row holds (missing history: no vote)."""
    def col(name: str) -> np.ndarray:
        return np.nan_to_num(frame[name].to_numpy().astype(np.float64), nan=0.0)

    lists = col("body_rr") + col("name_rr") + col("history_rr") + col("frame_function") / RRF_K
    return {"lists": lists, "file_rank": col("file_fusion_rank"), "named": col("code_name_named"), "test": col("is_test")}


def weighted(per_repo: dict[str, dict], repos: list[str]) -> dict[str, float]:
    n = sum(per_repo[r]["queries"] for r in repos)
    out = {m: round(sum(per_repo[r][m] * per_repo[r]["queries"] for r in repos) / n, 2) if n else float("nan")
           for m in REPORTED}
    return out | {"queries": n}


def criterion(metrics: dict[str, float]) -> float:
    return sum(metrics[m] for m in CRITERION) / len(CRITERION)


def search(features: str, file_weights: list[float], file_ks: list[float], name_boosts: list[float],
           test_factor: float, shipped: tuple[float, float, float]) -> dict:
    level = load_features(features)[0]["functions"]
    frame = level.frame
    parts = columns(frame)
    repos = sorted(frame["repo"].unique().to_list())
    masks = {r: (frame["repo"] == r).to_numpy() for r in repos}
    subs = {r: frame.filter(pl.col("repo") == r).select("qid", "label") for r in repos}
    shipped_score = FunctionScore(*shipped, test_factor)  # features mined at this setting re-score to their fusion
    base = shipped_score(parts["lists"], shipped_score.file_term(parts["file_rank"]), parts["named"], parts["test"])
    drift = float(np.max(np.abs(base - frame["fusion"].to_numpy()))) if len(frame) else 0.0
    grid: dict[str, dict] = {}
    settings = dict.fromkeys([*itertools.product(file_weights, file_ks, name_boosts), tuple(map(float, shipped))])
    for w, k, b in settings:  # the grid and the shipped setting
        score = FunctionScore(w, k, b, test_factor)
        scores = score(parts["lists"], score.file_term(parts["file_rank"]), parts["named"], parts["test"])
        per_repo = {r: ranking_metrics(subs[r], scores[masks[r]], level.gold) for r in repos}
        grid[f"{w}/{k}/{b}"] = {"file_weight": w, "file_rrf_k": k, "name_boost": b, "per_repo": per_repo,
                                "overall": weighted(per_repo, repos)}
        print(f"file_weight {w} file_rrf_k {k} name_boost {b}: {grid[f'{w}/{k}/{b}']['overall']}", flush=True)
    shipped_key = "/".join(str(float(x)) for x in shipped)
    overall = max(grid, key=lambda k: (criterion(grid[k]["overall"]), k == shipped_key))
    return {"features": features, "criterion": list(CRITERION), "fusion_recompute_max_abs_diff": drift,
            "shipped": shipped_key, "chosen_on_all": overall, **leave_one_repository_out(grid, repos, shipped_key)[1]}


def leave_one_repository_out(grid: dict[str, dict], repos: list[str], shipped_key: str) -> tuple[dict[str, str], dict]:
    """Each repository ranked by the grid setting with the best criterion on the OTHER repositories (ties: the
    shipped one): the choice per repository, and the report's `loro`, `grid` and `per_repo` parts."""
    held_out: dict[str, dict] = {}
    chosen: dict[str, str] = {}
    for r in repos:
        others = [o for o in repos if o != r]
        chosen[r] = max(grid, key=lambda k: (criterion(weighted(grid[k]["per_repo"], others)), k == shipped_key))
        held_out[r] = grid[chosen[r]]["per_repo"][r]
    return chosen, {
        "loro": {"chosen": weighted(held_out, repos), "shipped": grid[shipped_key]["overall"],
                 "choices": {k: sum(1 for v in chosen.values() if v == k) for k in sorted(set(chosen.values()))}},
        "grid": {k: {kk: vv for kk, vv in v.items() if kk != "per_repo"} for k, v in grid.items()},
        "per_repo": {r: {"chosen": chosen[r], "held_out": held_out[r], "shipped": grid[shipped_key]["per_repo"][r]}
                     for r in repos}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("features")
    parser.add_argument("out")
    parser.add_argument("--file-weights", default="1,2,4")
    parser.add_argument("--file-ks", default="60,20,10,5,1")
    parser.add_argument("--name-boosts", default="0,1,2,4")
    args = parser.parse_args(argv)
    loc = load_config(None, []).localizer
    grid = [[float(x) for x in arg.split(",")] for arg in (args.file_weights, args.file_ks, args.name_boosts)]
    result = search(args.features, *grid, loc.test_factor,
                    (loc.function_file_weight, loc.function_file_rrf_k, loc.function_name_boost))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("fusion_recompute_max_abs_diff", "chosen_on_all", "loro")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
