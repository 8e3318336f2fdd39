"""A reranker plug-in that owns a real model: one class plus conf, run in process and as its own Serve
deployment, its score reported under its name in every hit's `scores`."""

from __future__ import annotations

import numpy as np
import pytest
from ray import serve

from semantica.api import SearchRequest
from semantica.config import load_config
from semantica.errors import kind_of
from semantica.runtime.encoder import shared_encoder
from serving.pipeline import SearchPipeline
from serving.ray.app import StageDeployment, build_graph, deployment_options
from serving.ray.remote import StageUnavailable, stage_deployments
from serving.rerankers.base import RerankInput, rescored
from serving.rerankers.registry import RERANKERS, register_reranker
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
QUERY = "price of an item in the cart"
NAME = "encoder_cosine"


class EncoderCosine:
    """Re-scores every hit by the cosine of the query and chunk embeddings of a bi-encoder it loads itself."""

    name, optional, deployed = NAME, True, True

    def __init__(self, stages) -> None:
        self.stages = stages
        self.model = None  # loaded by warm_up (a Serve replica) or the first request

    def warm_up(self) -> None:
        if self.model is None:
            self.model = self.stages.encoder_factory()

    def wanted(self, given: RerankInput) -> bool:
        return True

    def rerank(self, hits, given):
        self.warm_up()
        query = self.model.encode_query(given.request.query)
        cosine = self.model.encode([given.chunks[h.chunk_id].embedding_text() for h in hits]) @ query
        ordered = sorted(range(len(hits)), key=lambda i: (-float(cosine[i]), i))
        return [rescored(hits[i], NAME, float(cosine[i]), score=float(cosine[i])) for i in ordered]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    root = tmp_path_factory.mktemp("reranker-plugin")
    # ONNX Runtime: a text's vector does not depend on its batch, so the plug-in's batch and these one-text passes
    # give the same cosine to the sixth decimal (bf16 through OpenVINO moves it by ~1e-4)
    config = make_tiny_index(root, f"rerank.order=[{NAME}]", "encoder.runtime=onnx")
    register_reranker(NAME)(EncoderCosine)
    yield config
    RERANKERS.pop(NAME, None)


def _expected(config, hits) -> dict[str, float]:
    """The cosine of each hit, computed here with the same (shared) encoder."""
    encoder = shared_encoder(config.encoder)
    query = encoder.encode_query(QUERY)
    return {h["chunk_id"]: float(np.dot(encoder.encode([h["text"]])[0], query)) for h in hits}


def test_the_plugin_owns_its_model_and_reports_its_score(plugin):
    pipeline = SearchPipeline(plugin)
    stage = pipeline.stages.reranker(NAME)
    assert stage.model is None  # building the stage loads no model
    response = pipeline.search(SearchRequest(query=QUERY, repos=[REPO_NAME], k=20))
    assert stage.model is not None and not response.degraded and NAME in response.timings_ms
    chunks = pipeline.snapshots.get(REPO_NAME).chunk_by_id
    expected = _expected(plugin, [{"chunk_id": h.chunk_id, "text": chunks[h.chunk_id].embedding_text()}
                                  for h in response.hits])
    assert len(response.hits) >= 3
    for hit in response.hits:
        assert set(hit.scores) == {NAME} and hit.scores[NAME] == pytest.approx(expected[hit.chunk_id], abs=1e-5)
        assert hit.late_score is None and hit.cross_score is None
    assert [h.chunk_id for h in response.hits] == sorted(expected, key=lambda c: -expected[c])


def test_serve_gives_a_deployed_plugin_its_own_deployment(plugin):
    assert stage_deployments(plugin)["EncoderCosine"] == f"reranker:{NAME}"
    assert "LateInteraction" not in stage_deployments(plugin)  # only what rerank.order names is deployed
    assert "LateInteraction" in stage_deployments(load_config(None))
    local = SearchPipeline(plugin).search(SearchRequest(query=QUERY, repos=[REPO_NAME], k=20)).to_dict()
    handle = serve.run(build_graph(plugin, deployment_options(None)), _local_testing_mode=True)
    answer = handle.search.remote({"query": QUERY, "repos": [REPO_NAME], "k": 20}).result()
    assert not answer["degraded"] and NAME in answer["timings_ms"]
    assert [h["chunk_id"] for h in answer["hits"]] == [h["chunk_id"] for h in local["hits"]]
    for remote, here in zip(answer["hits"], local["hits"]):
        assert remote["scores"][NAME] == pytest.approx(here["scores"][NAME], abs=1e-6)


@serve.deployment
class UnreachableReranker(StageDeployment.func_or_class):
    def rerank(self, hits, given):
        raise ConnectionError("reranker replica unreachable")


def test_a_down_reranker_deployment_degrades_or_fails_as_the_plugin_says(plugin):
    broken = {"EncoderCosine": UnreachableReranker}
    handle = serve.run(build_graph(plugin, deployment_options(None), broken), _local_testing_mode=True)
    answer = handle.search.remote({"query": QUERY, "repos": [REPO_NAME], "k": 20}).result()
    assert [d["stage"] for d in answer["degraded"]] == [NAME] and "unreachable" in answer["degraded"][0]["error"]
    assert answer["hits"] and all(NAME not in h["scores"] for h in answer["hits"])
    EncoderCosine.optional = False  # a mandatory reranker that is down fails the request: 503
    try:
        handle = serve.run(build_graph(plugin, deployment_options(None), broken), _local_testing_mode=True)
        with pytest.raises(StageUnavailable) as info:
            handle.search.remote({"query": QUERY, "repos": [REPO_NAME], "k": 20}).result()
        assert kind_of(info.value).http_status == 503 and info.value.stage == "EncoderCosine"
    finally:
        EncoderCosine.optional = True
