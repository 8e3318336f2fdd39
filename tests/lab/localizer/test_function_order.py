"""The function order's corpus search: it re-scores mined candidates with the query path's formula, and each
repository is ranked by the setting the other repositories chose."""

from __future__ import annotations

from jobs.cli import main
from lab.localizer.function_order import search
from semantica.config import load_config
from tests.jobs.localizer.test_train_localizer import labelled_mirrors


def test_corpus_search_rescores_what_the_miner_wrote_and_chooses_leaving_each_repository_out(tmp_path):
    mirrors, corpus = labelled_mirrors(tmp_path)
    features = tmp_path / "features"
    assert main(["mine-localizer", "--corpus", str(corpus), "--repos-dir", str(mirrors), "--out", str(features),
                 "--set", "localizer_mine.snapshot_every=4", "--set", "localizer.top_files=3"]) == 0
    loc = load_config(None, [], environ={}).localizer
    shipped = (loc.function_file_weight, loc.function_file_rrf_k, loc.function_name_boost)  # what the miner ran
    result = search(str(features), [1.0, 100.0], [60.0, 1.0], [0.0, 2.0], loc.test_factor, shipped)
    assert result["fusion_recompute_max_abs_diff"] < 1e-6  # the mined order is FunctionScore's at the shipped setting
    grid = {f"{w}/{k}/{b}" for w in (1.0, 100.0) for k in (60.0, 1.0) for b in (0.0, 2.0)}
    assert set(result["grid"]) == grid | {result["shipped"]}  # the grid and the shipped setting
    assert sum(result["loro"]["choices"].values()) == 2
    assert set(result["per_repo"]) == {"acme/shop", "acme/store"}
    for row in result["per_repo"].values():
        assert row["held_out"]["queries"] > 0 and row["chosen"] in result["grid"]
    # every commit message names its function (compute_<topic>): the name boost finds it first
    named = result["grid"]["1.0/60.0/2.0"]["overall"]
    assert named["Acc@1"] == 100.0 and named["Acc@1"] >= result["grid"]["1.0/60.0/0.0"]["overall"]["Acc@1"]
