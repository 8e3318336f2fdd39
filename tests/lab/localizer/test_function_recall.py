"""The function recall study: on a wide mine (every function of every file candidate), the fusion order
re-scores to what the miner wrote, the learned file order comes from file rankers that never saw the repository,
and a smaller `top_files` is a filter of the wide candidates."""

from __future__ import annotations

from pathlib import Path

import lightgbm as lgb
import numpy as np
import polars as pl
import pytest

from jobs.cli import main
from jobs.localizer.train import load_features
from lab.localizer.function_recall import candidate_mask, function_parts, ranker_study, search, study_inputs
from semantica.config import load_config, load_train_config
from semantica.stores.localizer.features import FUNCTION_FEATURES
from tests.jobs.localizer.test_train_localizer import labelled_mirrors

SMALL_TRAIN = ["localizer_train.num_rounds=10", "localizer_train.min_data_in_leaf=2", "localizer_train.num_threads=1",
               "localizer_train.folds=2"]


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> Path:
    """Two real repositories mined wide: every function of every file candidate, no cut."""
    root = tmp_path_factory.mktemp("wide")
    mirrors, corpus = labelled_mirrors(root)
    assert main(["mine-localizer", "--corpus", str(corpus), "--repos-dir", str(mirrors), "--out", str(root / "wide"),
                 "--set", "localizer_mine.snapshot_every=4", "--set", "localizer.top_files=100",
                 "--set", "localizer.max_function_candidates=100000"]) == 0
    return root / "wide"


def test_wide_mine_rescored_with_out_of_fold_file_order(wide):
    config, train = load_config(None, [], environ={}), load_train_config(None, SMALL_TRAIN, environ={}).localizer_train
    frame, parts, _, folds = study_inputs(str(wide), 13, train)
    assert sorted(map(tuple, folds)) == [("acme/shop",), ("acme/store",)]  # each repository held out once
    files = frame.select("qid", "path", "rank_fusion", "rank_learned").unique().drop_nulls()
    assert len(files) and (files["rank_learned"] >= 1).all()
    for column in ("rank_fusion", "rank_learned"):  # each a ranking of the query's files: one file per rank
        assert files.group_by("qid", column).len()["len"].max() == 1
    everything = candidate_mask(parts, "fusion", 100, 1.0)
    assert everything.all()  # the wide mine holds exactly the candidates of the largest top_files
    top1 = candidate_mask(parts, "learned", 1, 0.0)
    assert top1.sum() < len(top1)
    assert np.all((parts["learned"][top1] == 1) | (parts["lists"][top1] > 0))

    loc = config.localizer
    shipped = (loc.function_file_weight, loc.function_file_rrf_k, loc.function_name_boost, loc.top_files)
    result = search(str(wide), [1, 100], [1.0, 20.0], [0.0, 1.0], 13, shipped, train)
    assert result["fusion_recompute_max_abs_diff"] < 1e-6  # the mined order is FunctionScore's at the shipped setting
    assert set(result["grid"]) == {f"{o}/{t}/{k}/{b}" for o in ("fusion", "learned") for t in (1, 100)
                                   for k in (1.0, 20.0) for b in (0.0, 1.0)} | {result["shipped"]}
    assert sum(result["loro"]["choices"].values()) == 2
    for row in result["per_repo"].values():
        assert row["held_out"]["queries"] > 0 and row["chosen"] in result["grid"]


def test_function_ranker_study_saves_a_model_the_query_path_loads(wide, tmp_path):
    train = load_train_config(None, SMALL_TRAIN, environ={}).localizer_train
    frame, parts, level, folds = study_inputs(str(wide), 13, train)
    saved = tmp_path / "functions.txt"
    out = ranker_study(frame, parts, level, folds, ("learned", 1, 20.0, 1.0), 3, 13, train, str(saved))
    kept = int(candidate_mask(parts, "learned", 1, 1.0).sum())
    assert out["rows"] <= min(kept, 3 * frame["qid"].n_unique())  # the candidates, cut at 3 per query
    assert {"formula", "ranker", "ranker + learned file order"} <= set(out)
    model = lgb.Booster(model_file=str(saved))
    assert model.feature_name() == list(FUNCTION_FEATURES)  # the schema's columns: LocalizerModels accepts it


def test_equal_scores_are_broken_as_the_query_path_breaks_them(wide):
    data, _ = load_features(wide)
    functions = data["functions"].frame
    assert "body_score" in functions.columns and (functions["body_score"] >= 0).all()
    assert (functions["body_score"] > 0).any()  # the mine kept each candidate's body BM25 against its query
    ranks = functions.select("qid", pl.col("key").str.split("::").list.first().alias("path")).unique().with_columns(
        pl.lit(1).alias("rank_fusion"), pl.lit(1).alias("rank_learned"))
    by_name, _ = function_parts(functions, ranks, "name")
    by_body, _ = function_parts(functions, ranks, "body")
    for qid in by_name["qid"].unique().to_list()[:5]:
        keys = by_name.filter(pl.col("qid") == qid)["key"].to_list()
        assert keys == sorted(keys)
        body = by_body.filter(pl.col("qid") == qid)
        pairs = list(zip((-body["body_score"]).to_list(), body["key"].to_list()))
        assert pairs == sorted(pairs)
    with pytest.raises(ValueError, match="body_score"):
        function_parts(functions.drop("body_score"), ranks, "body")
