"""The reranker registry: a new reranker is one registered class plus its name in `rerank.order`."""

from __future__ import annotations

import pytest

from semantica.api import SearchRequest
from semantica.config import ConfigError
from serving.pipeline import SearchPipeline
from serving.rerankers.registry import RERANKERS, RerankInput, build_rerankers, register_reranker
from tests.conftest import make_config
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)


class ReverseReranker:
    """A toy reranker: the fused order, reversed (so its effect is unmistakable)."""

    name, optional, deployed = "reverse", True, False

    def __init__(self, stages) -> None:
        self.stages = stages

    def warm_up(self) -> None:
        pass

    def wanted(self, given: RerankInput) -> bool:
        return True

    def rerank(self, hits, given):
        return list(reversed(hits))


class BrokenReranker(ReverseReranker):
    name = "broken"

    def rerank(self, hits, given):
        raise RuntimeError("model file is gone")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("rerankers")
    make_tiny_index(root)
    register_reranker("reverse")(ReverseReranker)
    register_reranker("broken")(BrokenReranker)
    yield root
    RERANKERS.pop("reverse", None)
    RERANKERS.pop("broken", None)


def _ids(root, *order: str) -> tuple[list[str], list[dict]]:
    config = make_config(root, f"serve.feedback_dir={root / 'feedback'}", f"rerank.order={list(order)}")
    response = SearchPipeline(config).search(SearchRequest(query="price of an item in the cart", repos=[REPO_NAME],
                                                           k=20))
    return [h.chunk_id for h in response.hits], response.degraded


def test_a_registered_reranker_runs_in_the_configured_order(tiny):
    fused, _ = _ids(tiny)
    reversed_ids, degraded = _ids(tiny, "reverse")
    assert len(fused) >= 3 and not degraded
    assert reversed_ids == list(reversed(fused))
    twice, _ = _ids(tiny, "reverse", "reverse")
    assert twice == fused


def test_a_failing_optional_reranker_degrades_and_keeps_the_order(tiny):
    fused, _ = _ids(tiny)
    kept, degraded = _ids(tiny, "broken")
    assert kept == fused and [d["stage"] for d in degraded] == ["broken"] and "model file" in degraded[0]["error"]


def test_unknown_reranker_names_the_registered_ones():
    with pytest.raises(ConfigError, match="late_interaction"):
        build_rerankers(["nope"], None)
