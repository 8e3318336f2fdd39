"""The snapshot decides its encoder: serving embeds queries with the model the snapshot was built with."""

from __future__ import annotations

import pytest

from semantica.api import SearchRequest
from semantica.runtime.encoder import resolve_model_path
from serving.pipeline import SearchPipeline
from tests.conftest import make_config
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)


def _search(root):
    """A pipeline with the DEFAULT encoder settings over the index built under `root`."""
    pipeline = SearchPipeline(make_config(root, f"serve.feedback_dir={root / 'feedback'}"))
    return pipeline, pipeline.search(SearchRequest(query="price of one item", repos=[REPO_NAME], k=5,
                                                   late_interaction=False))


def test_snapshot_built_with_another_checkpoint_loads_that_checkpoint(tmp_path):
    checkpoint = resolve_model_path("")  # a checkpoint directory this machine has, under another model id
    make_tiny_index(tmp_path, "encoder.model_id=team/minilm-copy", f"encoder.model_path={checkpoint}")
    pipeline, response = _search(tmp_path)
    assert not response.degraded and response.hits
    assert pipeline.snapshots.get(REPO_NAME).manifest.model_path == str(checkpoint.resolve())


def test_snapshot_of_an_unavailable_encoder_is_refused_not_mixed(tmp_path):
    make_tiny_index(tmp_path, "encoder.model_id=someone/else")  # weights this server cannot map to that id
    _, response = _search(tmp_path)
    degraded = {d["stage"]: d["error"] for d in response.degraded}
    assert "vector" in degraded and "someone/else" in degraded["vector"] and "re-index" in degraded["vector"]
    assert response.hits  # lexical, symbol and graph still answer
