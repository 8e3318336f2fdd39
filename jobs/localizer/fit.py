"""Fitting one LightGBM LambdaRank localizer model from candidate rows: `semantica train-localizer`
(`train.py`, the shipped models) and the lab's studies learn from the same rows with the same parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from semantica.config import LocalizerTrainConfig


def training_rows(frame: pl.DataFrame, depth: int, tail_every: int) -> pl.DataFrame:
    """Each query's top `depth` candidates by fixed fusion and every `tail_every`-th below them, whatever
    their labels; queries left without a positive are dropped (they teach a ranker nothing)."""
    rank = pl.col("fusion").rank("ordinal", descending=True).over("qid")
    frame = frame.filter((rank <= depth) | ((rank - depth) % max(1, tail_every) == 0))
    positive = frame.group_by("qid").agg(pl.col("label").max().alias("has")).filter(pl.col("has") > 0)["qid"]
    return frame.filter(pl.col("qid").is_in(positive.implode()))


def lambdarank_params(config: LocalizerTrainConfig, seed: int) -> dict[str, Any]:
    c = config
    return {"objective": "lambdarank", "metric": "ndcg", "eval_at": list(c.eval_at),
            "learning_rate": c.learning_rate, "num_leaves": c.num_leaves, "min_data_in_leaf": c.min_data_in_leaf,
            "feature_fraction": c.feature_fraction, "bagging_fraction": c.bagging_fraction,
            "bagging_freq": c.bagging_freq, "num_threads": c.num_threads, "seed": seed,
            "deterministic": True, "force_row_wise": True, "verbosity": -1}


def fit_ranker(frame: pl.DataFrame, features: Sequence[str], depth: int, config: LocalizerTrainConfig,
               seed: int) -> Any:
    """A `lightgbm.Booster` trained on each query's top `depth` candidates by fixed fusion and every
    `tail_every`-th candidate below them, labels as they fall: keeping the deep positives alone would teach
    "deep means gold". `frame`: qid, label, fusion and the feature columns, sorted by qid."""
    import lightgbm as lgb  # imports pandas: only where a model is trained

    frame = training_rows(frame, depth, config.tail_every)
    groups = frame.group_by("qid", maintain_order=True).len()["len"].to_numpy()
    data = lgb.Dataset(frame.select(features).to_numpy(), label=frame["label"].to_numpy(), group=groups,
                       feature_name=list(features), free_raw_data=True)
    return lgb.train(lambdarank_params(config, seed), data, num_boost_round=config.num_rounds)
