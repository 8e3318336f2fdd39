"""A learned function ranker over the dense channel's head, with the channel's cosine as features, against the
channel's fixed fusion: `lab.localizer.function_dense ... --ranker-study` (needs the study's cosines).

Each query's head (the top `--depth` functions of the shipped order, as the channel reads it) is re-ranked by a
LambdaRank model (`train-localizer`'s recipe and seeded repository folds) trained on the other folds only, with the
function schema's features plus the head rank, and with the cosine and its rank within the head as well; the
functions below the head keep the shipped order. Read-only: it says whether a learned ranker with dense evidence
beats the fusion before any query path is built for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from jobs.localizer.train import LevelData, ranking_metrics, repo_folds
from lab.localizer.function_order import weighted
from lab.localizer.function_recall import out_of_fold
from semantica.config import LocalizerTrainConfig
from semantica.localizer.dense import HEAD_RANKER_FEATURES, head_columns
from semantica.localizer.features import FUNCTION_FEATURES
from semantica.localizer.fit import fit_ranker, lambdarank_params

VARIANTS = {"ranker": (*FUNCTION_FEATURES, "head_rank"), "ranker + cosine": HEAD_RANKER_FEATURES}


def head_rows(sample: pl.DataFrame, heads: dict[int, list[str]], cosine_of: dict[int, dict[str, float]]) -> pl.DataFrame:
    """qid, key, head_rank (1 = first), cosine (NaN: no vector) and its rank among the head's cosines."""
    rows = [(qid, key, *columns) for qid, keys in heads.items()
            for key, columns in zip(keys, head_columns(keys, cosine_of.get(qid, {})))]
    head = pl.DataFrame(rows, schema={"qid": pl.Int64, "key": pl.Utf8, "head_rank": pl.Float32, "cosine": pl.Float32,
                                      "cosine_rank": pl.Float32}, orient="row")
    return sample.with_columns(pl.col("qid").cast(pl.Int64)).join(head, on=["qid", "key"], how="left")


def study(sample: pl.DataFrame, heads: dict[int, list[str]], cosine_of: dict[int, dict[str, float]], level: LevelData,
          repos: list[str], train: LocalizerTrainConfig, seed: int, save: str = "") -> dict:
    """Out-of-fold metrics of each variant (per repository and pooled), on the study's sample rows. `save`: also
    write the model with the cosine, trained on every repository, as a head ranker the query path loads."""
    frame = head_rows(sample, heads, cosine_of)
    in_head = frame["head_rank"].is_not_null().to_numpy()
    head = frame.filter(pl.col("head_rank").is_not_null()).with_columns(
        (-pl.col("head_rank")).alias("fusion"))  # training_rows' order: the head as the channel reads it
    folds = repo_folds(repos, train.folds, seed)
    shipped = frame["shipped"].to_numpy()
    ceiling = float(np.max(shipped)) + 1.0 if len(shipped) else 1.0
    out: dict = {"folds": folds, "rows": len(head), "variants": {}}
    for name, features in VARIANTS.items():
        scores = out_of_fold(head, features, train.train_function_depth, folds, seed, train)
        position = pl.DataFrame({"qid": head["qid"], "s": scores}).select(
            pl.col("s").rank("ordinal", descending=True).over("qid")).to_series().to_numpy()
        final = shipped.copy()
        final[in_head] = ceiling + len(shipped) - position  # the head re-ranked, above every row below it
        per_repo = {r: ranking_metrics(frame.filter(pl.col("repo") == r).select("qid", "label"),
                                       final[(frame["repo"] == r).to_numpy()], level.gold) for r in repos}
        out["variants"][name] = {"features": list(features), "per_repo": per_repo,
                                 "overall": weighted(per_repo, repos)}
        print(name, out["variants"][name]["overall"], flush=True)
    if save:
        fit_ranker(head, HEAD_RANKER_FEATURES, train.train_function_depth, train, seed).save_model(save)
        write_meta(Path(save).parent, out, train, seed)
    return out


def write_meta(directory: Path, result: dict, train: LocalizerTrainConfig, seed: int) -> None:
    """meta.json beside the saved head ranker: its features, seed and parameters, and the corpus queries per
    repository it trained on (the corpus guard reads `trained_on`)."""
    per_repo = result["variants"]["ranker + cosine"]["per_repo"]
    meta = {"features": list(HEAD_RANKER_FEATURES), "seed": seed, "params": lambdarank_params(train, seed) | {
        "num_rounds": train.num_rounds, "train_function_depth": train.train_function_depth,
        "tail_every": train.tail_every}, "trained_on": {r: m["queries"] for r, m in sorted(per_repo.items())}}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
