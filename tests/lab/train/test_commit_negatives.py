"""lab.train.commit_negatives: commit pairs mined before in-file negatives get the ones `mine-pairs` gives today."""

from __future__ import annotations

import polars as pl

from jobs.train.pairs import PairMiner, load_pairs
from lab.train import commit_negatives
from semantica.config import load_config, load_train_config


def test_commit_pairs_mined_without_negatives_get_the_ones_mining_gives_today(shop, tmp_path):
    path = str(shop / "acme+shop" / "repo")
    config = load_config(None, [], environ={})
    today = load_train_config(None, ["pairs.hard_negatives=0"], environ={}).pairs
    PairMiner(config, today, tmp_path / "today", progress=False, log=lambda _m: None).mine_repo(path, "acme/shop")
    before = load_train_config(None, ["pairs.hard_negatives=0", "pairs.commit_negatives=0"], environ={}).pairs
    PairMiner(config, before, tmp_path / "before", progress=False, log=lambda _m: None).mine_repo(path, "acme/shop")
    assert load_pairs(tmp_path / "before").filter(pl.col("kind") == "commit")["negative_keys"].to_list() == [[]]
    assert commit_negatives.main([str(tmp_path / "before"), str(tmp_path / "added"), "--repos-dir", str(shop)]) == 0
    added, expected = load_pairs(tmp_path / "added"), load_pairs(tmp_path / "today")
    assert added.sort("dedup_key").equals(expected.sort("dedup_key"))
    assert sorted(p.name for p in (tmp_path / "added" / "acme+shop").iterdir()) == sorted(
        p.name for p in (tmp_path / "today" / "acme+shop").iterdir())
