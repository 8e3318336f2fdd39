"""Function recall and order on the corpus with the learned file order, by leave-one-repository-out:
`python -m lab.localizer.function_recall WIDE OUT.json [--top-files 20,30,50,100] [--file-ks 5,10,20,40]
[--ranker-cut 300]`.

`WIDE` is the corpus mined with every function of every file candidate and no cut (`mine-localizer --set
localizer.top_files=100 --set localizer.max_function_candidates=100000 --set localizer.history_features=true`),
so any smaller candidate set is a filter of it. The learned file order is the one the corpus would see: each
repository's files are scored by a file ranker trained (`train-localizer`'s recipe and seeded repository folds)
on the other folds only. Every setting of (file order: fixed fusion or learned, `top_files`,
`function_file_rrf_k`, `function_name_boost`) re-scores the functions with `FunctionScore` (the query path's
formula); the candidates are the functions of the top `top_files` files in that order plus the list hits, frames'
and named functions (the query path's set). Each repository is ranked with the setting that has the best
(Acc@10 + Recall@50) / 2 on the other repositories, as `lab/localizer/function_order.py` chooses.
`--ranker-cut N` then trains LambdaRank function rankers on the setting most folds chose (its candidates cut at N),
on the other repository folds, with and without the learned file order's columns (`ranker_study`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from jobs.localizer.fit import fit_ranker
from jobs.localizer.train import LevelData, load_features, ranking_metrics, repo_folds
from lab.localizer.function_order import REPORTED, leave_one_repository_out, weighted
from semantica.config import LocalizerTrainConfig, load_config, load_train_config
from semantica.stores.localizer.features import FILE_FEATURES, FUNCTION_FEATURES, RRF_K, FunctionScore

ORDERS = ("fusion", "learned")


def out_of_fold(rows: pl.DataFrame, features: Sequence[str], depth: int, folds: list[list[str]], seed: int,
                train: LocalizerTrainConfig) -> np.ndarray:
    """Each row scored by a ranker trained (`train-localizer`'s recipe) on the other repository folds only."""
    scores = np.zeros(len(rows), dtype=np.float64)
    for held_out in folds:
        model = fit_ranker(rows.filter(~pl.col("repo").is_in(held_out)), features, depth, train, seed)
        mask = rows["repo"].is_in(held_out).to_numpy()
        scores[mask] = model.predict(rows.filter(pl.col("repo").is_in(held_out)).select(features).to_numpy(),
                                     num_threads=train.num_threads)
        print(f"fold of {len(held_out)} repositories scored", flush=True)
    return scores


def file_ranks(files: pl.DataFrame, learned: np.ndarray) -> pl.DataFrame:
    """qid, path, its rank by fixed fusion and by the out-of-fold learned score (1 = first)."""
    return files.select("qid", pl.col("key").alias("path"), "fusion").with_columns(pl.Series("learned", learned)).with_columns(
        pl.col("fusion").rank("ordinal", descending=True).over("qid").alias("rank_fusion"),
        pl.col("learned").rank("ordinal", descending=True).over("qid").alias("rank_learned"))


def function_parts(functions: pl.DataFrame, ranks: pl.DataFrame, ties: str = "name",
                   ) -> tuple[pl.DataFrame, dict[str, np.ndarray]]:
    """The function rows with their file's ranks joined, and the columns `FunctionScore` reads. Each query's rows
    come in the order that breaks equal scores (by key as the query path, or by body BM25 then key: the dropped `function_ties: body`), so
    a stable sort by score ranks them as the query path does."""
    by_body = ties == "body"
    if by_body and "body_score" not in functions.columns:
        raise ValueError("function_ties=body needs a mine with the body_score column (mine-localizer again)")
    frame = functions.with_columns(pl.col("key").str.split("::").list.first().alias("path")).join(
        ranks.select("qid", "path", "rank_fusion", "rank_learned"), on=["qid", "path"], how="left").sort(
        ["qid", *(["body_score"] if by_body else []), "key"], descending=[False, *([True] if by_body else []), False])

    def col(name: str) -> np.ndarray:
        return np.nan_to_num(frame[name].to_numpy().astype(np.float64), nan=0.0)

    lists = col("body_rr") + col("name_rr") + col("history_rr") + col("frame_function") / RRF_K
    return frame, {"lists": lists, "named": col("code_name_named"), "test": col("is_test"),
                   "fusion": col("rank_fusion"), "learned": col("rank_learned")}


def candidate_mask(parts: dict[str, np.ndarray], order: str, top: int, boost: float) -> np.ndarray:
    """The query path's function candidates: of the top `top` files in `order`, list hits (and frames), and with a
    name boost the functions the query names."""
    file_rank = parts[order]
    return ((file_rank > 0) & (file_rank <= top)) | (parts["lists"] > 0) | ((parts["named"] > 0) & (boost > 0))


def study_inputs(wide: str, seed: int, train: LocalizerTrainConfig | None = None,
                 ) -> tuple[pl.DataFrame, dict[str, np.ndarray], LevelData, list[list[str]]]:
    """The wide function rows (with their file's fusion and out-of-fold learned ranks), `FunctionScore`'s columns,
    the function level (gold counts) and the repository folds the file ranker was trained on."""
    data, _ = load_features(wide)
    train = train or load_train_config(None, []).localizer_train
    ranks, folds = learned_file_ranks(data["files"], seed, train)
    frame, parts = function_parts(data["functions"].frame, ranks)
    return frame, parts, data["functions"], folds


def learned_file_ranks(files: LevelData, seed: int, train: LocalizerTrainConfig,
                       ) -> tuple[pl.DataFrame, list[list[str]]]:
    """Each file row's fusion and out-of-fold learned ranks (`file_ranks`, row for row with `files.frame`) and the
    repository folds the file ranker was trained on."""
    folds = repo_folds(sorted(files.frame["repo"].unique().to_list()), train.folds, seed)
    return file_ranks(files.frame, out_of_fold(files.frame, FILE_FEATURES, train.train_file_depth, folds, seed,
                                               train)), folds


LEARNED_FILE_FEATURES = ("file_learned_rank", "file_learned_rr", "order_score")


def ranker_study(frame: pl.DataFrame, parts: dict[str, np.ndarray], level: LevelData, folds: list[list[str]],
                 setting: tuple[str, int, float, float], cut: int, seed: int, train: LocalizerTrainConfig,
                 save: str = "") -> dict:
    """A LambdaRank function ranker on the candidates `setting` draws (cut at `cut` by its score), trained on the
    other repository folds, with and without the learned file order's columns (its rank, reciprocal rank and the
    fixed formula's score), against the fixed formula on the same candidates. `fusion_rank` is each candidate's
    position in that order, as the query path computes it. `save`: also write the schema-only ranker trained on
    every repository there."""
    order, top, k, boost = setting
    loc = load_config(None, []).localizer
    score = FunctionScore(loc.function_file_weight, k, boost, loc.test_factor)
    learned = parts["learned"]
    rows = frame.with_columns(
        pl.Series("order_score", score(parts["lists"], score.file_term(parts[order]), parts["named"], parts["test"])),
        pl.Series("keep", candidate_mask(parts, order, top, boost)),
        pl.Series("file_learned_rank", np.where(learned > 0, learned, np.nan)),
        pl.Series("file_learned_rr", np.where(learned > 0, 1.0 / (RRF_K + learned), 0.0))).filter(pl.col("keep"))
    position = pl.col("order_score").rank("ordinal", descending=True).over("qid")  # as the query path's `fusion_rank`
    rows = rows.with_columns(position.cast(pl.Float32).alias("fusion_rank")).filter(pl.col("fusion_rank") <= cut)
    rows = rows.with_columns(pl.col("order_score").alias("fusion")).sort(["qid", "fusion"], descending=[False, True])
    out: dict = {"setting": list(setting), "cut": cut, "rows": len(rows),
                 "formula": ranking_metrics(rows, rows["order_score"].to_numpy(), level.gold)}
    for name, features in (("ranker", FUNCTION_FEATURES), ("ranker + learned file order", (*FUNCTION_FEATURES,
                                                                                           *LEARNED_FILE_FEATURES))):
        out[name] = ranking_metrics(rows, out_of_fold(rows, features, train.train_function_depth, folds, seed, train),
                                    level.gold)
        print(name, out[name], "formula", out["formula"], flush=True)
    if save:  # the schema's own features on every repository: a function model the query path can load
        fit_ranker(rows, FUNCTION_FEATURES, train.train_function_depth, train, seed).save_model(save)
    return out


def search(wide: str, top_files: list[int], file_ks: list[float], name_boosts: list[float], seed: int,
           shipped: tuple[float, float, float, int], train: LocalizerTrainConfig | None = None,
           ranker_cut: int = 0, save_ranker: str = "") -> dict:
    """The grid search; with `ranker_cut`, also `ranker_study` on the setting most folds chose."""
    train = train or load_train_config(None, []).localizer_train
    frame, parts, level, folds = study_inputs(wide, seed, train)
    repos = sorted(frame["repo"].unique().to_list())
    masks = {r: (frame["repo"] == r).to_numpy() for r in repos}
    subs = {r: frame.filter(pl.col("repo") == r).select("qid", "label") for r in repos}
    weight, test_factor = shipped[0], load_config(None, []).localizer.test_factor
    mined = FunctionScore(weight, shipped[1], shipped[2], test_factor)  # the wide mine's own order re-scored
    drift = float(np.max(np.abs(mined(parts["lists"], mined.file_term(parts["fusion"]), parts["named"], parts["test"])
                                - frame["fusion"].to_numpy()))) if len(frame) else 0.0
    grid: dict[str, dict] = {}
    shipped_key = f"fusion/{shipped[3]}/{float(shipped[1])}/{float(shipped[2])}"
    settings = [*itertools.product(ORDERS, top_files, file_ks, name_boosts), ("fusion", shipped[3], shipped[1], shipped[2])]
    for order, top, k, boost in dict.fromkeys(settings):  # the grid and the shipped setting
        score = FunctionScore(weight, k, boost, test_factor)
        file_rank = parts[order]
        scores = score(parts["lists"], score.file_term(file_rank), parts["named"], parts["test"])
        scores = np.where(candidate_mask(parts, order, top, boost), scores, -1.0)
        per_repo = {r: ranking_metrics(subs[r], scores[masks[r]], level.gold) for r in repos}
        key = f"{order}/{top}/{float(k)}/{float(boost)}"
        grid[key] = {"order": order, "top_files": top, "file_rrf_k": k, "name_boost": boost, "per_repo": per_repo,
                     "overall": weighted(per_repo, repos)}
        print(key, grid[key]["overall"], flush=True)
    chosen, report = leave_one_repository_out(grid, repos, shipped_key)
    ranker = {}
    if ranker_cut:
        most = grid[max(set(chosen.values()), key=list(chosen.values()).count)]  # the setting most folds chose
        ranker = ranker_study(frame, parts, level, folds, (most["order"], most["top_files"], most["file_rrf_k"],
                                                           most["name_boost"]), ranker_cut, seed, train, save_ranker)
    return {"wide": wide, "criterion": "(Acc@10 + Recall@50) / 2", "folds": folds, "shipped": shipped_key,
            "ranker": ranker, "fusion_recompute_max_abs_diff": drift, "metrics": list(REPORTED), **report}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wide")
    parser.add_argument("out")
    parser.add_argument("--top-files", default="10,20,30,50,100")
    parser.add_argument("--file-ks", default="5,10,20,40,60")
    parser.add_argument("--name-boosts", default="0,1")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--ranker-cut", type=int, default=0,
                        help="also train a function ranker on the chosen setting's candidates, cut at this many")
    parser.add_argument("--save-ranker", default="", metavar="FILE",
                        help="with --ranker-cut: write the function model trained on every repository here")
    args = parser.parse_args(argv)
    config = load_config(None, [])
    loc = config.localizer
    seed = load_train_config(None, []).localizer_train.seed if args.seed is None else args.seed
    result = search(args.wide, [int(x) for x in args.top_files.split(",")],
                    [float(x) for x in args.file_ks.split(",")], [float(x) for x in args.name_boosts.split(",")], seed,
                    (loc.function_file_weight, loc.function_file_rrf_k, loc.function_name_boost, loc.top_files),
                    load_train_config(None, []).localizer_train, args.ranker_cut, args.save_ranker)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["loro"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
