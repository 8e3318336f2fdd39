"""The dense function channel on a real index of a real git repository, with a real encoder (the installed
MiniLM standing in for the fine-tuned one): the stage reads each function's source from the served snapshot,
re-ranks exactly as `DenseFusion` over that encoder's cosines says, encodes each source once per process, and
leaves the order alone when the channel is off; by default it runs the shipped fine-tuned encoder. With
`dense_at_index` the index stores every function's vector (the `function_vectors` kind): the query encodes none,
and a re-index encodes only the functions that changed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from pipelines.indexer import Indexer
from semantica.layout import IndexLayout
from semantica.runtime.encoder import Encoder, resolve_model_path
from semantica.snapshot import Snapshot
from semantica.stores.index_kinds.function_vectors import KIND as VECTORS_KIND
from semantica.stores.localizer.dense import DenseFusion, cosines, file_cosines, text_sha
from serving.localizer.stage import LearnedStage
from tests.conftest import make_config
from tests.dated_git import commit, one_commit_repo

pytestmark = pytest.mark.timeout(600)
REPO = "dense/shipping"
FILES = {
    "shipping/rates.py": 'def parcel_rate(weight_kg, zone):\n    """Price of a parcel by weight and zone."""\n'
                         '    return 4.5 + weight_kg * 1.2 * zone\n\n\ndef express_surcharge(rate):\n'
                         '    return rate * 0.25\n',
    "shipping/labels.py": 'def render_label(address, barcode):\n    lines = [address.name, address.street, address.city]\n'
                          '    return "\\n".join(lines) + "\\n" + barcode\n\n\ndef barcode_for(order_id):\n'
                          '    return "*" + str(order_id).zfill(10) + "*"\n',
    "shipping/tracking.py": 'class Tracker:\n    def __init__(self, carrier):\n        self.carrier = carrier\n'
                            '        self.events = []\n\n    def record(self, event):\n        self.events.append(event)\n\n'
                            '    def last_location(self):\n        return self.events[-1].location if self.events else None\n',
}
QUERY = "the printed shipping label shows the street before the name of the addressee"
MINILM = str(resolve_model_path(""))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("dense")
    repo = one_commit_repo(root / "repo", FILES)
    config = make_config(root, "localizer.learned_files=false",
                         "token_vectors.enabled=false", "localizer.dense_model=", private_cache=True)
    Indexer(config, progress=False).index(str(repo), REPO)
    return config, Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)


TODAY = [{"repo": REPO, "function": key} for key in (
    "shipping/rates.py::parcel_rate", "shipping/tracking.py::Tracker.record", "shipping/rates.py::express_surcharge",
    "shipping/labels.py::render_label", "shipping/labels.py::barcode_for")]


TODAY_FILES = [{"repo": REPO, "path": path}
               for path in ("shipping/tracking.py", "shipping/rates.py", "shipping/labels.py")]


def test_the_channel_reranks_the_blended_order_by_the_encoders_cosine(served):
    config, snapshot = served
    dense_config = dataclasses.replace(config.localizer, dense_model=MINILM, dense_depth=4, dense_rrf_k=1.0,
                                       dense_weight=2.0, dense_file_depth=3, dense_file_head=3,
                                       dense_file_rrf_k=1.0, dense_file_weight=2.0)
    stage, plain = LearnedStage(dense_config), LearnedStage(config.localizer)
    today = TODAY
    files_without, without = plain.apply(QUERY, [snapshot], TODAY_FILES, today)
    files_with, with_dense = stage.apply(QUERY, [snapshot], TODAY_FILES, today)
    order = [f["function"] for f in without]

    source = stage.function_source(snapshot)
    assert source("shipping/labels.py::render_label").startswith("def render_label(address, barcode):")
    assert source("shipping/nowhere.py::missing") is None
    encoder = Encoder(dataclasses.replace(config.encoder, model_path=MINILM))
    head = order[:4]
    vectors = encoder.encode([source(k) for k in head], dense_config.dense_max_length)
    query = encoder.encode([QUERY], dense_config.dense_query_max_length)[0]
    expected = DenseFusion(4, 1.0, 2.0).fuse(order, cosines(query, head, vectors))
    assert [f["function"] for f in with_dense] == expected
    assert expected != order and expected[4:] == order[4:]  # re-ranked within the depth only
    assert with_dense[0]["function"] == "shipping/labels.py::render_label"
    # the files: re-ranked by each one's best cosine among the top `dense_file_head` functions (3 of the 4)
    file_order = [f["path"] for f in files_without]
    best = file_cosines(head[:3], cosines(query, head, vectors))
    assert "shipping/labels.py" in best and set(best) == {key.partition("::")[0] for key in head[:3]}
    assert [f["path"] for f in files_with] == DenseFusion(3, 1.0, 2.0).fuse(file_order, best) != file_order
    assert files_with[0]["path"] == "shipping/labels.py"
    no_files = LearnedStage(dataclasses.replace(dense_config, dense_file_depth=0))
    files_off, functions_on = no_files.apply(QUERY, [snapshot], TODAY_FILES, today)
    assert [f["path"] for f in files_off] == file_order and functions_on == with_dense
    # files of a language outside `dense_file_languages` keep their place; their functions are still re-ranked
    untrusted = LearnedStage(dataclasses.replace(dense_config, dense_file_languages=["go"]))
    files_kept, functions_kept = untrusted.apply(QUERY, [snapshot], TODAY_FILES, today)
    assert [f["path"] for f in files_kept] == file_order and functions_kept == with_dense
    # a file head deeper than the function depth: its cosines are computed, the functions below the depth stay
    shallow = LearnedStage(dataclasses.replace(dense_config, dense_depth=2, dense_file_head=4))
    files_deep, functions_shallow = shallow.apply(QUERY, [snapshot], TODAY_FILES, today)
    cos = cosines(query, head, vectors)
    assert [f["function"] for f in functions_shallow] == DenseFusion(2, 1.0, 2.0).fuse(order, cos)
    assert [f["path"] for f in files_deep] == DenseFusion(3, 1.0, 2.0).fuse(file_order, file_cosines(head, cos))

    cached = len(stage.dense._vectors)
    stage.apply(QUERY + " again", [snapshot], [], today)
    assert len(stage.dense._vectors) == cached == 4  # each source encoded once, whatever the query


def test_off_it_stores_nothing_and_on_by_default_it_runs_the_shipped_encoder(served, tmp_path):
    config, snapshot = served
    assert config.localizer.dense_model == "" and LearnedStage(config.localizer).dense is None
    assert snapshot.index(VECTORS_KIND) is None and "function_vectors" not in snapshot.manifest.counts
    default = make_config(tmp_path).localizer
    channel = LearnedStage(default).dense
    assert default.dense_model == "models/encoder-commits-v3" and channel is not None
    assert channel.encoder_config.model_id == "encoder-commits-v3" and channel.file_fusion is not None
    assert (Path(channel.encoder_config.model_path) / "model.safetensors").is_file()  # shipped in the checkout


def test_vectors_stored_at_index_time_spare_the_query_and_the_next_build(tmp_path):
    repo = one_commit_repo(tmp_path / "repo", FILES)
    config = make_config(tmp_path, "localizer.learned_files=false",
                         "token_vectors.enabled=false", f"localizer.dense_model={MINILM}", "localizer.dense_depth=4",
                         "localizer.dense_file_head=4", private_cache=True)
    indexer = Indexer(config, progress=False)
    indexer.index(str(repo), REPO)
    first = Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)
    stored = first.index(VECTORS_KIND)
    assert first.manifest.counts["function_vectors"] == first.manifest.counts["function_vectors_encoded"] == 7
    assert set(stored.rows) == set(LearnedStage(config.localizer).snapshot(first).function_index)

    stage, fresh = LearnedStage(config.localizer), LearnedStage(config.localizer)
    _, from_index = stage.apply(QUERY, [first], [], TODAY)
    assert len(stage.dense._vectors) == 0  # every head function's vector came from the index
    _, encoded_here = fresh.apply(QUERY, [type("Bare", (), {  # the same snapshot without its stored vectors
        "repo": first.repo, "snapshot_id": first.snapshot_id, "chunks_by_path": first.chunks_by_path,
        "file_lines": first.file_lines})()], [], TODAY)
    assert len(fresh.dense._vectors) == 4
    assert [f["function"] for f in from_index] == [f["function"] for f in encoded_here]

    commit(repo, {"shipping/rates.py": FILES["shipping/rates.py"] + "\n\ndef free_over(total):\n    return total > 50\n"},
           "free shipping", 1)
    indexer.index(str(repo), REPO)
    second = Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)
    assert second.manifest.counts["function_vectors"] == 8
    assert second.manifest.counts["function_vectors_encoded"] == 1  # only the new function
    assert np.array_equal(second.index(VECTORS_KIND).vector("shipping/labels.py::render_label"),
                          stored.vector("shipping/labels.py::render_label"))  # reused, not encoded again


def test_without_test_code_the_index_and_the_query_leave_test_functions_to_their_ranking_term(tmp_path):
    with_tests = {**FILES, "tests/test_rates.py": "def test_parcel_rate():\n    assert parcel_rate(1, 1) > 0\n"}
    repo = one_commit_repo(tmp_path / "repo", with_tests)
    config = make_config(tmp_path, "localizer.learned_files=false",
                         "token_vectors.enabled=false", f"localizer.dense_model={MINILM}", "localizer.dense_depth=8",
                         "localizer.dense_file_head=4", private_cache=True)
    Indexer(config, progress=False).index(str(repo), REPO)
    snapshot = Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)
    stored = snapshot.index(VECTORS_KIND)
    assert snapshot.manifest.counts["function_vectors"] == 7  # the seven functions outside tests/
    assert "tests/test_rates.py::test_parcel_rate" not in stored.rows

    today = [{"repo": REPO, "function": "tests/test_rates.py::test_parcel_rate"}, *TODAY]
    bare = type("Bare", (), {"repo": snapshot.repo, "snapshot_id": snapshot.snapshot_id,
                             "chunks_by_path": snapshot.chunks_by_path, "file_lines": snapshot.file_lines})()
    stage, from_index = LearnedStage(config.localizer), LearnedStage(config.localizer)
    _, fused = stage.apply(QUERY, [bare], [], today)
    test_text = stage.function_source(bare)("tests/test_rates.py::test_parcel_rate")
    assert test_text.startswith("def test_parcel_rate():")
    assert len(stage.dense._vectors) == 7 and text_sha(test_text) not in stage.dense._vectors  # never encoded
    _, fused_stored = from_index.apply(QUERY, [snapshot], [], today)
    assert len(from_index.dense._vectors) == 0 and fused_stored == fused  # the stored vectors are the same set


def test_a_channel_model_that_cannot_load_degrades_the_localizer_not_the_search(served, tmp_path):
    """The channel's query pass begins after retrieval; a model it cannot load must not fail the search from there:
    the answer comes back with the localizer in `degraded`, the retrievers' hits intact."""
    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    config, _ = served
    broken = dataclasses.replace(config, localizer=dataclasses.replace(
        config.localizer, dense_model=str(tmp_path / "no-such-model")))
    response = SearchPipeline(broken).search(SearchRequest(QUERY, repos=[REPO], k=3))
    assert response.hits
    assert [entry for entry in response.degraded if entry.get("stage") == "localizer"
            and "no-such-model" in entry.get("error", "")], response.degraded
