"""The corpus's held-out file metrics by query length (lab.localizer.length_slices), on models `train-localizer` wrote."""

from __future__ import annotations

import json

from jobs.cli import main
from lab.localizer.length_slices import length_slices
from tests.jobs.localizer.test_train_localizer import labelled_mirrors


def test_length_slices_reproduce_the_report_and_split_it(tmp_path, capsys):
    mirrors, corpus = labelled_mirrors(tmp_path)
    features, models = tmp_path / "features", tmp_path / "models"
    assert main(["mine-localizer", "--corpus", str(corpus), "--repos-dir", str(mirrors), "--out", str(features),
                 "--set", "localizer_mine.snapshot_every=4"]) == 0
    assert main(["train-localizer", "--features", str(features), "--out", str(models), "--folds", "2",
                 "--corpus", str(corpus), "--report", str(tmp_path / "report.json"),
                 "--set", "localizer_train.num_rounds=20", "--set", "localizer_train.min_data_in_leaf=2",
                 "--set", "localizer_train.num_threads=1"]) == 0
    capsys.readouterr()
    files = json.loads((tmp_path / "report.json").read_text())["levels"]["files"]

    whole = length_slices(features, models, corpus, [10**6])  # one slice: the report's held-out numbers again
    assert whole["[0,1000000)"]["learned"] == files["learned"] and whole["[0,1000000)"]["fusion"] == files["fusion"]
    blended = length_slices(features, models, corpus, [10**6], [0.0, 1.0])["proxy_blend"]
    assert blended["pooled"]["0.0"]["Acc@5"] == files["learned"]["Acc@5"]  # weight 0: the learned order itself
    assert set(blended["chosen"]) == {"acme/shop", "acme/store"}
    split = length_slices(features, models, corpus, [60])
    assert sum(row["learned"]["queries"] for row in split.values()) == files["learned"]["queries"]

