"""The encoder runtime bench's dense-channel mode reads what the `function_vectors` index kind encodes: the
snapshot's Python function sources, under the channel's own fp32 encoder."""

from __future__ import annotations

from jobs.bench.encoder_runtime import base_config, function_texts
from pipelines.indexer import Indexer
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

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


def test_the_channel_base_is_its_own_fp32_model_whatever_its_int8_setting(monkeypatch):
    index = base_config(False)
    for scales in ("", "text"):  # the variants set int8 themselves: the base stays the fp32 export either way
        monkeypatch.setenv("SEMANTICA__LOCALIZER__DENSE_INT8_SCALES", scales)
        channel = base_config(True)
        assert channel.model_id == "encoder-commits-v3" and channel.max_length == 256 and not channel.quantize_int8
        assert channel.model_path != index.model_path
